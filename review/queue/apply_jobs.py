"""Applying approved proposals as a job: what "approve now" and "publish approved" start.

A reviewer's approval itself is quick and committed in the request (``decisions.proposal_mark_approved``);
applying the approved changesets and publishing *active release + changesets* is long, so it is a job
(kind ``review.apply_approved``, ``arg_platform.jobs``) run by the ``review.apply_approved`` task:
``apply_job_work`` is ``decisions.proposals_apply_approved`` with the job recorded on the release. A
job whose release exists already (its worker was killed after the release committed) returns it; the
proposals it applied are APPLIED, so nothing applies twice.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.db import transaction

from arg_platform.errors import DomainError, RuleViolation, Violation
from arg_platform.jobs import Progress, job_enqueue, job_open, job_task_execute
from arg_platform.models import Job
from ontology.models import Release
from projects.models import Project
from review.models import Proposal, ProposalStatus
from review.queue import decisions

APPLY_JOB = "review.apply_approved"


def approval_result(approval: decisions.Approval) -> dict[str, Any]:
    """An apply job's result: the release, the proposals applied, failed (FAILED) and blocked."""
    release = approval.release
    if release is not None:
        applied = ", ".join(f"#{pk}" for pk in approval.applied)
        detail = f"release v{release.version} published with proposal(s) {applied}"
    else:
        detail = "no proposal could be applied: nothing published"
    return {
        "release": release.version if release else None,
        "release_id": release.pk if release else None,
        "applied": list(approval.applied),
        "failed": {str(k): v for k, v in approval.failed.items()},
        "blocked": {str(k): v for k, v in approval.blocked.items()},
        "detail": detail,
    }


def apply_job_open(*, project: Project, actor: Any, first: Proposal | None = None) -> Job:
    """Open the job applying every APPROVED proposal of ``project`` and queue it on commit.

    Refused (``review.nothing_approved``) when no proposal is APPROVED.
    """
    if not Proposal.objects.filter(project=project, status=ProposalStatus.APPROVED).exists():
        raise RuleViolation(Violation("review.nothing_approved", "no approved proposal is waiting", "status"))
    job, _ = job_open(
        kind=APPLY_JOB,
        project=project,
        actor=actor,
        params={"first": first.pk if first is not None else None},
    )
    job_enqueue(job, proposals_apply_task)
    return job


@transaction.atomic
def proposal_approve_now(*, proposal: Proposal, actor: Any, reason: str = "") -> tuple[Proposal, Job]:
    """Approve ``proposal`` (mode "now") and open the job that applies it with the approved batch."""
    proposal = decisions.proposal_mark_approved(proposal=proposal, actor=actor, reason=reason, mode="now")
    return proposal, apply_job_open(project=proposal.project, actor=actor, first=proposal)


def apply_job_work(job: Job, progress: Progress) -> dict[str, Any]:
    """Apply the project's APPROVED proposals and publish one release (once per job)."""
    done = Release.objects.filter(job_id=job.pk).first()
    if done is not None:
        applied = list(done.applied_proposals.values_list("pk", flat=True))
        proposal = Proposal.objects.filter(pk__in=applied).first()
        return approval_result(decisions.Approval(proposal=proposal, release=done, applied=applied))  # type: ignore[arg-type]
    waiting = Proposal.objects.filter(project=job.project, status=ProposalStatus.APPROVED).count()
    progress(0.1, f"applying {waiting} approved proposal(s) to the active release and publishing")
    assert job.project is not None  # apply_job_open gives an application job its project
    first = Proposal.objects.filter(pk=job.params.get("first") or 0, project=job.project).first()
    approval = decisions.proposals_apply_approved(
        project=job.project, actor=job.created_by, first=first, job_id=job.pk
    )
    if approval.error:  # nothing could be published at all: the job failed, the proposals stay APPROVED
        raise DomainError(approval.error)
    return approval_result(approval)


@shared_task(
    name="review.apply_approved", bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=2
)
def proposals_apply_task(self: Any, job_id: int) -> dict[str, Any]:
    """Apply the approved proposals of the job's project and publish (``apply_job_work``)."""
    return job_task_execute(self, job_id, apply_job_work)
