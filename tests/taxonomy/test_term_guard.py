"""Curation guard-rails through the API (taxonomy.term_guard): a synonym or example identical to another
label's name, synonym or example is a 400 naming that label; a very close one is a 400 unless the
writer confirms it (``accept_similar``), and the 2xx then lists it under ``warnings``. Nothing is
written by a refusal. The release review reports cross-label duplicates."""

from __future__ import annotations

from typing import Any

import pytest

from arg_platform.models import AuditEvent
from taxonomy.models import Label
from taxonomy.selectors import taxonomy_view
from taxonomy.services import cluster_create, label_create
from taxonomy.term_guard import competing_labels, cross_label_duplicates, normalize_term

pytestmark = pytest.mark.django_db


@pytest.fixture
def labels(project: Any, expert: Any) -> dict[str, Label]:
    cluster_create(project=project, actor=expert, key="ops", name="Operations")
    status = label_create(
        project=project,
        actor=expert,
        name="Service status",
        cluster_key="ops",
        synonyms=["outage"],
        examples=["is the platform down right now", "status page"],
    )
    restarts = label_create(
        project=project,
        actor=expert,
        name="App restarts",
        cluster_key="ops",
        examples=["my app keeps restarting every few minutes"],
    )
    billing = label_create(
        project=project, actor=expert, name="Invoices", cluster_key="ops", examples=["where is my invoice"]
    )
    return {"status": status, "restarts": restarts, "billing": billing}


def url(project: Any, tail: str) -> str:
    return f"/api/v1/projects/{project.slug}/labels/{tail}"


def test_normalized_identity_ignores_case_punctuation_and_spacing():
    assert normalize_term("  Outage!! ") == normalize_term("outage")
    assert normalize_term("Is the platform DOWN, right now?") == "is the platform down right now"


def test_identical_synonym_is_refused_naming_the_other_label(project, expert, api_as, labels):
    billing = labels["billing"]
    resp = api_as(expert).patch(
        url(project, f"{billing.label_id}/"), {"synonyms": ["Outage!"], "accept_similar": True}, format="json"
    )
    assert resp.status_code == 400, resp.content
    body = resp.json()
    assert body["rules"] == ["taxonomy.term_duplicate"]
    assert labels["status"].label_id in body["errors"]["synonyms"][0]
    assert "Service status" in body["errors"]["synonyms"][0]
    [conflict] = body["conflicts"]
    assert conflict["label_id"] == labels["status"].label_id
    assert conflict["kind"] == "synonym" and conflict["other_text"] == "outage"
    assert conflict["identical"] is True and conflict["similarity"] == 1.0
    billing.refresh_from_db()
    assert billing.synonyms == []  # nothing written, even with accept_similar


def test_identical_example_on_create_is_refused_and_consumes_nothing(project, expert, api_as, labels):
    before = Label.objects.count()
    resp = api_as(expert).post(
        url(project, ""),
        {"name": "Incidents", "cluster": "ops", "examples": ["Is the platform down right now?"]},
        format="json",
    )
    assert resp.status_code == 400, resp.content
    assert resp.json()["conflicts"][0]["label_id"] == labels["status"].label_id
    assert resp.json()["conflicts"][0]["field"] == "examples"
    assert Label.objects.count() == before


