"""Notifications that proposals await review: email through Django's backend, a webhook on loopback."""

from __future__ import annotations

import pytest

from review.queue.notifications import review_pending_notify
from tests.inference.loopback import Reply, loopback_server

from .queue_fixtures import user, weight_changeset

pytestmark = pytest.mark.django_db


@pytest.fixture
def pending(tiny, make_proposal):
    rob, rita = user("rob-reviewer"), user("rita-reviewer")
    rob.email, rita.email = "rob@example.test", ""
    rob.save(update_fields=["email"])
    rita.save(update_fields=["email"])
    erin = user("erin-expert")
    erin.email = "erin@example.test"  # an expert is not a reviewer: never emailed
    erin.save(update_fields=["email"])
    return [
        make_proposal(tiny, changeset=weight_changeset(0.9), title="Reinforce resend", score=0.44),
        make_proposal(tiny, kind="EDGE_ADD", changeset=weight_changeset(0.8), title="Shortcut", score=0.31),
    ]


def test_the_webhook_receives_a_summary_of_the_new_proposals(settings, tiny, pending):
    with loopback_server(lambda request: Reply(204, b"")) as hook:
        settings.REVIEW_WEBHOOK_URL = hook.url + "/review-hook"
        settings.REVIEW_EMAIL = False
        result = review_pending_notify(project=tiny, proposals=pending)

    assert (result.proposals, result.webhook_status, result.emailed, result.error) == (2, 204, 0, "")
    [request] = hook.requests
    assert request["path"] == "/review-hook"
    assert request["headers"]["Content-Type"] == "application/json"
    body = request["json"]
    assert (body["event"], body["project"], body["pending_total"], body["queue_url"]) == (
        "review.pending",
        "tiny",
        2,
        "/p/tiny/review/",
    )
    assert [(p["id"], p["kind"], p["title"], p["score"]) for p in body["proposals"]] == [
        (pending[0].pk, "EDGE_WEIGHT", "Reinforce resend", 0.44),
        (pending[1].pk, "EDGE_ADD", "Shortcut", 0.31),
    ]
    assert body["proposals"][0]["url"] == f"/p/tiny/review/proposals/{pending[0].pk}/"


def test_reviewers_with_an_address_are_emailed(settings, mailoutbox, tiny, pending):
    settings.REVIEW_EMAIL = True
    settings.REVIEW_WEBHOOK_URL = ""

    result = review_pending_notify(project=tiny, proposals=pending)

    assert (result.emailed, result.webhook_status) == (1, None)
    [mail] = mailoutbox
    assert mail.to == ["rob@example.test"]
    assert mail.subject == "[ARG] 2 proposals to review in Tiny support"
    assert f"#{pending[0].pk} EDGE_WEIGHT — Reinforce resend (score 0.44)" in mail.body
    assert "/p/tiny/review/" in mail.body


def test_a_failing_webhook_is_reported_not_raised(settings, tiny, pending):
    with loopback_server(lambda request: Reply(503, {"error": "down"})) as hook:
        settings.REVIEW_WEBHOOK_URL = hook.url
        result = review_pending_notify(project=tiny, proposals=pending)
    assert (result.webhook_status, result.error) == (503, "webhook answered 503")

    settings.REVIEW_WEBHOOK_URL = "http://127.0.0.1:9/"  # nothing listens on the discard port
    unreachable = review_pending_notify(project=tiny, proposals=pending)
    assert unreachable.webhook_status is None and unreachable.error.startswith("webhook: ")


def test_nothing_to_announce_sends_nothing(settings, mailoutbox, tiny):
    settings.REVIEW_EMAIL = True
    with loopback_server(lambda request: Reply(204, b"")) as hook:
        settings.REVIEW_WEBHOOK_URL = hook.url
        result = review_pending_notify(project=tiny, proposals=[])
    assert result.proposals == 0 and hook.requests == [] and mailoutbox == []
