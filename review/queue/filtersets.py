"""The one filter definition of the review queue, shared by the web page and the REST API.

The queue shows proposals of one project by *view* (which part of the lifecycle: open items awaiting a
reviewer, deferred, approved and waiting for the next release, applied, rejected, the LOW_CONF backlog
or everything) and narrows them by kind, confidence bin, cluster, a label or node key the change
touches, Score(C), age and assignee; ``ordering`` sorts them.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import django_filters
from django.db.models import Q, QuerySet, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from review.models import ConfidenceBin, Proposal, ProposalKind, ProposalStatus

OPEN_STATUSES: tuple[str, ...] = (ProposalStatus.PENDING_REVIEW, ProposalStatus.CHANGES_REQUESTED)
"""Awaiting a reviewer: what the queue shows by default and what the nav badge counts."""

DECIDABLE_STATUSES: tuple[str, ...] = (*OPEN_STATUSES, ProposalStatus.DEFERRED)
"""A reviewer may approve, reject, request changes on, defer or edit a proposal in these states."""

VIEWS: dict[str, tuple[str, tuple[str, ...]]] = {
    "open": ("Awaiting review", OPEN_STATUSES),
    "deferred": ("Deferred", (ProposalStatus.DEFERRED,)),
    "approved": ("Approved, next release", (ProposalStatus.APPROVED,)),
    "applied": ("Applied", (ProposalStatus.APPLIED, ProposalStatus.AUTO_COMMITTED)),
    "rejected": ("Rejected", (ProposalStatus.REJECTED,)),
    "backlog": ("Backlog (LOW_CONF)", (ProposalStatus.BACKLOG,)),
    "all": ("All", ()),
}
DEFAULT_VIEW = "open"

ASSIGNEE_HELP = "'me', 'none' (unassigned) or a username"
ORDERINGS = (
    ("score", "score"),
    ("created_at", "age"),
    ("kind", "kind"),
    ("updated_at", "updated"),
)


class ProposalFilterSet(django_filters.FilterSet):
    """Filters of the review queue (``?view=open&kind=SPLIT&cluster=billing&ordering=-score``)."""

    view = django_filters.ChoiceFilter(
        choices=[(key, label) for key, (label, _) in VIEWS.items()],
        method="filter_view",
        empty_label="Awaiting review",
        help_text="part of the lifecycle; empty = open (awaiting review)",
    )
    kind = django_filters.MultipleChoiceFilter(choices=ProposalKind.choices, help_text="proposal kinds")
    bin = django_filters.ChoiceFilter(
        field_name="confidence_bin", choices=ConfidenceBin.choices, label="Confidence bin", empty_label="any"
    )
    cluster = django_filters.CharFilter(field_name="cluster_key", label="Cluster", help_text="cluster key")
    target = django_filters.CharFilter(
        method="filter_target", label="Label or node", help_text="a LabelID or node key the change touches"
    )
    min_score = django_filters.NumberFilter(field_name="score", lookup_expr="gte", label="Score ≥")
    max_score = django_filters.NumberFilter(field_name="score", lookup_expr="lte", label="Score ≤")
    # bounded: a huge value overflowed timedelta (a 500 found by the API fuzzer); out of range is a 400
    min_age_days = django_filters.NumberFilter(
        method="filter_min_age",
        label="Older than (days)",
        help_text="created at least this many days ago",
        min_value=0,
        max_value=36500,
    )
    max_age_days = django_filters.NumberFilter(
        method="filter_max_age",
        label="Newer than (days)",
        help_text="created at most this many days ago",
        min_value=0,
        max_value=36500,
    )
    assignee = django_filters.CharFilter(method="filter_assignee", label="Assignee", help_text=ASSIGNEE_HELP)
    q = django_filters.CharFilter(method="filter_search", label="Search", help_text="title or summary")
    ordering = django_filters.OrderingFilter(
        fields=ORDERINGS,
        help_text="score, age, kind or updated; prefix '-' for descending (default: -score, then oldest first)",
    )

    class Meta:
        model = Proposal
        fields: list[str] = []

    def __init__(self, *args: Any, user: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # the web UI and selectors pass the user; the API's filter backend passes the request
        self.user = user if user is not None else getattr(self.request, "user", None)

    @property
    def qs(self) -> QuerySet[Proposal]:
        queryset = super().qs
        if "view" not in self.data or not self.data.get("view"):
            queryset = self.filter_view(queryset, "view", DEFAULT_VIEW)
        if not self.data.get("ordering"):
            queryset = queryset.order_by("-score", "created_at", "id")
        return queryset

    def filter_view(self, queryset: QuerySet[Proposal], name: str, value: str) -> QuerySet[Proposal]:
        statuses = VIEWS.get(value or DEFAULT_VIEW, VIEWS[DEFAULT_VIEW])[1]
        return queryset.filter(status__in=statuses) if statuses else queryset

    def filter_target(self, queryset: QuerySet[Proposal], name: str, value: str) -> QuerySet[Proposal]:
        # target_keys is a JSON list; its text form contains the key between quotes (SQLite and Postgres)
        needle = value.strip().replace('"', "")
        if not needle:
            return queryset
        return queryset.annotate(_target_text=Cast("target_keys", TextField())).filter(
            _target_text__contains=f'"{needle}"'
        )

    def filter_min_age(self, queryset: QuerySet[Proposal], name: str, value: float) -> QuerySet[Proposal]:
        return queryset.filter(created_at__lte=timezone.now() - timedelta(days=float(value)))

    def filter_max_age(self, queryset: QuerySet[Proposal], name: str, value: float) -> QuerySet[Proposal]:
        return queryset.filter(created_at__gte=timezone.now() - timedelta(days=float(value)))

    def filter_assignee(self, queryset: QuerySet[Proposal], name: str, value: str) -> QuerySet[Proposal]:
        value = value.strip()
        if value == "none":
            return queryset.filter(assignee__isnull=True)
        if value == "me":
            user_id = getattr(self.user, "pk", None)
            return queryset.filter(assignee_id=user_id) if user_id else queryset.none()
        return queryset.filter(assignee__username=value) if value else queryset

    def filter_search(self, queryset: QuerySet[Proposal], name: str, value: str) -> QuerySet[Proposal]:
        value = value.strip()
        if not value:
            return queryset
        return queryset.filter(Q(title__icontains=value) | Q(summary__icontains=value))
