"""Services of the human review queue (ARG §3.4 step D, MID_CONF): a reviewer's decisions on proposals.

Every decision locks the proposal row, checks that it is still open to that decision, changes its
status, and writes one ``ProposalDecision`` row (who, when, why, what changed) plus one audit event, in
one transaction. Nothing here applies a changeset itself: approval hands the proposal to
``review.loop.application`` (the lifecycle application), which writes the draft through the ontology and
taxonomy services, runs the integrity test and publishes a release — so a decision is reversible by
re-activating the previous release (rollback).

* **claim / assign** — who is looking at it (no status change);
* **approve** — APPROVED, then either applied *now* (published in a new release together with every
  proposal approved earlier in *batch* mode) or left APPROVED for the next application to include;
* **reject** — REJECTED with a mandatory reason; the proposal's fingerprint stays on record so that the
  offline loop does not propose the same candidate again unchanged
  (``review.queue.selectors.proposal_fingerprint_rejected``);
* **request changes** — CHANGES_REQUESTED with what should change; an **edit** of the title, summary or
  changeset (titles, attachments, child labels…) by an expert or a reviewer is validated against the
  draft like an approval would be, and puts the proposal back to PENDING_REVIEW;
* **defer** — DEFERRED (out of the open queue until someone picks it again).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from arg_platform.audit import audit_record
from arg_platform.errors import DomainError, RuleViolation, Violation
from inference.feedback import feedback_record
from inference.models import Feedback
from ontology.models import Release
from projects.models import Project
from review.changeset import changeset_dump, changeset_fingerprint, changeset_load, changeset_targets
from review.models import Proposal, ProposalDecision, ProposalStatus
from review.queue.filtersets import DECIDABLE_STATUSES
from review.queue.preview import changeset_preview
from review.queue.selectors import reviewer_list, silent_sample_get
from taxonomy.selectors import label_get
from taxonomy.services import label_set_status

Action = ProposalDecision.Action
REASON_MAX = 1000


# --- shared steps -----------------------------------------------------------------------------------


def _user(actor: Any) -> Any:
    return (
        actor
        if getattr(actor, "pk", None) is not None and getattr(actor, "is_authenticated", False)
        else None
    )


def _lock(proposal: Proposal) -> Proposal:
    return (
        Proposal.objects.select_for_update(of=("self",))
        .select_related("project", "assignee")
        .get(pk=proposal.pk)
    )


def _require_open(proposal: Proposal, verb: str) -> None:
    if proposal.status not in DECIDABLE_STATUSES:
        raise RuleViolation(
            Violation(
                "review.decision_status",
                f"proposal #{proposal.pk} is {proposal.status}: it cannot be {verb} "
                f"(only {', '.join(DECIDABLE_STATUSES)} proposals can)",
                "status",
            )
        )


def _require_reason(reason: str, what: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise RuleViolation(Violation("review.reason_required", f"{what} needs a reason", "reason"))
    if len(reason) > REASON_MAX:
        raise RuleViolation(
            Violation("review.reason_length", f"the reason is limited to {REASON_MAX} characters", "reason")
        )
    return reason


def _record(
    proposal: Proposal,
    *,
    action: str,
    actor: Any,
    status_before: str,
    reason: str = "",
    changes: dict[str, Any] | None = None,
) -> ProposalDecision:
    """The decision row and its audit event (call inside the transaction of the change)."""
    name = getattr(actor, "username", "") or (str(actor) if actor is not None else "system")
    decision = ProposalDecision.objects.create(
        proposal=proposal,
        action=action,
        actor=_user(actor),
        actor_name=name[:150],
        reason=reason[:REASON_MAX],
        status_before=status_before,
        status_after=proposal.status,
        changes=changes or {},
    )
    audit_record(
        project=proposal.project,
        actor=actor,
        action=f"proposal_{action.lower()}",
        object_type="proposal",
        object_key=str(proposal.pk),
        before={"status": status_before},
        after={"status": proposal.status, **(changes or {})},
        reason=reason,
    )
    return decision


def _decide(proposal: Proposal, *, status: str, actor: Any, reason: str) -> None:
    proposal.status = status
    proposal.decided_by = _user(actor)
    proposal.decided_at = timezone.now()
    proposal.decision_reason = reason[:REASON_MAX]
    proposal.save(update_fields=["status", "decided_by", "decided_at", "decision_reason", "updated_at"])


# --- claim and assign -------------------------------------------------------------------------------


@transaction.atomic
def proposal_claim(*, proposal: Proposal, actor: Any) -> Proposal:
    """Take an open proposal for review (it shows as yours in the queue).

    Claiming one that is already yours changes nothing; one claimed by someone else is refused
    (reassign it explicitly with :func:`proposal_assign`).
    """
    proposal = _lock(proposal)
    _require_open(proposal, "claimed")
    if proposal.assignee_id == getattr(actor, "pk", None):
        return proposal
    if proposal.assignee is not None:
        raise RuleViolation(
            Violation(
                "review.already_claimed",
                f"proposal #{proposal.pk} is already claimed by {proposal.assignee.get_username()}",
                "assignee",
            )
        )
    proposal.assignee = _user(actor)
    proposal.save(update_fields=["assignee", "updated_at"])
    _record(
        proposal,
        action=Action.CLAIM,
        actor=actor,
        status_before=proposal.status,
        changes={"assignee": getattr(actor, "username", "")},
    )
    return proposal


@transaction.atomic
def proposal_assign(*, proposal: Proposal, actor: Any, assignee: Any | None, reason: str = "") -> Proposal:
    """Give an open proposal to a reviewer of its project (or to nobody: ``assignee=None``)."""
    proposal = _lock(proposal)
    _require_open(proposal, "assigned")
    if assignee is not None and not reviewer_list(project=proposal.project).filter(pk=assignee.pk).exists():
        raise RuleViolation(
            Violation(
                "review.assignee_role",
                f"{assignee.get_username()} is not a reviewer of this project",
                "assignee",
            )
        )
    before = proposal.assignee.get_username() if proposal.assignee is not None else ""
    after = assignee.get_username() if assignee is not None else ""
    if before == after:
        return proposal
    proposal.assignee = assignee
    proposal.save(update_fields=["assignee", "updated_at"])
    _record(
        proposal,
        action=Action.CLAIM,
        actor=actor,
        status_before=proposal.status,
        reason=reason.strip(),
        changes={"assignee": after, "previous_assignee": before},
    )
    return proposal


# --- approve ----------------------------------------------------------------------------------------


@dataclass
class Approval:
    """What approving did: the proposal as it stands now and, when it was applied, the release.

    ``failed`` maps proposals that the application refused (they are FAILED, with the reason) to that
    reason; ``blocked`` maps proposals that collide with unpublished draft edits (they keep their status
    until the draft is published) to the reason; ``error`` is set when the release could not be
    published at all (the proposals stay APPROVED).
    """

    proposal: Proposal
    release: Release | None = None
    applied: list[int] = field(default_factory=list)
    failed: dict[int, str] = field(default_factory=dict)
    blocked: dict[int, str] = field(default_factory=dict)
    error: str = ""


@transaction.atomic
def proposal_mark_approved(*, proposal: Proposal, actor: Any, reason: str, mode: str) -> Proposal:
    """APPROVED, after checking the changeset against the draft; ``mode`` ("now" or "batch") is recorded
    with the decision. Applying it is the caller's business (``proposal_approve``, the apply job)."""
    proposal = _lock(proposal)
    _require_open(proposal, "approved")
    changeset_preview(project=proposal.project, changeset=proposal.changeset).raise_if_problems()
    before = proposal.status
    _decide(proposal, status=ProposalStatus.APPROVED, actor=actor, reason=reason)
    _record(
        proposal,
        action=Action.APPROVE,
        actor=actor,
        status_before=before,
        reason=reason,
        changes={"mode": mode},
    )
    return proposal


