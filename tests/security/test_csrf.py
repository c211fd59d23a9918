"""CSRF: every form POST of the web UI and every session-authenticated API write needs the token.

A real client with ``enforce_csrf_checks=True`` (what a browser gets) posts to every UI route that
takes POST — walked from the URL resolver through the matrix — first without the token (403, nothing
changes), then with the token from a rendered page (the request goes through). Token-authenticated API
calls carry no cookie and need no CSRF token.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import transaction
from django.test import Client
from rest_framework.test import APIClient

from arg_platform.models import AuditEvent
from taxonomy.models import Cluster
from tests.security.matrix import BODIES, EXPECTED, KWARGS, all_routes, concrete

pytestmark = pytest.mark.django_db


def _ui_post_routes(world: dict[str, Any]) -> list[tuple[str, str]]:
    values = {
        "project": world["project"].slug,
        "label_id": "L00002",
        "key": "billing",
        "pk": str(world["incompatibility"].pk),
        "node_id": "N-invoice-download",
        "version": "1",
    }
    out = []
    for route, name in all_routes():
        if name.startswith("admin:") or "POST" not in EXPECTED.get(name, {}):
            continue
        path = concrete(route, {**values, **KWARGS.get(name, {})})
        if not path.startswith("/api/"):
            out.append((path, name))
    return out


def _csrf_token(client: Client, project_slug: str) -> str:
    page = client.get(f"/p/{project_slug}/taxonomy/")
    assert page.status_code == 200
    return (
        page.cookies["csrftoken"].value if "csrftoken" in page.cookies else client.cookies["csrftoken"].value
    )


def test_every_ui_form_post_is_refused_without_the_csrf_token(world):
    client = Client(enforce_csrf_checks=True)
    client.force_login(world["people"]["admin"])
    routes = _ui_post_routes(world)
    assert len(routes) >= 30, routes
    before = (Cluster.objects.count(), AuditEvent.objects.count())
    refused = []
    for path, name in routes:
        response = client.post(path, BODIES.get(name, {"name": "csrf-probe", "key": "csrf-probe"}))
        if response.status_code == 403 and b"CSRF" in response.content:
            refused.append(name)
    assert sorted(refused) == sorted(name for _, name in routes)
    assert (Cluster.objects.count(), AuditEvent.objects.count()) == before


def test_the_same_posts_go_through_with_the_token(world):
    client = Client(enforce_csrf_checks=True)
    client.force_login(world["people"]["admin"])
    token = _csrf_token(client, world["project"].slug)
    blocked = []
    for path, name in _ui_post_routes(world):
        if name == "logout":
            continue  # would end this client's session; covered by the login check below
        with transaction.atomic():
            response = client.post(path, BODIES.get(name, {}), HTTP_X_CSRFTOKEN=token)
            transaction.set_rollback(True)
        if response.status_code == 403:
            blocked.append((name, response.content[:120]))
    assert blocked == []


def test_cluster_form_creates_only_with_the_token(world):
    client = Client(enforce_csrf_checks=True)
    client.force_login(world["people"]["expert"])
    path = f"/p/{world['project'].slug}/taxonomy/clusters/new/"
    form = {"key": "refunds", "name": "Refunds", "description": ""}
    assert client.post(path, form).status_code == 403
    assert not Cluster.objects.filter(key="refunds").exists()
    token = _csrf_token(client, world["project"].slug)
    response = client.post(path, {**form, "csrfmiddlewaretoken": token})
    assert response.status_code in (200, 302)
    assert Cluster.objects.filter(project=world["project"], key="refunds").exists()


def test_sign_in_form_needs_the_token():
    client = Client(enforce_csrf_checks=True)
    response = client.post("/accounts/login/", {"username": "x", "password": "y"})
    assert response.status_code == 403 and b"CSRF" in response.content


def test_session_api_writes_need_the_token_but_api_tokens_do_not(world):
    path = f"/api/v1/projects/{world['project'].slug}/clusters/"
    body = {"key": "refunds", "name": "Refunds"}
    session = APIClient(enforce_csrf_checks=True)
    session.force_login(world["people"]["expert"])
    refused = session.post(path, body, format="json")
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["detail"]
    assert not Cluster.objects.filter(key="refunds").exists()
    from projects.services import api_token_create

    _, key = api_token_create(project=world["project"], name="expert-token", user=world["people"]["expert"])
    bearer = APIClient(enforce_csrf_checks=True)
    bearer.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    created = bearer.post(path, body, format="json")
    assert created.status_code == 201, created.content
    assert Cluster.objects.filter(project=world["project"], key="refunds").exists()
