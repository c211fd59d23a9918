"""Ontology API v1: clients read the active release, experts edit the draft, admins publish."""

from __future__ import annotations

import pytest

from taxonomy.packs import pack_import, pack_read
from tests.taxonomy.test_packs import SMALL

pytestmark = pytest.mark.django_db
BASE = "/api/v1/projects/tiny/"


@pytest.fixture
def tiny():
    return pack_import(pack_read(SMALL)).project


@pytest.fixture
def people(tiny, make_user):
    return {role: make_user(f"{role}-1", role, tiny) for role in ("expert", "reviewer", "admin")}


def publish(api, run_jobs, **data):
    """POST releases/ (202 + the job), the job run as a worker would, then the job's state from its URL."""
    with run_jobs():
        resp = api.post(BASE + "releases/", data, format="json")
    assert resp.status_code == 202, resp.content
    assert resp.json()["status"] == "QUEUED" and resp["Location"] == resp.json()["url"]
    job = api.get(resp["Location"])
    assert job.status_code == 200
    return job.json()


def test_clients_read_only_the_active_release(tiny, people, token_client, api_as, run_jobs):
    client = token_client(tiny)
    resp = client.get(BASE + "nodes/")
    assert resp.status_code == 404
    assert "no active release" in resp.json()["detail"]
    assert client.get(BASE + "nodes/?source=draft").status_code == 403
    job = publish(api_as(people["admin"]), run_jobs, notes="first")
    assert (job["status"], job["result"]["release"], job["result"]["published"]) == ("SUCCEEDED", 1, True)
    body = client.get(BASE + "nodes/?type=Action").json()
    assert body["count"] == 1
    assert body["results"][0]["node_id"] == "N-resend-invoice"
    assert body["results"][0]["parameters"][0]["name"] == "invoice_number"
    assert client.get(BASE + "nodes/?label=L00002").json()["count"] == 2
    assert client.get(BASE + "nodes/?search=download").json()["results"][0]["node_id"] == "N-invoice-download"
    hood = client.get(BASE + "nodes/N-resend-invoice/neighbourhood/?direction=in").json()
    assert hood["source"] == "release v1"
    assert [n["node_id"] for n in hood["nodes"]] == ["N-resend-invoice", "N-invoice-download"]
    assert hood["edges"] == [
        {
            "source": "N-invoice-download",
            "target": "N-resend-invoice",
            "type": "LEADS_TO",
            "weight": 0.7,
            "semantics": "",
        }
    ]
    assert client.get(BASE + "nodes/N-nope/").status_code == 404


def test_expert_edits_go_to_the_draft_until_an_admin_publishes(tiny, people, api_as, token_client, run_jobs):
    admin, expert = api_as(people["admin"]), api_as(people["expert"])
    publish(admin, run_jobs)
    node = {
        "node_id": "N-refund",
        "type": "Action",
        "title": "Refund an invoice",
        "chunk": "Refunds the amount.",
        "risk": "high",
        "labels": ["L00002"],
        "clusters": ["billing"],
        "handler": "python:billing.refund",
        "parameters": [{"name": "invoice_number", "required": True}],
    }
    resp = expert.post(BASE + "nodes/", node, format="json")
    assert resp.status_code == 201, resp.content
    assert (
        expert.post(
            BASE + "edges/",
            {"source": "N-invoice-download", "target": "N-refund", "type": "LEADS_TO", "weight": 0.4},
            format="json",
        ).status_code
        == 201
    )
    assert expert.get(BASE + "nodes/N-refund/?source=draft").json()["risk"] == "high"
    client = token_client(tiny)
    assert client.get(BASE + "nodes/N-refund/").status_code == 404  # not in the active release
    assert expert.post(BASE + "releases/", {}, format="json").status_code == 403  # only admins publish
    assert publish(admin, run_jobs, notes="refunds")["result"]["release"] == 2
    assert client.get(BASE + "nodes/N-refund/").json()["title"] == "Refund an invoice"
    diff = client.get(BASE + "releases/2/diff/").json()
    assert diff["nodes_added"] == ["N-refund"]
    assert diff["edges_added"] == [["N-invoice-download", "N-refund", "LEADS_TO"]]
    assert admin.post(BASE + "releases/1/activate/", {"reason": "rollback"}, format="json").status_code == 200
    releases = client.get(BASE + "releases/").json()
    assert [(r["version"], r["is_active"]) for r in releases] == [(2, False), (1, True)]


