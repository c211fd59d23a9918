"""``POST /api/v1/memory`` and ``GET /api/v1/memory``: token and session callers, the memory capability,
the token's policy scopes, clear 4xx with field messages, and nothing crossing projects."""

from __future__ import annotations

from typing import Any

import pytest

from memory.models import EpisodicMemory, InfoUnit
from taxonomy.models import Role

pytestmark = pytest.mark.django_db

FACT = {
    "text": "Invoices are emailed to the billing contact on the 1st of every month.",
    "scope": "USER",
    "user_id": "u-1",
    "labels": ["L00001"],
    "session_id": "s-1",
}


@pytest.fixture
def customer_app(mem_released: Any, token_client: Any) -> Any:
    return token_client(mem_released, role=Role.objects.get(project=mem_released, key="customer"))


def test_a_client_app_writes_and_reads_memory(customer_app):
    created = customer_app.post("/api/v1/memory", FACT, format="json")
    again = customer_app.post(
        "/api/v1/memory",
        {
            **FACT,
            "text": "On the first day of each month the invoice is sent by email to the billing contact.",
        },
        format="json",
    )
    listed = customer_app.get("/api/v1/memory?user_id=u-1")
    ranked = customer_app.get("/api/v1/memory?user_id=u-1&q=when+are+invoices+sent&limit=5")

    assert created.status_code == 201, created.content
    body = created.json()
    assert body["registry"]["decision"] == "NEW"
    assert (
        body["registry"]["info_key"].startswith("L00001|")
        and body["registry"]["label_path_current"] == "Billing › Invoices"
    )
    assert body["memory"]["scope"] == "USER" and body["memory"]["source"] == "api"
    assert again.json()["registry"]["decision"] == "MATCH"
    assert again.json()["registry"]["unit_id"] == body["registry"]["unit_id"]
    assert [r["memory"]["id"] for r in listed.json()["results"]] == [
        again.json()["memory"]["id"],
        body["memory"]["id"],
    ]
    assert ranked.status_code == 200 and ranked.json()["count"] == 2
    assert {r["via"] for r in ranked.json()["results"]} == {"vector"}


def test_a_client_app_reads_only_its_users_and_global_memory(customer_app, mem_released):
    from memory.services import memory_write

    memory_write(project=mem_released, text="I prefer chat for invoices.", scope="USER", user_id="u-2")
    memory_write(project=mem_released, text="Acme is an enterprise customer.", scope="ORG", org_id="o-1")

    assert customer_app.get("/api/v1/memory?user_id=u-1").json()["count"] == 0
    assert customer_app.get("/api/v1/memory?org_id=o-1").json()["count"] == 0  # ORG is not in its policy
    assert customer_app.get("/api/v1/memory?user_id=u-2").json()["count"] == 1


@pytest.mark.parametrize(
    ("payload", "field", "rule"),
    [
        ({"scope": None}, "scope", "memory.scope_missing"),
        (
            {"scope": "ORG", "org_id": "o-1"},
            "scope",
            "memory.scope_not_allowed",
        ),  # customer policy: USER only
        ({"labels": ["L00042"]}, "labels", "memory.label_unknown"),
        ({"text": "x" * 2500}, "text", "memory.fact_size"),
        ({"user_id": ""}, "user_id", "memory.subject_missing"),
        ({"signal": "loud"}, "signal", "request.signal"),
    ],
)
def test_bad_input_is_a_clear_400_and_writes_nothing(customer_app, payload, field, rule):
    body = {k: v for k, v in {**FACT, **payload}.items() if v is not None}

    resp = customer_app.post("/api/v1/memory", body, format="json")

    assert resp.status_code == 400, resp.content
    assert rule in resp.json()["rules"]
    assert field in resp.json()["errors"]
    assert EpisodicMemory.objects.count() == 0


def test_pii_in_a_global_write_is_refused(mem_released, api_as, make_user):
    agent = make_user("agent-ann", "expert", mem_released)

    resp = api_as(agent).post(
        "/api/v1/memory?project=mem",
        {
            "text": "Escalations go to Maria Lopez on +44 20 7946 0958.",
            "scope": "GLOBAL",
            "labels": ["L00001"],
        },
        format="json",
    )

    assert resp.status_code == 400
    assert resp.json()["rules"] == ["memory.pii_in_global"]
    assert resp.json()["errors"]["text"][0].startswith(
        "a GLOBAL memory may not hold personal data (PERSON, PHONE"
    )
    assert EpisodicMemory.objects.count() == 0


def test_people_name_the_project_and_need_the_memory_capability(mem_released, api_as, make_user):
    expert = make_user("erin", "expert", mem_released)

    no_project = api_as(expert).get("/api/v1/memory")
    ok = api_as(expert).post(
        "/api/v1/memory?project=mem", {**FACT, "scope": "ORG", "org_id": "o-9"}, format="json"
    )

    assert no_project.status_code == 400 and no_project.json()["rules"] == ["request.project"]
    assert ok.status_code == 201 and ok.json()["memory"]["scope"] == "ORG"


def test_nothing_crosses_projects(customer_app, make_project, token_client, mem_released):
    customer_app.post("/api/v1/memory", FACT, format="json")
    other = token_client(make_project("globex"))

    assert other.get("/api/v1/memory?user_id=u-1").json()["count"] == 0
    assert other.get("/api/v1/memory?project=mem&user_id=u-1").json()["count"] == 0
    assert other.post("/api/v1/memory", FACT, format="json").status_code == 400  # L00001 is not globex's
    assert InfoUnit.objects.filter(project=mem_released).count() == 1
    assert EpisodicMemory.objects.count() == 1


def test_anonymous_callers_get_401(client):
    assert client.post("/api/v1/memory?project=mem", FACT, content_type="application/json").status_code in (
        401,
        403,
    )
