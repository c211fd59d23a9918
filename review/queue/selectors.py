"""Reads of the review queue (ARG §3.4 step D): proposals awaiting a reviewer, their history, the other
review lists (sampled silent successes, SHADOW labels ready for activation) and the counts behind the
nav badge. The offline loop asks :func:`proposal_fingerprint_rejected` before proposing a candidate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from arg_platform.errors import NotFound, RuleViolation, Violation
from inference.contracts import InfoStatus
from inference.models import Feedback, InferenceLog
from projects.models import PlatformRole, Project
from review.models import OfflineRun, Proposal, ProposalDecision, ProposalStatus
from review.queue.filtersets import OPEN_STATUSES, VIEWS, ProposalFilterSet
from taxonomy.selectors import label_list

SILENT_SAMPLE_WINDOW_DAYS = 30  # samples of the nightly runs of this many past days are listed
SILENT_SAMPLE_RUNS = 60


def proposal_filterset(
    *, project: Project, params: Mapping[str, Any] | None = None, user: Any = None
) -> ProposalFilterSet:
    """The queue's filters bound to ``params`` over the project's proposals (check ``is_valid()``)."""
    base = Proposal.objects.filter(project=project).select_related(
        "assignee", "decided_by", "applied_release"
    )
    return ProposalFilterSet(data=params if params is not None else {}, queryset=base, user=user)


def proposal_list(
    *, project: Project, filters: Mapping[str, Any] | None = None, user: Any = None
) -> QuerySet[Proposal]:
    """Proposals of the queue matching ``filters`` (see ``ProposalFilterSet``); bad filters are refused."""
    filterset = proposal_filterset(project=project, params=filters, user=user)
    if not filterset.is_valid():
        raise RuleViolation(
            [
                Violation("review.filter", f"{name}: {'; '.join(str(m) for m in messages)}", name)
                for name, messages in filterset.errors.items()
            ]
        )
    return filterset.qs


def proposal_get(*, project: Project, proposal_id: int) -> Proposal:
    proposal = (
        Proposal.objects.filter(project=project, pk=proposal_id)
        .select_related("assignee", "decided_by", "applied_release", "base_release", "run")
        .first()
    )
    if proposal is None:
        raise NotFound(f"proposal #{proposal_id} not found")
    return proposal


def proposal_view_counts(*, project: Project) -> dict[str, int]:
    """How many proposals each view of the queue holds (the tabs' counts)."""
    by_status = dict(
        Proposal.objects.filter(project=project)
        .values_list("status")
        .annotate(n=Count("id"))
        .values_list("status", "n")
    )
    return {
        key: sum(by_status.values()) if not statuses else sum(by_status.get(s, 0) for s in statuses)
        for key, (_, statuses) in VIEWS.items()
    }


def proposal_kind_counts(*, queryset: QuerySet[Proposal]) -> dict[str, int]:
    """Proposals per kind in ``queryset`` (the filtered queue), largest first."""
    rows = queryset.order_by().values_list("kind").annotate(n=Count("id")).values_list("kind", "n")
    return dict(sorted(rows, key=lambda row: (-row[1], row[0])))


def proposal_decision_list(*, proposal: Proposal) -> QuerySet[ProposalDecision]:
    return proposal.decisions.select_related("actor").order_by("created_at", "id")


def proposal_fingerprint_rejected(*, project: Project, fingerprint: str) -> bool:
    """True when a reviewer rejected this exact candidate (kind + canonical changeset) in ``project``.

    The offline loop asks before proposing: a rejected candidate is not proposed again unchanged.
    """
    return Proposal.objects.filter(
        project=project, fingerprint=fingerprint, status=ProposalStatus.REJECTED
    ).exists()


def proposal_rejected_fingerprints(*, project: Project) -> dict[str, str]:
    """Every rejected fingerprint of ``project`` with the reviewer's reason (for a whole batch of candidates)."""
    rows = (
        Proposal.objects.filter(project=project, status=ProposalStatus.REJECTED)
        .order_by("decided_at", "id")
        .values_list("fingerprint", "decision_reason")
    )
    return dict(rows)


def review_pending_count(*, project: Project) -> int:
    """Proposals awaiting a reviewer (PENDING_REVIEW or CHANGES_REQUESTED): the nav badge."""
    return Proposal.objects.filter(project=project, status__in=OPEN_STATUSES).count()


def reviewer_list(*, project: Project) -> QuerySet[Any]:
    """People who may decide on proposals in ``project`` (reviewers and admins), by username."""
    return (
        get_user_model()
        .objects.filter(
            memberships__project=project,
            memberships__role__in=[PlatformRole.REVIEWER, PlatformRole.ADMIN],
            is_active=True,
        )
        .order_by("username")
        .distinct()
    )


# --- sampled silent successes (§3.4.2) ------------------------------------------------------------


def _sampled_log_ids(project: Project) -> dict[int, dict[str, Any]]:
    """The silent successes the recent nightly runs drew for review (``OfflineRun.stats["silent_samples"]``:
    weighted towards critical, risky and silence-dominated zones), newest run first."""
    since = timezone.now() - timedelta(days=SILENT_SAMPLE_WINDOW_DAYS)
    out: dict[int, dict[str, Any]] = {}
    runs = OfflineRun.objects.filter(project=project, started_at__gte=since).order_by("-started_at", "-id")
    for run in runs.only("stats", "started_at")[:SILENT_SAMPLE_RUNS]:
        for sample in (run.stats or {}).get("silent_samples") or []:
            log_id = sample.get("log_id")
            if isinstance(log_id, int) and log_id not in out:
                out[log_id] = {**sample, "run": run.pk}
    return out


def _silent_successes(project: Project) -> QuerySet[Any]:
    return InferenceLog.objects.filter(
        project=project, outcome_status=InfoStatus.UNCERTAIN, silent_outcome=True
    )


@dataclass(frozen=True)
class SilentSample:
    """A sampled silent success awaiting a reviewer's label, and why it was drawn."""

    log: Any
    zone: str
    weight: float
    run_id: int | None


def silent_sample_list(*, project: Project, limit: int = 50) -> list[SilentSample]:
    """Sampled silent Info successes that no reviewer labelled yet: heaviest zones first, then newest.

    A request whose user has since spoken (feedback) is no longer silent and drops out of the list.
    """
    sampled = _sampled_log_ids(project)
    if not sampled:
        return []
    reviewed = Feedback.objects.filter(log=OuterRef("pk"), source=Feedback.Source.REVIEWER)
    logs = (
        _silent_successes(project)
        .filter(pk__in=list(sampled))
        .annotate(reviewed=Exists(reviewed))
        .filter(reviewed=False)
    )
    rows = [
        SilentSample(
            log=log,
            zone=str(sampled[log.pk].get("zone", "")),
            weight=float(sampled[log.pk].get("weight", 1.0)),
            run_id=sampled[log.pk].get("run"),
        )
        for log in logs
    ]
    rows.sort(key=lambda s: (-s.weight, -s.log.created_at.timestamp(), -s.log.pk))
    return rows[:limit]


def silent_sample_count(*, project: Project) -> int:
    return len(silent_sample_list(project=project, limit=10_000))


def silent_sample_get(*, project: Project, request_id: str) -> Any:
    """One request of the silent-success sample (NotFound when it is not a sampled silent success)."""
    log = _silent_successes(project).filter(request_id=request_id).first()
    if log is None or log.pk not in _sampled_log_ids(project):
        raise NotFound(f"request {request_id} is not a sampled silent success of this project")
    return log


@dataclass(frozen=True)
class SilentReviewSummary:
    """What reviewers found in the sample: the hidden error rate of silent successes (§3.4.2)."""

    labelled: int
    helpful: int
    not_helpful: int

    @property
    def hidden_error_rate(self) -> float | None:
        return self.not_helpful / self.labelled if self.labelled else None


def silent_review_summary(*, project: Project) -> SilentReviewSummary:
    """Reviewer labels of silent successes in ``project`` (for C_info and threshold recalibration)."""
    labels = Feedback.objects.filter(log__project=project, source=Feedback.Source.REVIEWER)
    counts = labels.aggregate(
        yes=Count("id", filter=Q(helpful=True)), no=Count("id", filter=Q(helpful=False))
    )
    return SilentReviewSummary(
        labelled=counts["yes"] + counts["no"], helpful=counts["yes"], not_helpful=counts["no"]
    )


# --- SHADOW labels ready for activation (§3.2.4.1) ------------------------------------------------


def shadow_label_list(*, project: Project) -> QuerySet[Any]:
    """Labels in SHADOW (routable for evaluation, not yet ACTIVE), longest in shadow first."""
    return label_list(project=project, status="SHADOW").order_by("status_changed_at", "label_id")