def proposal_approve(*, proposal: Proposal, actor: Any, reason: str = "", apply_now: bool = True) -> Approval:
    """Approve an open proposal; with ``apply_now`` also apply it and publish (see the module doc).

    The changeset is first checked against the current draft (it must still apply and pass the
    validators and the integrity test); a refusal changes nothing. The approval itself is committed
    before the application starts: if the application then refuses the changeset, the proposal is
    FAILED with the reason (``Approval.failed``) and the draft and releases are unchanged.
    """
    reason = (reason or "").strip()[:REASON_MAX]
    proposal = proposal_mark_approved(
        proposal=proposal, actor=actor, reason=reason, mode="now" if apply_now else "batch"
    )
    if not apply_now:
        return Approval(proposal=proposal)
    result = proposals_apply_approved(project=proposal.project, actor=actor, first=proposal)
    result.proposal.refresh_from_db()
    return result


def proposals_apply_approved(
    *, project: Project, actor: Any, first: Proposal | None = None, job_id: int | None = None
) -> Approval:
    """Apply every APPROVED proposal of ``project`` (oldest approval first) and publish one release.

    This is how batched approvals reach a release: the next *apply now* or the queue's "publish approved"
    button includes them. Returns what happened (``Approval.proposal`` is ``first`` or the first applied).
    ``job_id`` is the job doing it (``review.queue.apply_jobs``), recorded on the release it publishes.
    """
    from review.loop.application import proposals_apply

    ids = list(
        Proposal.objects.filter(project=project, status=ProposalStatus.APPROVED)
        .order_by("decided_at", "id")
        .values_list("pk", flat=True)
    )
    if first is not None and first.pk in ids:  # the one approved just now goes last: it was decided last
        ids.remove(first.pk)
        ids.append(first.pk)
    if not ids:
        raise RuleViolation(Violation("review.nothing_approved", "no approved proposal is waiting", "status"))
    titles = ", ".join(f"#{pk}" for pk in ids)
    try:
        batch = proposals_apply(
            project=project,
            proposal_ids=ids,
            actor=actor,
            notes=f"reviewed proposals {titles}",
            job_id=job_id,
        )
    except DomainError as exc:
        subject = first or Proposal.objects.get(pk=ids[0])
        return Approval(proposal=subject, error=exc.message)
    subject = first or Proposal.objects.get(pk=(batch.applied or ids)[0])
    return Approval(
        proposal=subject,
        release=batch.release,
        applied=list(batch.applied),
        failed=dict(batch.failed),
        blocked=dict(batch.blocked),
    )