@pytest.mark.parametrize(
    "payload,rule",
    [
        ({"node_id": "N-x", "type": "Info", "title": "X", "labels": ["L00099"]}, "graph.attach_label_exists"),
        (
            {"node_id": "N-x", "type": "Info", "title": "X", "labels": ["L00004"]},
            "graph.attach_label_deprecated",
        ),
        ({"node_id": "N-oos", "type": "Info", "title": "X"}, "graph.node_unique"),
        ({"node_id": "bad id!", "type": "Info", "title": "X"}, "graph.node_id_format"),
    ],
)
def test_bad_nodes_are_refused_and_nothing_is_written(tiny, people, api_as, payload, rule):
    from ontology.store import get_graph_store

    before = get_graph_store().counts(tiny.pk)
    resp = api_as(people["expert"]).post(BASE + "nodes/", payload, format="json")
    assert resp.status_code == 400, resp.content
    assert rule in resp.json()["rules"]
    assert get_graph_store().counts(tiny.pk) == before


@pytest.mark.parametrize(
    "edge,rule",
    [
        ({"source": "N-oos", "target": "N-oos", "type": "RELATED_TO"}, "graph.self_loop"),
        ({"source": "N-oos", "target": "N-ghost", "type": "RELATED_TO"}, "graph.edge_endpoint_exists"),
        (
            {"source": "N-invoice-download", "target": "N-resend-invoice", "type": "LEADS_TO"},
            "graph.edge_unique",
        ),
    ],
)
def test_bad_edges_are_refused(tiny, people, api_as, edge, rule):
    resp = api_as(people["expert"]).post(BASE + "edges/", edge, format="json")
    assert resp.status_code == 400
    assert rule in resp.json()["rules"]


def test_edge_update_delete_and_node_lifecycle(tiny, people, api_as):
    expert = api_as(people["expert"])
    key = {"source": "N-invoice-download", "target": "N-resend-invoice", "type": "LEADS_TO"}
    resp = expert.patch(BASE + "edges/", {**key, "weight": -0.5, "semantics": "inhibited"}, format="json")
    assert resp.status_code == 200 and resp.json()["weight"] == -0.5
    assert (
        expert.post(
            BASE + "nodes/N-resend-invoice/status/", {"status": "REMOVED", "reason": "x"}, format="json"
        ).json()["rules"][0]
        == "graph.status_transition"
    )
    assert (
        expert.post(
            BASE + "nodes/N-resend-invoice/status/", {"status": "DEPRECATED", "reason": "old"}, format="json"
        ).status_code
        == 200
    )
    assert expert.delete(BASE + "edges/", key, format="json").status_code == 204
    resp = expert.post(
        BASE + "nodes/N-resend-invoice/status/", {"status": "REMOVED", "reason": "gone"}, format="json"
    )
    assert resp.status_code == 200 and resp.json()["status"] == "REMOVED"
    resp = expert.post(
        BASE + "aliases/",
        {"source": "N-resend-invoice", "targets": ["N-invoice-download"], "reason": "merged"},
        format="json",
    )
    assert resp.status_code == 201
    history = expert.get(BASE + "audit/?object_type=node&object_key=N-resend-invoice").json()["results"]
    assert [h["action"] for h in history] == ["alias", "status", "status"]


def test_reviewer_and_client_cannot_write(tiny, people, api_as, token_client):
    node = {"node_id": "N-y", "type": "Info", "title": "Y"}
    assert api_as(people["reviewer"]).post(BASE + "nodes/", node, format="json").status_code == 403
    assert token_client(tiny).post(BASE + "nodes/", node, format="json").status_code == 403
    assert api_as(people["reviewer"]).get(BASE + "nodes/?source=draft").status_code == 200


def test_the_draft_review_and_publication_through_the_api(tiny, people, api_as, run_jobs):
    from ontology import services

    admin, expert = api_as(people["admin"]), api_as(people["expert"])
    assert publish(admin, run_jobs)["status"] == "SUCCEEDED"
    services.node_update(project=tiny, actor=None, node_id="N-oos", changes={"handler": "python:x.y"})

    assert expert.get(BASE + "releases/draft/").status_code == 403
    review = admin.get(BASE + "releases/draft/").json()
    assert review["active_version"] == 1 and review["unchanged"] is False and review["violations"] == []
    assert review["diff"]["nodes_changed"] == [["N-oos", ["handler"]]]

    moved = publish(admin, run_jobs, draft_digest="0" * 64)
    assert (moved["status"], moved["result"]["rules"]) == ("FAILED", ["release.draft_moved"])
    assert "the draft changed since its diff was reviewed" in moved["result"]["error"]
    assert admin.get(BASE + "releases/").json()[0]["version"] == 1  # the refused job published nothing
    published = publish(admin, run_jobs, draft_digest=review["digest"])
    assert (published["status"], published["result"]["published"]) == ("SUCCEEDED", True)
    body = admin.get(BASE + f"releases/{published['result']['release']}/").json()
    assert (body["version"], body["source"], body["parent_version"]) == (2, "DRAFT", 1)
    again = publish(admin, run_jobs)
    assert again["status"] == "SUCCEEDED" and (again["result"]["published"], again["result"]["release"]) == (
        False,
        2,
    )
    assert "nothing to publish" in again["result"]["detail"]
    assert admin.get(BASE + "releases/draft/").json()["unchanged"] is True
