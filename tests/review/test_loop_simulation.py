"""The seeded hidden-domain simulation, end to end (one short night; ``simulate_offline`` runs longer ones)."""

from __future__ import annotations

import re
from types import SimpleNamespace

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
        report = simulate(seed=1, nights=1, requests=400, poison_episodes=20)

    # recall over the five defects one night can show; the lifecycle and consolidation defects below
    first_five = ("split", "merge", "child_label", "detour", "stale_edge")
    assert sum(1 for d in first_five if report.matched[d]) / len(first_five) >= 0.8
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
    # The misplaced label is found on the first night; the change moves no request (the build requests
    # already reach their node), so replay scores it about zero: a placement replay cannot measure, which
    # goes to the expert (who approves it) rather than to the backlog.
    [reattach] = Proposal.objects.filter(kind="LABEL_REATTACH")
    assert report.matched["reattach"] == [reattach.pk]
    assert reattach.evidence["from_cluster"] == "billing" and reattach.evidence["to_cluster"] == "deploy"
    assert abs(reattach.score) < settings.OFFLINE_LOOP["bins"]["mid_score"]
    assert reattach.confidence_bin == "MID_CONF"
    assert "changes where a label sits in the taxonomy" in reattach.replay["bin_reason"]
    # One night is one simulated day: negatives on one day deprecate nothing, and the users' fact, written
    # in sessions of one day, is not consolidated (no GLOBAL unit, no node proposal).
    assert report.matched["obsolete"] == [] and report.matched["consolidation"] == []
    assert not Proposal.objects.filter(kind__in=("OBSOLESCENCE", "NODE_ADD"), project__slug="sim-orbit")
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


def _proposal(kind: str, evidence: dict | None = None, ops: list | None = None) -> SimpleNamespace:
    return SimpleNamespace(kind=kind, evidence=evidence or {}, changeset=ops or [])


def test_defect_of_recognises_the_fixes_of_the_planted_defects_and_nothing_else():
    from bench.simulation.domain import FACTS, MEMORY_FACT
    from bench.simulation.runner import defect_of

    pair = ("N-billing-email", "N-invoice-recipient")
    merges = [
        _proposal("MERGE", {"survivor": pair[0], "duplicate": pair[1]}),
        _proposal("MERGE", {"a": pair[1], "b": pair[0]}),
        _proposal(  # no pair in the evidence: the nodes its changeset deprecates and redirects
            "MERGE",
            ops=[
                {"op": "node_add", "node_id": "N-billing-email.m1", "chunk": FACTS["billemail"]},
                {"op": "node_status", "node_id": pair[0], "status": "DEPRECATED", "reason": "merged"},
                {"op": "node_status", "node_id": pair[1], "status": "DEPRECATED", "reason": "merged"},
                {"op": "alias_set", "source": pair[0], "targets": ["N-billing-email.m1"]},
                {"op": "alias_set", "source": pair[1], "targets": ["N-billing-email.m1"]},
            ],
        ),
    ]
    assert [defect_of(p, {}, {}) for p in merges] == ["merge"] * 3
    assert defect_of(_proposal("MERGE", {"a": pair[0], "b": "N-invoices-overview"}), {}, {}) is None

    deprecate = {"op": "node_status", "node_id": "N-domain-verify-legacy", "status": "DEPRECATED"}
    assert defect_of(_proposal("OBSOLESCENCE", ops=[deprecate]), {}, {}) == "obsolete"
    assert (
        defect_of(_proposal("OBSOLESCENCE", ops=[{**deprecate, "node_id": "N-custom-domain"}]), {}, {})
        is None
    )

    move = {"op": "label_move", "label_id": "L00010", "cluster": "deploy", "parent": None}
    assert defect_of(_proposal("LABEL_REATTACH", ops=[move]), {}, {}) == "reattach"
    assert defect_of(_proposal("LABEL_REATTACH", ops=[{**move, "cluster": "account"}]), {}, {}) is None

    add = {"op": "node_add", "node_id": "N-mem-x", "chunk": MEMORY_FACT}
    assert defect_of(_proposal("NODE_ADD", {"consolidated": True}, [add]), {}, {}) == "consolidation"
    assert (
        defect_of(_proposal("NODE_ADD", ops=[{**add, "chunk": "Refunds are paid in Bitcoin."}]), {}, {})
        is None
    )


@pytest.mark.django_db
def test_three_simulated_days_deprecate_the_retired_action_and_consolidate_the_users_fact(
    fresh_snapshots, settings
):
    """Nights on distinct simulated days: the lifecycle and consolidation defects become findable."""
    from bench.simulation.domain import DEFECTS, MEMORY_FACT, MEMORY_WRITERS
    from bench.simulation.runner import simulate
    from inference.models import InferenceLog
    from memory.models import InfoUnit, InfoUnitEvent, Scope
    from review.models import Proposal

    settings.REVIEW_EMAIL = False
    settings.REVIEW_WEBHOOK_URL = ""
    # 500 requests a night (the command's default)
    report = simulate(seed=1, nights=3, requests=500, poison_episodes=5)

    days = {
        d.date()
        for d in InferenceLog.objects.filter(project__slug="sim-orbit").values_list("created_at", flat=True)
    }
    assert len(days) == 3  # night k on simulated day k
    assert {k for k, v in report.matched.items() if v} == {d.key for d in DEFECTS}
    assert report.precision == 1.0 and report.recall == 1.0
    assert report.autocommits == 0 and report.silence_autocommits == 0 and report.poisoning_autocommits == 0
    assert report.accuracy_after > report.accuracy_before

    # Persistent failures on three days deprecate the retired action (night 3); the expert applies it.
    [obsolete] = Proposal.objects.filter(kind="OBSOLESCENCE", project__slug="sim-orbit")
    assert report.matched["obsolete"] == [obsolete.pk]
    assert obsolete.evidence["trigger"] == "negatives" and obsolete.evidence["failure_days"] == 3
    assert obsolete.evidence["node"] == "N-domain-verify-legacy"
    assert obsolete.confidence_bin == "MID_CONF" and obsolete.status == "APPLIED"

    # The misplaced label goes to the expert on night 1 and is applied: it is not proposed again.
    [reattach] = Proposal.objects.filter(kind="LABEL_REATTACH", project__slug="sim-orbit")
    assert report.matched["reattach"] == [reattach.pk]
    assert reattach.confidence_bin == "MID_CONF" and reattach.status == "APPLIED"

    # The users' fact became one GLOBAL semantic unit backed by every writer, and the memory generator
    # proposed its node. No request asks for it, so replay sees only requests the node would take from
    # nodes that serve them: the score is negative and the proposal waits in the backlog.
    [semantic] = InfoUnit.objects.filter(project__slug="sim-orbit", scope=Scope.GLOBAL)
    support = InfoUnitEvent.objects.filter(unit=semantic, kind=InfoUnitEvent.Kind.CONSOLIDATED).last().details
    assert support["subjects"] == MEMORY_WRITERS and support["span_hours"] >= 24
    [node_add] = Proposal.objects.filter(kind="NODE_ADD", project__slug="sim-orbit")
    assert report.matched["consolidation"] == [node_add.pk]
    assert node_add.evidence["consolidated"] is True and node_add.evidence["sources"] == MEMORY_WRITERS
    assert [op["chunk"] for op in node_add.changeset if op["op"] == "node_add"] == [MEMORY_FACT]
    assert node_add.confidence_bin == "LOW_CONF" and node_add.score < 0
