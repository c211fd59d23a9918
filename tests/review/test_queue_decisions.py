"""Reviewer decisions (review.queue.decisions): approve now or in a batch, reject, request changes, edit,
defer, claim and assign — each one audited, approvals applied through the lifecycle application."""

from __future__ import annotations

import pytest

from arg_platform.errors import RuleViolation
from arg_platform.models import AuditEvent
from ontology.models import Release
from ontology.store import get_graph_store
from review.models import ProposalDecision, ProposalStatus
from review.queue import decisions
from review.queue.selectors import proposal_fingerprint_rejected, proposal_rejected_fingerprints
from taxonomy.models import Label

from .queue_fixtures import (
    MERGE_AB,
    MERGE_DUPLICATE,
    MERGE_SURVIVOR,
    SPLIT_BULK,
    SPLIT_PARENT,
    SPLIT_PDF,
    merge_changeset,
    split_changeset,
    user,
    weight_changeset,
)

pytestmark = pytest.mark.django_db


def _state(project):
    """What a refused decision must leave untouched."""
    from review.models import Proposal

    return (
        list(
            Proposal.objects.filter(project=project).values_list(
                "pk", "status", "title", "changeset", "assignee"
            )
        ),
        ProposalDecision.objects.filter(proposal__project=project).count(),
        AuditEvent.objects.filter(project=project).count(),
        Release.objects.filter(project=project).count(),
    )


def test_approving_a_split_now_applies_it_and_publishes_a_release(demo, make_proposal):
    proposal = make_proposal(
        demo, kind="SPLIT", changeset=split_changeset(), title="Split Download an invoice"
    )
    reviewer = user("rob-reviewer")

    approval = decisions.proposal_approve(proposal=proposal, actor=reviewer, reason="two clear intents")

    proposal.refresh_from_db()
    assert approval.error == ""
    assert approval.failed == {}
    assert approval.applied == [proposal.pk]
    assert approval.release.version == 2 and approval.release.is_active
    assert proposal.status == ProposalStatus.APPLIED
    assert proposal.applied_release == approval.release
    assert proposal.decided_by == reviewer
    assert proposal.decision_reason == "two clear intents"
    store = get_graph_store()
    assert store.get_node(demo.pk, SPLIT_PARENT).status == "DEPRECATED"
    assert store.get_node(demo.pk, SPLIT_PDF).status == "ACTIVE"
    assert store.resolve_alias(demo.pk, SPLIT_PARENT) == (SPLIT_PDF, SPLIT_BULK)
    bulk = Label.objects.get(project=demo, name="Bulk invoice export")
    assert (bulk.status, bulk.parent.label_id) == ("SHADOW", "L00002")
    assert store.get_node(demo.pk, SPLIT_BULK).labels == ("L00002", bulk.label_id)
    actions = list(proposal.decisions.values_list("action", "status_before", "status_after", "actor_name"))
    assert actions == [
        ("APPROVE", "PENDING_REVIEW", "APPROVED", "rob-reviewer"),
        ("APPLY", "APPROVED", "APPLIED", "rob-reviewer"),
    ]
    event = AuditEvent.objects.get(project=demo, object_type="proposal", action="proposal_approve")
    assert (event.object_key, event.actor, event.reason) == (str(proposal.pk), reviewer, "two clear intents")
    assert event.after == {"status": "APPROVED", "mode": "now"}


def test_batched_approvals_wait_and_ride_with_the_next_application(demo, make_proposal):
    split = make_proposal(demo, kind="SPLIT", changeset=split_changeset(), title="Split")
    merge = make_proposal(demo, kind="MERGE", changeset=merge_changeset(demo), title="Merge TLS answers")
    reviewer = user("rob-reviewer")

    batched = decisions.proposal_approve(proposal=split, actor=reviewer, apply_now=False)

    split.refresh_from_db()
    assert batched.release is None
    assert split.status == ProposalStatus.APPROVED
    assert Release.objects.filter(project=demo).count() == 1
    assert get_graph_store().get_node(demo.pk, SPLIT_PARENT).status == "ACTIVE"

    approval = decisions.proposal_approve(proposal=merge, actor=reviewer, reason="same answer twice")

    split.refresh_from_db()
    merge.refresh_from_db()
    assert approval.applied == [split.pk, merge.pk]
    assert approval.release.version == 2
    assert (split.status, merge.status) == (ProposalStatus.APPLIED, ProposalStatus.APPLIED)
    assert split.applied_release == merge.applied_release == approval.release
    store = get_graph_store()
    for merged in (MERGE_SURVIVOR, MERGE_DUPLICATE):
        assert store.get_node(demo.pk, merged).status == "DEPRECATED"
        assert store.resolve_alias(demo.pk, merged) == (MERGE_AB,)
    assert store.get_node(demo.pk, MERGE_AB).status == "ACTIVE"
    assert store.get_node(demo.pk, MERGE_AB).title == store.get_node(demo.pk, MERGE_SURVIVOR).title