# --- reject, request changes, defer -----------------------------------------------------------------


@transaction.atomic
def proposal_reject(*, proposal: Proposal, actor: Any, reason: str) -> Proposal:
    """Reject an open proposal (a reason is required); its fingerprint is remembered by the loop."""
    reason = _require_reason(reason, "rejecting a proposal")
    proposal = _lock(proposal)
    _require_open(proposal, "rejected")
    before = proposal.status
    _decide(proposal, status=ProposalStatus.REJECTED, actor=actor, reason=reason)
    _record(
        proposal,
        action=Action.REJECT,
        actor=actor,
        status_before=before,
        reason=reason,
        changes={"fingerprint": proposal.fingerprint},
    )
    return proposal


@transaction.atomic
def proposal_request_changes(*, proposal: Proposal, actor: Any, reason: str) -> Proposal:
    """Send an open proposal back for edits (say what should change); an edit reopens it for review."""
    reason = _require_reason(reason, "requesting changes")
    proposal = _lock(proposal)
    _require_open(proposal, "sent back for changes")
    before = proposal.status
    _decide(proposal, status=ProposalStatus.CHANGES_REQUESTED, actor=actor, reason=reason)
    _record(proposal, action=Action.REQUEST_CHANGES, actor=actor, status_before=before, reason=reason)
    return proposal


@transaction.atomic
def proposal_defer(*, proposal: Proposal, actor: Any, reason: str = "") -> Proposal:
    """Put an open proposal aside (DEFERRED); it can be decided later from the *deferred* view."""
    reason = (reason or "").strip()[:REASON_MAX]
    proposal = _lock(proposal)
    _require_open(proposal, "deferred")
    if proposal.status == ProposalStatus.DEFERRED:
        return proposal
    before = proposal.status
    _decide(proposal, status=ProposalStatus.DEFERRED, actor=actor, reason=reason)
    _record(proposal, action=Action.DEFER, actor=actor, status_before=before, reason=reason)
    return proposal


# --- edit -------------------------------------------------------------------------------------------


