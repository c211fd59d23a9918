"""The other review lists: sampled silent successes, UNSURE memory merges, SHADOW labels — and the
badge that counts what awaits a reviewer."""

from __future__ import annotations

import re

import pytest

from arg_platform.models import AuditEvent
from inference.models import Feedback, InferenceLog
from review.models import OfflineRun
from review.queue.selectors import silent_review_summary
from taxonomy.models import Label

from .queue_fixtures import user, weight_changeset

pytestmark = pytest.mark.django_db
GREY_A = "The customer wants maintenance windows on Sunday nights."
GREY_B = "Schedule this customer's maintenance for Sunday night."


def _log(
    project, request_id, prompt, *, node="N-invoice-download", status="INFO_UNCERTAIN_SUCCESS", silent=True
):
    return InferenceLog.objects.create(
        project=project,
        request_id=request_id,
        prompt=prompt,
        answer=f"Answer to: {prompt}",
        target_node=node,
        outcome_kind="INFO",
        outcome_status=status,
        silent_outcome=silent,
        c_info=0.61,
    )


@pytest.fixture
def sampled(tiny):
    """Three silent successes; the night sampled two of them (one from a heavier zone)."""
    light = _log(tiny, "req-light", "where is my invoice")
    heavy = _log(tiny, "req-heavy", "can I get last year's invoices", node="N-resend-invoice")
    unsampled = _log(tiny, "req-unsampled", "invoice pdf please")
    OfflineRun.objects.create(
        project=tiny,
        status=OfflineRun.Status.SUCCEEDED,
        stats={
            "silent_samples": [
                {"log_id": light.pk, "node_id": "N-invoice-download", "zone": "billing", "weight": 1.0},
                {"log_id": heavy.pk, "node_id": "N-resend-invoice", "zone": "billing", "weight": 5.0},
            ]
        },
    )
    return {"light": light, "heavy": heavy, "unsampled": unsampled}


def test_silent_successes_are_listed_heaviest_zone_first_and_labelled_without_confirming(
    client, tiny, sampled
):
    client.force_login(user("rob-reviewer"))
    html = client.get("/p/tiny/review/silent/").content.decode()
    assert re.findall(r'id="sample-(req-[a-z]+)"', html) == ["req-heavy", "req-light"]

    resp = client.post("/p/tiny/review/silent/req-heavy/label/", {"helpful": "no", "comment": "wrong period"})

    assert resp.status_code == 302
    label = Feedback.objects.get(log=sampled["heavy"])
    assert (label.source, label.helpful, label.reviewer, label.comment) == (
        "reviewer",
        False,
        user("rob-reviewer"),
        "wrong period",
    )
    sampled["heavy"].refresh_from_db()
    assert (sampled["heavy"].outcome_status, sampled["heavy"].silent_outcome) == (
        "INFO_UNCERTAIN_SUCCESS",
        True,
    )
    assert AuditEvent.objects.filter(project=tiny, object_type="request", object_key="req-heavy").count() == 1
    html = client.get("/p/tiny/review/silent/").content.decode()
    assert re.findall(r'id="sample-(req-[a-z]+)"', html) == ["req-light"]
    summary = silent_review_summary(project=tiny)
    assert (summary.labelled, summary.not_helpful, summary.hidden_error_rate) == (1, 1, 1.0)


def test_only_sampled_silent_requests_take_a_reviewer_label(client, tiny, sampled):
    client.force_login(user("rob-reviewer"))
    resp = client.post("/p/tiny/review/silent/req-unsampled/label/", {"helpful": "yes"})
    assert resp.status_code == 404
    client.force_login(user("erin-expert"))
    assert client.post("/p/tiny/review/silent/req-light/label/", {"helpful": "yes"}).status_code == 403
    assert Feedback.objects.count() == 0


def test_a_user_signal_takes_the_request_out_of_the_sample(client, tiny, sampled):
    from inference.feedback import feedback_record

    feedback_record(project_id=tiny.pk, request_id="req-light", kind="helpful", helpful=True)
    client.force_login(user("rob-reviewer"))
    html = client.get("/p/tiny/review/silent/").content.decode()
    assert re.findall(r'id="sample-(req-[a-z]+)"', html) == ["req-heavy"]


def test_silent_samples_through_the_api(api_as, tiny, sampled):
    client = api_as(user("rob-reviewer"))
    listed = client.get("/api/v1/projects/tiny/review/silent-samples/").json()
    assert [row["request_id"] for row in listed] == ["req-heavy", "req-light"]
    assert listed[0]["weight"] == 5.0
    resp = client.post(
        "/api/v1/projects/tiny/review/silent-samples/req-light/label/", {"helpful": True}, format="json"
    )
    assert resp.json() == {
        "request_id": "req-light",
        "helpful": True,
        "outcome_status": "INFO_UNCERTAIN_SUCCESS",
        "silent_outcome": True,
    }


