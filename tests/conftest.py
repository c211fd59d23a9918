"""Shared fixtures: projects, people with platform roles, API clients (session and token).

With ``ARG_GRAPH_BACKEND=neo4j`` (the Neo4j pass of ``make test``, under ``scripts/with-neo4j.sh``) the
graph store is a real Neo4j: its schema is created once per session, and every test starts on an
empty Neo4j database, as it starts on an empty Django test database.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

NEO4J_BACKEND = os.environ.get("ARG_GRAPH_BACKEND") == "neo4j"


@pytest.fixture(scope="session")
def _neo4j_schema(django_db_setup: Any, django_db_blocker: Any) -> None:
    from ontology.store import get_graph_store

    get_graph_store().init_schema()  # type: ignore[attr-defined]


@pytest.fixture(autouse=True)
def _neo4j_graph_per_test(request: Any, django_db_blocker: Any) -> Iterator[None]:
    """On the neo4j backend, Neo4j follows the Django test database: each test starts with the graphs of
    the projects that exist when it starts (those of module- or session-scoped fixtures) and no other,
    and those graphs are put back afterwards if the test changed them."""
    if not NEO4J_BACKEND:
        yield
        return
    from ontology.store import get_graph_store
    from projects.models import Project
    from tests.neo4j_server import neo4j_keep_only

    request.getfixturevalue("_neo4j_schema")
    store = get_graph_store()
    with django_db_blocker.unblock():
        kept = set(Project.objects.values_list("pk", flat=True))
    neo4j_keep_only(store, kept)
    saved = {pk: store.export_graph(pk) for pk in kept}
    yield
    neo4j_keep_only(store, kept)
    for pk, graph in saved.items():
        if store.export_graph(pk) != graph:
            store._write(store._replace, pk, graph)


@pytest.fixture
def make_project(db: Any) -> Callable[..., Any]:
    from projects.services import project_create

    def make(slug: str = "acme", name: str | None = None) -> Any:
        return project_create(slug=slug, name=name or slug.title())

    return make


@pytest.fixture
def project(make_project: Callable[..., Any]) -> Any:
    return make_project("acme", "Acme support")


@pytest.fixture
def other_project(make_project: Callable[..., Any]) -> Any:
    return make_project("globex", "Globex support")


@pytest.fixture
def make_user(db: Any) -> Callable[..., Any]:
    from django.contrib.auth import get_user_model

    from projects.services import membership_set

    def make(
        username: str, role: str | None = None, project: Any = None, password: str = "pw-Secret-123"
    ) -> Any:
        user = get_user_model().objects.create_user(username=username, password=password)
        if role and project is not None:
            membership_set(project=project, user=user, role=role)
        return user

    return make


@pytest.fixture
def expert(make_user: Callable[..., Any], project: Any) -> Any:
    return make_user("erin-expert", "expert", project)


@pytest.fixture
def reviewer(make_user: Callable[..., Any], project: Any) -> Any:
    return make_user("rob-reviewer", "reviewer", project)


@pytest.fixture
def admin_member(make_user: Callable[..., Any], project: Any) -> Any:
    return make_user("ada-admin", "admin", project)


@pytest.fixture
def api_as() -> Callable[[Any], Any]:
    """An APIClient logged in (session) as ``user``."""
    from rest_framework.test import APIClient

    def make(user: Any) -> Any:
        client = APIClient()
        client.force_login(user)
        return client

    return make


@pytest.fixture
def token_client(db: Any) -> Callable[..., Any]:
    """An APIClient carrying a client-app token of ``project`` (optionally with a policy role)."""
    from rest_framework.test import APIClient

    from projects.services import api_token_create

    def make(project: Any, role: Any = None, name: str = "client-app") -> Any:
        _, key = api_token_create(project=project, name=name, role=role)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
        client.token_key = key
        return client

    return make


@pytest.fixture
def run_jobs(monkeypatch: Any, django_capture_on_commit_callbacks: Any) -> Callable[[], Any]:
    """``with run_jobs(): client.post(...)``: the jobs the request queues run in this process when its
    transaction commits (Celery eager), as a worker would run them after the answer. The worker path
    itself (broker, retries, a killed worker) is tested in tests/faults and tests/review/test_loop_tasks."""
    from arg_platform.celery import app

    monkeypatch.setitem(app.conf, "task_always_eager", True)
    return lambda: django_capture_on_commit_callbacks(execute=True)


@pytest.fixture
def bench_app(settings: Any) -> None:
    """The bench app installed, as ``bench.settings`` installs it for ``manage.py bench_*``."""
    settings.INSTALLED_APPS = [*settings.INSTALLED_APPS, "bench.apps.BenchConfig"]