def test_publishing_the_approved_batch_alone(demo, make_proposal):
    merge = make_proposal(demo, kind="MERGE", changeset=merge_changeset(demo))
    reviewer = user("rob-reviewer")
    decisions.proposal_approve(proposal=merge, actor=reviewer, apply_now=False)

    result = decisions.proposals_apply_approved(project=demo, actor=reviewer)

    merge.refresh_from_db()
    assert result.applied == [merge.pk]
    assert merge.status == ProposalStatus.APPLIED and merge.applied_release.version == 2
    with pytest.raises(RuleViolation) as exc:
        decisions.proposals_apply_approved(project=demo, actor=reviewer)
    assert exc.value.violations[0].rule == "review.nothing_approved"


def test_an_approval_that_no_longer_applies_is_refused_and_changes_nothing(demo, make_proposal):
    from review.changeset import EdgeSetWeight, changeset_dump

    stale = make_proposal(
        demo,
        changeset=changeset_dump(
            [EdgeSetWeight("N-billing-triage", "N-deploy-triage", "LEADS_TO", 0.9, 0.4)]
        ),
    )
    before = _state(demo)

    with pytest.raises(RuleViolation) as exc:
        decisions.proposal_approve(proposal=stale, actor=user("rob-reviewer"))

    assert [v.rule for v in exc.value.violations] == ["review.apply_conflict"]
    assert "does not exist" in exc.value.violations[0].message
    assert _state(demo) == before


def test_reject_needs_a_reason_and_remembers_the_fingerprint(tiny, make_proposal):
    proposal = make_proposal(tiny, changeset=weight_changeset())
    reviewer = user("rob-reviewer")
    before = _state(tiny)

    with pytest.raises(RuleViolation) as exc:
        decisions.proposal_reject(proposal=proposal, actor=reviewer, reason="   ")
    assert exc.value.violations[0].rule == "review.reason_required"
    assert _state(tiny) == before
    assert proposal_fingerprint_rejected(project=tiny, fingerprint=proposal.fingerprint) is False

    decisions.proposal_reject(proposal=proposal, actor=reviewer, reason="resend must stay a second choice")

    proposal.refresh_from_db()
    assert proposal.status == ProposalStatus.REJECTED
    assert proposal.decision_reason == "resend must stay a second choice"
    assert proposal_fingerprint_rejected(project=tiny, fingerprint=proposal.fingerprint) is True
    assert proposal_rejected_fingerprints(project=tiny) == {
        proposal.fingerprint: "resend must stay a second choice"
    }
    decision = proposal.decisions.get()
    assert (decision.action, decision.reason, decision.changes) == (
        "REJECT",
        "resend must stay a second choice",
        {"fingerprint": proposal.fingerprint},
    )
    with pytest.raises(RuleViolation) as again:
        decisions.proposal_approve(proposal=proposal, actor=reviewer)
    assert again.value.violations[0].rule == "review.decision_status"


def test_a_rejected_fingerprint_is_per_project(tiny, make_proposal, make_project):
    other = make_project("globex")
    proposal = make_proposal(tiny, changeset=weight_changeset())
    decisions.proposal_reject(proposal=proposal, actor=user("rob-reviewer"), reason="no")
    assert proposal_fingerprint_rejected(project=other, fingerprint=proposal.fingerprint) is False


def test_request_changes_then_an_expert_edit_reopens_the_proposal(tiny, make_proposal):
    proposal = make_proposal(tiny, changeset=weight_changeset(0.85), title="Reinforce resend")
    reviewer, expert = user("rob-reviewer"), user("erin-expert")

    decisions.proposal_request_changes(
        proposal=proposal, actor=reviewer, reason="0.85 is too strong; use 0.75"
    )
    proposal.refresh_from_db()
    assert proposal.status == ProposalStatus.CHANGES_REQUESTED

    decisions.proposal_edit(
        proposal=proposal,
        actor=expert,
        title="Reinforce resend a little",
        changeset=weight_changeset(0.75),
        reason="as asked",
    )

    proposal.refresh_from_db()
    assert proposal.status == ProposalStatus.PENDING_REVIEW
    assert proposal.title == "Reinforce resend a little"
    assert proposal.changeset[0]["weight"] == 0.75
    edit = proposal.decisions.get(action="EDIT")
    assert (edit.actor, edit.status_before, edit.status_after, edit.reason) == (
        expert,
        "CHANGES_REQUESTED",
        "PENDING_REVIEW",
        "as asked",
    )
    assert edit.changes["title"] == {"before": "Reinforce resend", "after": "Reinforce resend a little"}
    assert edit.changes["changeset"]["operations"] == [
        {
            "index": 0,
            "op": "edge_weight",
            "fields": ["weight"],
            "before": {"weight": 0.85},
            "after": {"weight": 0.75},
        }
    ]


