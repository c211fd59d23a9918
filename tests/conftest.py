"""Shared fixtures: projects, people with platform roles, API clients (session and token)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


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