def _ops_diff(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> dict[str, Any]:
    """Which operations an edit changed, by position (a compact record for the decision row)."""
    changed = []
    for index in range(max(len(before), len(after))):
        a = before[index] if index < len(before) else None
        b = after[index] if index < len(after) else None
        if a == b:
            continue
        fields_changed = sorted(
            k for k in set(a or {}) | set(b or {}) if (a or {}).get(k) != (b or {}).get(k)
        )
        changed.append(
            {
                "index": index,
                "op": (b or a or {}).get("op", ""),
                "fields": fields_changed,
                "before": {k: (a or {}).get(k) for k in fields_changed} if a else None,
                "after": {k: (b or {}).get(k) for k in fields_changed} if b else None,
            }
        )
    return {"operations": changed}


@transaction.atomic
def proposal_edit(
    *,
    proposal: Proposal,
    actor: Any,
    title: str | None = None,
    summary: str | None = None,
    changeset: list[dict[str, Any]] | None = None,
    reason: str = "",
) -> Proposal:
    """Edit an open proposal before it is approved: its title, summary and changeset operations.

    The edited changeset is read with ``changeset_load`` (shape), then applied in memory to the draft and
    checked by the validators and the integrity test; any refusal changes nothing. A proposal waiting
    for changes goes back to PENDING_REVIEW. The fingerprint is kept: it names the candidate the loop
    generated, so rejecting an edited proposal still stops that candidate from coming back.
    """
    proposal = _lock(proposal)
    _require_open(proposal, "edited")
    changes: dict[str, Any] = {}
    update_fields = ["updated_at"]
    if title is not None:
        title = title.strip()
        if not title:
            raise RuleViolation(Violation("review.title_required", "a proposal needs a title", "title"))
        if len(title) > 200:
            raise RuleViolation(
                Violation("review.title_length", "titles are limited to 200 characters", "title")
            )
        if title != proposal.title:
            changes["title"] = {"before": proposal.title, "after": title}
            proposal.title = title
            update_fields.append("title")
    if summary is not None and summary.strip() != proposal.summary:
        changes["summary"] = {"before": proposal.summary, "after": summary.strip()}
        proposal.summary = summary.strip()
        update_fields.append("summary")
    if changeset is not None:
        ops = changeset_load(changeset)
        normalized = changeset_dump(ops)
        if normalized != proposal.changeset:
            changeset_preview(project=proposal.project, changeset=normalized).raise_if_problems()
            changes["changeset"] = _ops_diff(proposal.changeset, normalized)
            changes["changeset"]["fingerprint_after_edit"] = changeset_fingerprint(proposal.kind, ops)
            proposal.changeset = normalized
            proposal.target_keys = changeset_targets(ops)
            update_fields += ["changeset", "target_keys"]
    if not changes:
        return proposal
    before = proposal.status
    if proposal.status == ProposalStatus.CHANGES_REQUESTED:
        proposal.status = ProposalStatus.PENDING_REVIEW
        update_fields.append("status")
    proposal.save(update_fields=update_fields)
    _record(
        proposal,
        action=Action.EDIT,
        actor=actor,
        status_before=before,
        reason=(reason or "").strip(),
        changes=json.loads(json.dumps(changes, default=str)),
    )
    return proposal


# --- the other review lists -------------------------------------------------------------------------


def silent_success_label(
    *, project: Project, request_id: str, actor: Any, helpful: bool, comment: str = ""
) -> Any:
    """A reviewer's verdict on a sampled silent Info success (§3.4.2): truly helpful or not.

    Recorded through inference's feedback path as a *reviewer* label: the request stays silent and
    UNCERTAIN (silence never becomes a confirmation), while the label feeds the hidden-error-rate
    estimate used to recalibrate C_info, the silence penalty and the confidence thresholds.
    """
    log = silent_sample_get(project=project, request_id=request_id)
    with transaction.atomic():
        log = feedback_record(
            project_id=project.pk,
            request_id=log.request_id,
            kind=Feedback.Kind.HELPFUL,
            helpful=helpful,
            comment=comment.strip(),
            idempotency_key=f"reviewer:{getattr(actor, 'pk', '')}",
            source=Feedback.Source.REVIEWER,
            reviewer=actor,
        )
        audit_record(
            project=project,
            actor=actor,
            action="review_label",
            object_type="request",
            object_key=log.request_id,
            after={"helpful": helpful, "source": Feedback.Source.REVIEWER},
            reason=comment.strip(),
        )
    return log


def shadow_label_activate(*, project: Project, label_id: str, actor: Any, reason: str = "") -> Any:
    """Promote a SHADOW label to ACTIVE after its shadow evaluation (through the taxonomy service).

    The draft changes at once; clients see the label from the next release on.
    """
    label = label_get(project=project, label_id=label_id)
    if label.status != "SHADOW":
        raise RuleViolation(
            Violation(
                "review.label_not_shadow",
                f"{label.label_id} is {label.status}: only SHADOW labels are activated from review",
                "status",
            )
        )
    return label_set_status(
        label=label,
        actor=actor,
        status="ACTIVE",
        reason=(reason or "").strip() or "activated after shadow review",
    )