def test_an_edit_that_breaks_the_changeset_is_refused_and_changes_nothing(tiny, make_proposal):
    from review.changeset import EdgeAdd, changeset_dump

    proposal = make_proposal(tiny, changeset=weight_changeset())
    before = _state(tiny)

    with pytest.raises(RuleViolation) as shape:
        decisions.proposal_edit(
            proposal=proposal, actor=user("erin-expert"), changeset=[{"op": "node_teleport"}]
        )
    assert shape.value.violations[0].rule == "review.changeset"

    with pytest.raises(RuleViolation) as conflict:
        decisions.proposal_edit(
            proposal=proposal,
            actor=user("erin-expert"),
            changeset=changeset_dump([EdgeAdd("N-invoice-download", "N-nowhere", "LEADS_TO", 0.5)]),
        )
    assert conflict.value.violations[0].rule == "review.apply_conflict"

    with pytest.raises(RuleViolation) as title:
        decisions.proposal_edit(proposal=proposal, actor=user("erin-expert"), title="  ")
    assert title.value.violations[0].rule == "review.title_required"
    assert _state(tiny) == before


def test_edit_of_child_label_and_attachments_is_validated_by_the_taxonomy_rules(demo, make_proposal):
    proposal = make_proposal(demo, kind="SPLIT", changeset=split_changeset())
    edited = [dict(op) for op in proposal.changeset]
    edited[0] = {**edited[0], "cluster": "deployments"}  # under L00002, which is a billing label
    before = _state(demo)

    with pytest.raises(RuleViolation) as exc:
        decisions.proposal_edit(proposal=proposal, actor=user("erin-expert"), changeset=edited)

    assert exc.value.violations[0].rule.startswith("taxonomy.")
    assert _state(demo) == before

    renamed = [dict(op) for op in proposal.changeset]
    renamed[0] = {**renamed[0], "name": "Invoice exports"}
    renamed[2] = {**renamed[2], "title": "Export many invoices", "labels": ["new:bulk"]}
    decisions.proposal_edit(proposal=proposal, actor=user("rob-reviewer"), changeset=renamed)
    proposal.refresh_from_db()
    assert proposal.changeset[0]["name"] == "Invoice exports"
    assert proposal.changeset[2]["labels"] == ["new:bulk"]
    assert proposal.target_keys == sorted(proposal.target_keys)


def test_defer_and_decide_later(tiny, make_proposal):
    proposal = make_proposal(tiny, changeset=weight_changeset())
    reviewer = user("rob-reviewer")
    decisions.proposal_defer(proposal=proposal, actor=reviewer, reason="wait for more confirmed outcomes")
    proposal.refresh_from_db()
    assert proposal.status == ProposalStatus.DEFERRED

    approval = decisions.proposal_approve(proposal=proposal, actor=reviewer)

    assert approval.proposal.status == ProposalStatus.APPLIED
    assert list(proposal.decisions.values_list("action", flat=True)) == ["DEFER", "APPROVE", "APPLY"]


def test_claim_and_assign(tiny, make_proposal):
    proposal = make_proposal(tiny, changeset=weight_changeset())
    rob, rita, erin = user("rob-reviewer"), user("rita-reviewer"), user("erin-expert")

    decisions.proposal_claim(proposal=proposal, actor=rob)
    decisions.proposal_claim(proposal=proposal, actor=rob)  # already mine: nothing new
    proposal.refresh_from_db()
    assert proposal.assignee == rob
    assert proposal.decisions.count() == 1

    with pytest.raises(RuleViolation) as taken:
        decisions.proposal_claim(proposal=proposal, actor=rita)
    assert taken.value.violations[0].rule == "review.already_claimed"

    with pytest.raises(RuleViolation) as role:
        decisions.proposal_assign(proposal=proposal, actor=rob, assignee=erin)
    assert role.value.violations[0].rule == "review.assignee_role"

    decisions.proposal_assign(proposal=proposal, actor=rob, assignee=rita, reason="billing is hers")
    proposal.refresh_from_db()
    assert proposal.assignee == rita
    last = proposal.decisions.last()
    assert (last.action, last.changes) == (
        "CLAIM",
        {"assignee": "rita-reviewer", "previous_assignee": "rob-reviewer"},
    )
    decisions.proposal_assign(proposal=proposal, actor=rita, assignee=None)
    proposal.refresh_from_db()
    assert proposal.assignee is None


def test_closed_proposals_take_no_decision(tiny, make_proposal):
    applied = make_proposal(tiny, changeset=weight_changeset(), status=ProposalStatus.APPLIED)
    backlog = make_proposal(tiny, changeset=weight_changeset(0.9), status=ProposalStatus.BACKLOG)
    reviewer = user("rob-reviewer")
    before = _state(tiny)
    for proposal in (applied, backlog):
        for call in (
            lambda p: decisions.proposal_approve(proposal=p, actor=reviewer),
            lambda p: decisions.proposal_reject(proposal=p, actor=reviewer, reason="no"),
            lambda p: decisions.proposal_request_changes(proposal=p, actor=reviewer, reason="no"),
            lambda p: decisions.proposal_defer(proposal=p, actor=reviewer),
            lambda p: decisions.proposal_edit(proposal=p, actor=reviewer, title="x"),
            lambda p: decisions.proposal_claim(proposal=p, actor=reviewer),
        ):
            with pytest.raises(RuleViolation) as exc:
                call(proposal)
            assert exc.value.violations[0].rule == "review.decision_status"
    assert _state(tiny) == before