def test_very_close_example_needs_confirmation_then_is_saved_with_a_warning(project, expert, api_as, labels):
    billing, restarts = labels["billing"], labels["restarts"]
    new = "app keeps restarting every few minutes"
    refused = api_as(expert).patch(
        url(project, f"{billing.label_id}/"),
        {"examples": [*billing.examples, new]},
        format="json",
    )
    assert refused.status_code == 400, refused.content
    body = refused.json()
    assert body["rules"] == ["taxonomy.term_similar"]
    [conflict] = body["conflicts"]
    assert conflict["label_id"] == restarts.label_id and conflict["identical"] is False
    assert 0.9 <= conflict["similarity"] < 1.0
    assert f"{conflict['similarity']:.2f}" in body["errors"]["examples"][0]
    billing.refresh_from_db()
    assert new not in billing.examples

    accepted = api_as(expert).patch(
        url(project, f"{billing.label_id}/"),
        {"examples": [*billing.examples, new], "accept_similar": True},
        format="json",
    )
    assert accepted.status_code == 200, accepted.content
    warnings = accepted.json()["warnings"]
    assert [(w["text"], w["label_id"], w["rule"]) for w in warnings] == [
        (new, restarts.label_id, "taxonomy.term_similar")
    ]
    billing.refresh_from_db()
    assert new in billing.examples
    event = AuditEvent.objects.filter(object_key=billing.label_id, action="update").latest("pk")
    assert restarts.label_id in event.reason  # the audit records what was confirmed


def test_confirmed_close_synonym_on_create_is_reported_in_the_201(project, expert, api_as, labels):
    resp = api_as(expert).post(
        url(project, ""),
        {"name": "Incidents", "cluster": "ops", "synonyms": ["status pages"], "accept_similar": True},
        format="json",
    )
    assert resp.status_code == 201, resp.content
    [warning] = resp.json()["warnings"]
    assert warning["label_id"] == labels["status"].label_id and warning["other_text"] == "status page"
    assert warning["field"] == "synonyms" and 0.9 <= warning["similarity"] < 1.0
    assert Label.objects.get(label_id=resp.json()["label_id"]).synonyms == ["status pages"]


def test_unrelated_terms_pass_with_no_warnings(project, expert, api_as, labels):
    billing = labels["billing"]
    resp = api_as(expert).patch(
        url(project, f"{billing.label_id}/"),
        {"synonyms": ["bill"], "examples": [*billing.examples, "send me last month's receipt"]},
        format="json",
    )
    assert resp.status_code == 200, resp.content
    assert resp.json()["warnings"] == []


def test_terms_the_label_already_had_are_not_judged_again(project, expert, api_as, labels):
    """Editing a label's description keeps its old terms even if another label later took one."""
    status = labels["status"]
    resp = api_as(expert).patch(
        url(project, f"{status.label_id}/"), {"description": "is the service up"}, format="json"
    )
    assert resp.status_code == 200, resp.content


def test_release_review_reports_cross_label_duplicates(project, expert, labels):
    # written before the guard existed (or through a pack import): the review must still report it
    Label.objects.filter(pk=labels["billing"].pk).update(synonyms=["OUTAGE"])
    found = cross_label_duplicates(taxonomy_view(project=project))
    pairs = {(d.a.label_id, d.b.label_id): d for d in found}
    key = (labels["status"].label_id, labels["billing"].label_id)
    assert key in pairs and pairs[key].identical
    assert "Service status" in pairs[key].message() and "Invoices" in pairs[key].message()
    assert found[0].identical  # identical pairs come first


def test_draft_review_warns_of_cross_label_duplicates_without_refusing(
    project, expert, admin_member, api_as, labels
):
    Label.objects.filter(pk=labels["billing"].pk).update(synonyms=["Outage"])
    review = api_as(admin_member).get(f"/api/v1/projects/{project.slug}/releases/draft/")
    assert review.status_code == 200, review.content
    body = review.json()
    duplicates = [w for w in body["warnings"] if w["rule"] == "taxonomy.term_duplicate"]
    assert len(duplicates) == 1
    assert labels["status"].label_id in duplicates[0]["message"]
    assert labels["billing"].label_id in duplicates[0]["message"]
    assert not any(v["rule"].startswith("taxonomy.term_") for v in body["violations"])


def test_competing_labels_rank_by_centroid_similarity(project, expert, labels):
    competing = competing_labels(taxonomy_view(project=project), label_id=labels["status"].label_id)
    assert [c.label_id for c in competing] == [labels["restarts"].label_id, labels["billing"].label_id]
    assert competing[0].centroid_similarity > competing[1].centroid_similarity
