"""The seeded hidden-domain simulation, end to end (one short night; ``simulate_offline`` runs longer ones)."""

from __future__ import annotations

import re

import pytest

from tests.inference.loopback import Reply, loopback_server


@pytest.mark.django_db
def test_one_night_recovers_the_planted_defects_without_silent_or_poisoned_autocommits(
    fresh_snapshots, settings
):
    from bench.simulation.runner import simulate
    from review.models import Proposal

    settings.REVIEW_EMAIL = False
    with loopback_server(lambda request: Reply(204, b"")) as hook:
        settings.REVIEW_WEBHOOK_URL = hook.url + "/review-hook"
        report = simulate(seed=1, nights=1, requests=300, poison_episodes=20)

    assert report.recall >= 0.8
    assert report.precision >= 0.9
    assert report.silence_autocommits == 0
    assert report.poisoning_autocommits == 0
    # The stale-edge inhibition scores high on confirmed (explicit) failures, but removing an edge is no
    # structural gain by geDIG: the gate holds the auto-commit and an expert decides (and approves it).
    assert report.autocommits == 0
    inhibit = Proposal.objects.get(kind="EDGE_INHIBIT")
    assert inhibit.confidence_bin == "MID_CONF"
    assert inhibit.score >= settings.OFFLINE_LOOP["bins"]["high_score"]
    assert inhibit.replay["gedig_gate"]["decided"] == "held back"
    assert "geDIG DG did not confirm" in inhibit.replay["bin_reason"]
    assert report.accuracy_after > report.accuracy_before
    assert report.path_length_after < report.path_length_before  # the detour became a shortcut
    assert {k for k, v in report.matched.items() if v} >= {"split", "merge", "detour", "stale_edge"}
    assert re.fullmatch(
        r"SUMMARY proposal_precision=\d\.\d{3} proposal_recall=\d\.\d{3} autocommits=\d+ silence_autocommits=0 "
        r"poisoning_autocommits=0 accuracy_before=\d+\.\d accuracy_after=\d+\.\d",
        report.summary_line(),
    )

    # Reviewers were told what the night sent them, and each proposal shows requests that reroute.
    pending = list(Proposal.objects.filter(confidence_bin="MID_CONF").values_list("pk", flat=True))
    assert pending
    [request] = hook.requests
    assert sorted(p["id"] for p in request["json"]["proposals"]) == sorted(pending)
    split = Proposal.objects.filter(kind="SPLIT", confidence_bin="MID_CONF").first()
    rerouted = split.replay["rerouted"]
    assert 1 <= len(rerouted) <= 8 and len(rerouted) <= split.replay["changed_targets"]
    assert all(r["before"] != r["after"] and r["prompt"] for r in rerouted)
    assert {r["before"] for r in rerouted} <= set(split.target_keys)
