"""Taxonomy API v1 through real HTTP semantics (DRF test client): experts write, clients read, the
validator refuses bad writes with the rule's name and nothing changes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from arg_platform.models import AuditEvent
from taxonomy.models import Label, Policy
from taxonomy.services import cluster_create, label_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def tree(project: Any, expert: Any) -> dict[str, Any]:
    billing = cluster_create(project=project, actor=expert, key="billing", name="Billing")
    access = cluster_create(project=project, actor=expert, key="access", name="Accounts & access")
    invoices = label_create(
        project=project,
        actor=expert,
        name="Invoices",
        cluster_key="billing",
        examples=["where is my invoice"],
    )
    download = label_create(
        project=project,
        actor=expert,
        name="Download invoice",
        cluster_key="billing",
        parent_id=invoices.label_id,
    )
    login = label_create(project=project, actor=expert, name="Login problems", cluster_key="access")
    return {"billing": billing, "access": access, "invoices": invoices, "download": download, "login": login}


def url(project: Any, tail: str) -> str:
    return f"/api/v1/projects/{project.slug}/{tail}"


def test_expert_creates_child_label_and_it_gets_a_stable_id(project, expert, api_as, tree):
    resp = api_as(expert).post(
        url(project, "labels/"),
        {
            "name": "Refunds",
            "cluster": "billing",
            "parent": tree["invoices"].label_id,
            "examples": ["I want my money back"],
        },
        format="json",
    )
    assert resp.status_code == 201, resp.content
    body = resp.json()
    assert body["label_id"] == "L00004"
    assert body["parent"] == tree["invoices"].label_id
    assert body["path"] == "Billing › Invoices › Refunds"
    assert body["depth"] == 1
    assert AuditEvent.objects.filter(object_type="label", object_key="L00004", action="create").count() == 1


def test_duplicate_sibling_name_is_refused_and_nothing_changes(project, expert, api_as, tree):
    before = Label.objects.count()
    resp = api_as(expert).post(
        url(project, "labels/"),
        {"name": "download INVOICE", "cluster": "billing", "parent": tree["invoices"].label_id},
        format="json",
    )
    assert resp.status_code == 400
    assert resp.json()["rules"] == ["taxonomy.sibling_unique"]
    assert "L00002, L00004" in resp.json()["detail"]  # the message names real LabelIDs
    assert Label.objects.count() == before
    ok = api_as(expert).post(
        url(project, "labels/"), {"name": "Refunds", "cluster": "billing"}, format="json"
    )
    assert ok.json()["label_id"] == "L00004"  # the refused attempt consumed no LabelID


def test_cross_cluster_parent_is_refused(project, expert, api_as, tree):
    resp = api_as(expert).post(
        url(project, "labels/"),
        {"name": "X", "cluster": "access", "parent": tree["invoices"].label_id},
        format="json",
    )
    assert resp.status_code == 400
    assert "taxonomy.cluster_compat" in resp.json()["rules"]


def test_orphan_child_is_refused(project, expert, api_as, tree):
    resp = api_as(expert).post(
        url(project, "labels/"), {"name": "X", "cluster": "billing", "parent": "L09999"}, format="json"
    )
    assert resp.status_code == 400
    assert resp.json()["rules"] == ["taxonomy.parent_exists"]


def test_moving_a_label_under_its_own_descendant_is_a_cycle(project, expert, api_as, tree):
    resp = api_as(expert).post(
        url(project, f"labels/{tree['invoices'].label_id}/move/"),
        {"parent": tree["download"].label_id},
        format="json",
    )
    assert resp.status_code == 400
    assert "taxonomy.no_cycles" in resp.json()["rules"]
    tree["invoices"].refresh_from_db()
    assert tree["invoices"].parent_id is None


def test_move_to_other_cluster_moves_subtree_and_updates_paths(project, expert, api_as, tree):
    resp = api_as(expert).post(
        url(project, f"labels/{tree['invoices'].label_id}/move/"),
        {"parent": tree["login"].label_id},
        format="json",
    )
    assert resp.status_code == 200, resp.content
    tree["download"].refresh_from_db()
    assert tree["download"].cluster.key == "access"
    assert tree["download"].path == "Accounts & access › Login problems › Invoices › Download invoice"
    assert tree["download"].label_id == "L00002"


def test_status_lifecycle_and_deprecated_is_terminal(project, expert, api_as, tree):
    client = api_as(expert)
    lid = tree["download"].label_id
    assert client.post(url(project, f"labels/{lid}/status/"), {"status": "DEPRECATED"}, format="json").json()[
        "rules"
    ] == ["taxonomy.status_reason"]
    resp = client.post(
        url(project, f"labels/{lid}/status/"), {"status": "DEPRECATED", "reason": "merged"}, format="json"
    )
    assert resp.status_code == 200
    assert resp.json()["status_changed_by"] == expert.username
    resp = client.post(url(project, f"labels/{lid}/status/"), {"status": "ACTIVE"}, format="json")
    assert resp.json()["rules"] == ["taxonomy.status_transition"]


def test_deprecating_a_parent_with_active_children_is_refused(project, expert, api_as, tree):
    resp = api_as(expert).post(
        url(project, f"labels/{tree['invoices'].label_id}/status/"),
        {"status": "DEPRECATED", "reason": "x"},
        format="json",
    )
    assert resp.status_code == 400
    assert resp.json()["rules"] == ["taxonomy.parent_status"]


def test_deprecation_removes_label_from_policy_allow_lists(project, expert, api_as, tree):
    client = api_as(expert)
    resp = client.post(
        url(project, "policies/"),
        {
            "key": "customer",
            "name": "Customer",
            "allowed_labels": [tree["download"].label_id, tree["login"].label_id],
        },
        format="json",
    )
    assert resp.status_code == 201, resp.content
    client.post(
        url(project, f"labels/{tree['download'].label_id}/status/"),
        {"status": "DEPRECATED", "reason": "gone"},
        format="json",
    )
    assert Policy.objects.get(key="customer").allowed_labels == [tree["login"].label_id]


def test_incompatible_pair_with_ancestor_is_refused(project, expert, api_as, tree):
    client = api_as(expert)
    resp = client.post(
        url(project, "incompatibilities/"),
        {"labels": [tree["invoices"].label_id, tree["download"].label_id]},
        format="json",
    )
    assert resp.json()["rules"] == ["taxonomy.incompatible_lineage"]
    resp = client.post(
        url(project, "incompatibilities/"),
        {"labels": [tree["login"].label_id, tree["download"].label_id], "reason": "r"},
        format="json",
    )
    assert resp.status_code == 201
    assert resp.json()["labels"] == ["L00002", "L00003"]


def test_policy_with_unknown_label_and_bad_regex_reports_both(project, expert, api_as, tree):
    resp = api_as(expert).post(
        url(project, "policies/"),
        {"key": "p", "name": "P", "forbidden_labels": ["L07777"], "blocked_patterns": ["(unclosed"]},
        format="json",
    )
    assert resp.status_code == 400
    assert set(resp.json()["rules"]) == {"policy.label_refs", "policy.pattern"}
    assert not Policy.objects.exists()


def test_typology_weights_are_validated(project, expert, api_as):
    client = api_as(expert)
    resp = client.post(
        url(project, "typologies/"), {"key": "quick", "name": "Quick", "weights": {"alpha": 2}}, format="json"
    )
    assert resp.status_code == 400
    assert "weights" in resp.json()
    resp = client.post(
        url(project, "typologies/"),
        {"key": "quick", "name": "Quick", "max_hops": 2, "weights": {"alpha": 0.5}, "is_default": True},
        format="json",
    )
    assert resp.status_code == 201, resp.content
    assert resp.json()["weights"]["alpha"] == 0.5
    assert resp.json()["max_hops"] == 2


def test_oversize_label_name_is_a_field_error(project, expert, api_as, tree):
    resp = api_as(expert).post(
        url(project, "labels/"), {"name": "x" * 81, "cluster": "billing"}, format="json"
    )
    assert resp.status_code == 400
    assert "name" in resp.json()


def test_client_token_reads_but_cannot_write(project, token_client, tree):
    client = token_client(project)
    resp = client.get(url(project, "labels/"))
    assert resp.status_code == 200
    assert resp.json()["count"] == 3
    resp = client.post(url(project, "labels/"), {"name": "Y", "cluster": "billing"}, format="json")
    assert resp.status_code == 403
    assert Label.objects.count() == 3


def test_reviewer_reads_but_cannot_write(project, reviewer, api_as, tree):
    client = api_as(reviewer)
    assert client.get(url(project, "clusters/")).status_code == 200
    assert client.post(url(project, "clusters/"), {"key": "x", "name": "X"}, format="json").status_code == 403


def test_anonymous_is_refused(project, tree):
    from rest_framework.test import APIClient

    assert APIClient().get(url(project, "labels/")).status_code in (401, 403)


def test_typology_templates_are_shared_and_copied_into_a_project(project, expert, api_as, token_client):
    client = api_as(expert)
    templates = client.get("/api/v1/typology-templates/").json()
    assert {t["key"] for t in templates} >= {"quick-answer", "guided-troubleshooting", "compliance-careful"}
    resp = client.post(
        url(project, "typologies/copy-template/"), {"template": "guided-troubleshooting"}, format="json"
    )
    assert resp.status_code == 201, resp.content
    assert resp.json()["response_style"] == "step_by_step"
    assert client.get(url(project, "typologies/guided-troubleshooting/")).status_code == 200
    again = client.post(
        url(project, "typologies/copy-template/"), {"template": "guided-troubleshooting"}, format="json"
    )
    assert again.json()["rules"] == ["typology.unique_key"]
    assert (
        token_client(project)
        .post(url(project, "typologies/copy-template/"), {"template": "quick-answer"}, format="json")
        .status_code
        == 403
    )


def test_pack_download_and_upload_through_the_api(project, expert, api_as, token_client, tree):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client = api_as(expert)
    resp = client.get(url(project, "pack/"))
    assert resp.status_code == 200
    assert resp["Content-Type"] == "application/yaml"
    text = resp.content.decode()
    assert "format: arg-pack/1" in text and "L00002" in text
    edited = text.replace("name: Download invoice", "name: Download an invoice")
    resp = client.post(
        url(project, "pack/"), {"file": SimpleUploadedFile("acme.yaml", edited.encode())}, format="multipart"
    )
    assert resp.status_code == 200, resp.content
    assert resp.json()["updated"]["labels"] == 3
    assert Label.objects.get(project=project, label_id="L00002").name == "Download an invoice"
    broken = edited.replace("parent: null", "parent: L00002", 1)
    resp = client.post(
        url(project, "pack/"), {"file": SimpleUploadedFile("acme.yaml", broken.encode())}, format="multipart"
    )
    assert resp.status_code == 400
    assert "taxonomy.no_cycles" in resp.json()["rules"]
    assert Label.objects.get(project=project, label_id="L00001").parent_id is None
    assert token_client(project).get(url(project, "pack/")).status_code == 403


def test_deprecating_a_label_still_attached_to_active_nodes_is_refused(expert, api_as):
    from projects.services import membership_set
    from taxonomy.packs import pack_import, pack_read
    from tests.taxonomy.test_packs import SMALL

    tiny = pack_import(pack_read(SMALL)).project
    membership_set(project=tiny, user=expert, role="expert")
    resp = api_as(expert).post(
        "/api/v1/projects/tiny/labels/L00002/status/",
        {"status": "DEPRECATED", "reason": "merged"},
        format="json",
    )
    assert resp.status_code == 400
    assert resp.json()["rules"] == ["taxonomy.label_attached"]
    assert "N-invoice-download" in resp.json()["detail"]
    assert Label.objects.get(project=tiny, label_id="L00002").status == "ACTIVE"


@pytest.mark.parametrize("bad", ["chan\u0000nels", "chan\ud800nels"])
def test_typology_access_constraint_names_hold_no_nul_or_lone_surrogate(project, expert, api_as, bad):
    """Their values are checked text fields; a name is a JSON key no database stores with a NUL
    (PostgreSQL's jsonb refuses it: a 500 before) and no encoding carries a lone surrogate."""
    resp = api_as(expert).post(
        url(project, "typologies/"),
        # json.dumps escapes a lone surrogate as a client would; the test client's renderer cannot
        json.dumps({"key": "quick", "name": "Quick", "access_constraints": {bad: ["web"]}}),
        content_type="application/json",
    )
    assert resp.status_code == 400, resp.content
    body = resp.json()
    assert body["rules"] == ["typology.access_constraints"]
    assert body["errors"]["access_constraints"] == [
        "NUL or lone surrogate character in access_constraints (chan\ufffdnels)"
    ]
    assert not project.typologies.filter(key="quick").exists()
