"""Graph store down: a clear 503 (not a 500), the hot path keeps serving from its snapshot, and the
platform recovers by itself when the store comes back — no restart."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from neo4j.exceptions import ServiceUnavailable

import ontology.store as store_module
from ontology.store import get_graph_store
from ontology.store.neo4j_backend import Neo4jGraphStore

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


class _Unreachable:
    """Stands for the configured store while its server is down: every call raises what the Neo4j
    driver raises when it cannot connect."""

    backend = "neo4j"

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            raise ServiceUnavailable("Couldn't connect to neo4j:7687 (reason: Connection refused)")

        return call

    def health(self) -> Any:
        from ontology.store import StoreHealth

        return StoreHealth("neo4j", False, "ServiceUnavailable: Couldn't connect to neo4j:7687")


@pytest.fixture
def store_outage(monkeypatch):
    real = get_graph_store()
    outage = {"down": True}

    class Switch:
        def __getattr__(self, name: str) -> Any:
            return getattr(_Unreachable() if outage["down"] else real, name)

    monkeypatch.setattr(store_module, "_store", Switch())
    return outage


def test_graph_reads_answer_503_with_a_clear_message_then_recover(published, store_outage, api_as, make_user):
    project = published["project"]
    expert = make_user("gina", "expert", project)
    api = api_as(expert)
    path = f"/api/v1/projects/{project.slug}/nodes/?source=draft"

    down = api.get(path)
    assert down.status_code == 503
    assert down["Retry-After"] == "5"
    body = down.json()
    assert body["code"] == "graph_store_unavailable"
    assert body["detail"] == "the graph store (Neo4j) is unreachable; retry in a few seconds"
    assert body["request_id"] == down["X-Request-ID"]

    page = Client()
    page.force_login(expert)
    html = page.get(f"/p/{project.slug}/graph/nodes/N-invoice-download/?source=draft")
    assert html.status_code == 503
    assert b"The graph store (neo4j) is unreachable" in html.content

    operator = Client()
    operator.force_login(get_user_model().objects.create_user("operator", is_staff=True))
    health = operator.get("/healthz")
    assert health.status_code == 503 and health.json()["failing"] == ["graph_store"]

    store_outage["down"] = False  # the server is back: same process, no restart
    assert api.get(path).status_code == 200
    assert Client().get("/healthz").status_code == 200


def test_inference_keeps_serving_from_the_pinned_release_while_the_store_is_down(published, store_outage):
    response = published["client"].post("/api/v1/infer", {"prompt": "where is my invoice"}, format="json")
    assert response.status_code == 200
    assert response.json()["release"]["version"] == 1


def test_a_real_driver_against_a_dead_server_gives_503_within_the_retry_budget(
    published, monkeypatch, api_as, make_user
):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dead = Neo4jGraphStore(
        uri=f"neo4j://127.0.0.1:{port}", user="neo4j", password="x", database="neo4j", max_retry_s=0.5
    )
    monkeypatch.setattr(store_module, "_store", dead)
    project = published["project"]
    api = api_as(make_user("gus", "expert", project))
    started = time.monotonic()
    response = api.get(f"/api/v1/projects/{project.slug}/nodes/?source=draft")
    elapsed = time.monotonic() - started
    dead.close()
    assert response.status_code == 503
    assert response.json()["code"] == "graph_store_unavailable"
    assert elapsed < 10


def _server(command: str, home: Path, port: int) -> dict[str, str]:
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "neo4j-server.sh"), command, str(home)],
        env={**os.environ, "ARG_NEO4J_PORT": str(port)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return dict(re.findall(r"export (NEO4J_\w+)=(\S+)", done.stdout))


@pytest.mark.neo4j
def test_a_real_neo4j_going_down_and_coming_back(
    tmp_path, monkeypatch, settings, token_client, api_as, make_user
):
    """The drill on a real server: Neo4j stops under a running platform — draft reads answer 503 within
    the retry budget, /healthz names the graph store, inference keeps serving its pinned release — and
    when it comes back on the same address, the same process recovers without a restart."""
    from ontology.releases import release_publish
    from taxonomy.models import Role
    from taxonomy.packs import pack_import, pack_read

    from .conftest import SMALL_PACK

    home = tmp_path / "neo4j"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    connection = _server("start", home, port)
    store = Neo4jGraphStore(
        uri=connection["NEO4J_URI"],
        user=connection["NEO4J_USER"],
        password=connection["NEO4J_PASSWORD"],
        database=connection["NEO4J_DATABASE"],
        max_retry_s=0.5,
    )
    try:
        store.init_schema()
        settings.GRAPH_BACKEND = "neo4j"
        monkeypatch.setattr(store_module, "_store", store)
        monkeypatch.setattr(store_module, "_store_pid", os.getpid())
        project = pack_import(pack_read(SMALL_PACK)).project
        release_publish(project=project, actor=None)
        client = token_client(project, role=Role.objects.get(project=project, key="customer"))
        api = api_as(make_user("gia", "expert", project))
        path = f"/api/v1/projects/{project.slug}/nodes/?source=draft"
        assert api.get(path).status_code == 200

        _server("halt", home, port)
        started = time.monotonic()
        down = api.get(path)
        elapsed = time.monotonic() - started
        assert down.status_code == 503 and down.json()["code"] == "graph_store_unavailable"
        assert elapsed < 10
        operator = Client()
        operator.force_login(get_user_model().objects.create_user("operator", is_staff=True))
        health = operator.get("/healthz")
        assert health.status_code == 503 and health.json()["failing"] == ["graph_store"]
        served = client.post("/api/v1/infer", {"prompt": "where is my invoice"}, format="json")
        assert served.status_code == 200 and served.json()["release"]["version"] == 1

        _server("resume", home, port)
        back = api.get(path)
        assert back.status_code == 200 and back.json()["count"] > 0  # the same graph, same process
        assert Client().get("/healthz").status_code == 200
    finally:
        store.close()
        subprocess.run(["bash", str(ROOT / "scripts" / "neo4j-server.sh"), "stop", str(home)], timeout=120)