def test_unsure_memory_merges_are_resolved_from_review(client, api_as, tiny):
    from memory.models import RegistryAttempt
    from memory.services import memory_write

    common = {"scope": "USER", "user_id": "u-1", "label_ids": ["L00001"], "info_type": "UserPreference"}
    first = memory_write(project=tiny, text=GREY_A, **common)
    grey = memory_write(project=tiny, text=GREY_B, session_id="s-2", **common)
    assert grey.decision == "UNSURE"
    reviewer = _login(client, "rob-reviewer")

    html = reviewer.get("/p/tiny/review/merges/").content.decode()
    assert f'id="merge-{grey.registry.attempt.pk}"' in html and "maintenance for Sunday night" in html

    resp = reviewer.post(f"/p/tiny/review/merges/{grey.registry.attempt.pk}/resolve/", {"decision": "SAME"})

    assert resp.status_code == 302
    attempt = RegistryAttempt.objects.get(pk=grey.registry.attempt.pk)
    assert (attempt.review_status, attempt.unit_id, attempt.resolved_by) == (
        "SAME",
        first.unit.pk,
        user("rob-reviewer"),
    )
    again = reviewer.post(f"/p/tiny/review/merges/{attempt.pk}/resolve/", {"decision": "DIFFERENT"})
    assert again.status_code == 422 and "memory.review_state" in again.content.decode()
    assert (
        api_as(user("rob-reviewer")).get("/api/v1/projects/tiny/review/memory-merges/").json()["count"] == 0
    )


def _login(client, username):
    client.force_login(user(username))
    return client


def test_shadow_labels_are_activated_through_the_taxonomy_service(client, api_as, tiny):
    from taxonomy.services import label_create

    shadow = label_create(
        project=tiny,
        actor=user("erin-expert"),
        name="Invoice archive",
        cluster_key="billing",
        parent_id="L00001",
        status="SHADOW",
    )
    reviewer = _login(client, "rob-reviewer")
    html = reviewer.get("/p/tiny/review/labels/").content.decode()
    assert f'id="shadow-{shadow.label_id}"' in html

    resp = reviewer.post(
        f"/p/tiny/review/labels/{shadow.label_id}/activate/", {"reason": "shadow looks right"}
    )

    assert resp.status_code == 302
    shadow.refresh_from_db()
    assert (shadow.status, shadow.status_changed_by, shadow.status_reason) == (
        "ACTIVE",
        user("rob-reviewer"),
        "shadow looks right",
    )
    event = AuditEvent.objects.get(
        project=tiny, object_type="label", object_key=shadow.label_id, action="status"
    )
    assert event.after == {"status": "ACTIVE"}
    refused = reviewer.post("/p/tiny/review/labels/L00001/activate/", {})
    assert refused.status_code == 422 and "review.label_not_shadow" in refused.content.decode()
    assert Label.objects.get(project=tiny, label_id="L00001").status == "ACTIVE"
    expert = api_as(user("erin-expert"))
    assert (
        expert.post(
            f"/api/v1/projects/tiny/review/shadow-labels/{shadow.label_id}/activate/", {}, format="json"
        ).status_code
        == 403
    )


def test_the_badge_and_inbox_count_everything_awaiting_review(client, api_as, tiny, sampled, make_proposal):
    make_proposal(tiny, changeset=weight_changeset())
    reviewer = _login(client, "rob-reviewer")
    html = reviewer.get("/p/tiny/taxonomy/").content.decode()
    badge = re.search(r'<span class="nav-badge" id="review-badge"[^>]*>(\d+)</span>', html)
    assert badge is not None and badge.group(1) == "3"  # one proposal + two sampled silent successes
    inbox = api_as(user("rob-reviewer")).get("/api/v1/projects/tiny/review/inbox/").json()
    assert inbox == {"proposals": 1, "silent": 2, "merges": 0}
    # the review lists' tabs show the badge's parts, so the queue and the badge count the same things
    queue = reviewer.get("/p/tiny/review/").content.decode()
    tabs = dict(re.findall(r'id="tab-(\w+)"[^>]*>[^<]*<span class="count">(\d+)</span>', queue))
    assert tabs == {"proposals": "1", "silent": "2", "merges": "0"}
    assert sum(int(n) for n in tabs.values()) == int(badge.group(1))
    client.force_login(user("erin-expert"))
    assert 'id="review-badge"' not in client.get("/p/tiny/taxonomy/").content.decode()
