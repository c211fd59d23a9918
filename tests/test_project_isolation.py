"""Nothing crosses projects: every project-scoped route (API and UI), every method, called with the
credentials of another project, answers 404 and changes nothing."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, resolve

from arg_platform.models import AuditEvent
from ontology.releases import release_publish
from taxonomy.models import Cluster, Label, LabelIncompatibility, Policy, Role
from taxonomy.packs import pack_import, pack_read
from tests.taxonomy.test_packs import SMALL

pytestmark = pytest.mark.django_db


def _routes(patterns: list[Any], prefix: str = "") -> list[str]:
    out: list[str] = []
    for p in patterns:
        route = prefix + str(p.pattern)
        if isinstance(p, URLResolver):
            out.extend(_routes(p.url_patterns, route))
        elif isinstance(p, URLPattern) and "<slug:project>" in route:
            out.append(route)
    return out


def _concrete(route: str, values: dict[str, str]) -> str:
    route = route.replace("^", "").replace("$", "").replace("\\.", ".")
    route = re.sub(r"\(\?P<format>[^)]*\)", "", route)

    def fill(match: re.Match[str]) -> str:
        name = match.group(2) or match.group(3)
        return values.get(name, "1")

    route = re.sub(r"<(?:(\w+):)?(\w+)>|\(\?P<(\w+)>[^)]*\)", fill, route)
    return "/" + route.replace("//", "/")


@pytest.fixture
def two_projects(make_user: Any) -> dict[str, Any]:
    victim = pack_import(pack_read(SMALL)).project
    attacker_project = pack_import(pack_read(SMALL), project_slug="attacker").project
    outsider = make_user("mallory", "admin", attacker_project)
    victim_member = make_user("victor", "admin", victim)
    release_publish(project=victim, actor=None)  # so release and graph reads have something to leak
    inc = LabelIncompatibility.objects.filter(project=victim).first()
    return {
        "victim": victim,
        "attacker_project": attacker_project,
        "outsider": outsider,
        "victim_member": victim_member,
        "values": {
            "project": victim.slug,
            "label_id": "L00002",
            "key": "customer",
            "pk": str(inc.pk),
            "node_id": "N-invoice-download",
            "version": "1",
            "id": "1",
        },
    }


def _state(project: Any) -> tuple:
    return tuple(
        m.objects.filter(project=project).count()
        for m in (Cluster, Label, LabelIncompatibility, Policy, Role, AuditEvent)
    ) + (
        tuple(
            Label.objects.filter(project=project)
            .values_list("name", "status", "examples")
            .order_by("label_id")
        ),
    )


def test_every_project_route_is_closed_to_other_projects(two_projects, api_as, token_client, client):
    victim = two_projects["victim"]
    routes = sorted(set(_routes(get_resolver().url_patterns)))
    assert len(routes) >= 10, routes
    session = api_as(two_projects["outsider"])
    token = token_client(two_projects["attacker_project"])
    client.force_login(two_projects["outsider"])
    before = _state(victim)
    member = api_as(two_projects["victim_member"])
    assert member.get(f"/api/v1/projects/{victim.slug}/clusters/billing/").status_code == 200
    assert member.get(f"/api/v1/projects/{victim.slug}/typologies/quick/").status_code == 200
    assert member.get(f"/api/v1/projects/{victim.slug}/nodes/N-invoice-download/").status_code == 200
    assert member.get(f"/api/v1/projects/{victim.slug}/releases/1/").status_code == 200
    checked = 0
    paths = sorted(
        {
            _concrete(route, {**two_projects["values"], "key": key})
            for route in routes
            for key in ("billing", "quick", "customer")
        }
    )
    for path in paths:
        assert resolve(path).kwargs["project"] == victim.slug, path  # the probe really hits the route
        for caller in (session, token):
            for method in ("get", "post", "patch", "put", "delete"):
                resp = getattr(caller, method)(
                    path, {"name": "pwned", "key": "pwned", "cluster": "billing"}, format="json"
                )
                if caller is token and path.startswith("/p/"):
                    # a token is no UI session: the web pages send it to the login page
                    assert resp.status_code == 302 and resp["Location"].startswith("/accounts/login/"), path
                else:
                    assert resp.status_code in (404, 405), (method, path, resp.status_code)
                checked += 1
        for method in ("get", "post"):
            resp = getattr(client, method)(path, {"name": "pwned"})
            assert resp.status_code in (404, 405), (method, path, resp.status_code)
    assert _state(victim) == before
    assert checked >= 100


def test_the_same_routes_are_open_to_the_project_members(two_projects, api_as):
    resp = api_as(two_projects["victim_member"]).get(
        f"/api/v1/projects/{two_projects['victim'].slug}/labels/L00002/"
    )
    assert resp.status_code == 200
    assert resp.json()["name"] == "Download invoice"
