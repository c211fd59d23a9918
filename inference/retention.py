"""Retention of the request logs: what the online pipeline wrote is kept ``ARG_LOG_RETENTION_DAYS`` days.

``logs_purge`` deletes, across all projects, the ``InferenceLog`` rows older than the window (their
``Feedback`` goes with them, by cascade) and the ``ActionExecution`` rows older than the same window. It
deletes in batches of ``BATCH`` ids, each batch its own short transaction, so memory stays bounded and no
lock is held for long on a large table; it is idempotent (a second run finds nothing older than the
cutoff). Beat runs it daily (``inference.logs_purge``, an hour after the nightly loop, which reads only
the last ``OFFLINE_LOOP["window_days"]`` days); ``manage.py purge_logs`` runs it by hand.

``ARG_LOG_RETENTION_DAYS=0`` keeps everything (the task then deletes nothing); the settings refuse a
window shorter than the offline loop's, and ``logs_purge`` refuses one as well (``RuleViolation``).

Memory (episodic items, InfoUnits) is not a log and keeps its own lifecycle; one user's data is erased
on request by ``inference.erasure``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.utils import timezone

from arg_platform.errors import RuleViolation, Violation

from .models import ActionExecution, Feedback, InferenceLog

BATCH = 5000


def retention_days() -> int:
    """The configured window in days (``ARG_LOG_RETENTION_DAYS``; 0 = keep forever)."""
    return int(getattr(settings, "LOG_RETENTION_DAYS", 90))


def loop_window_days() -> int:
    """The days of logs the nightly offline loop reads: the shortest window a purge may use."""
    return int(str(settings.OFFLINE_LOOP.get("window_days", 7)))


def _batched_delete(
    queryset: models.QuerySet[Any], delete: Callable[[list[int]], dict[str, int]]
) -> dict[str, int]:
    """Delete the rows of ``queryset`` ``BATCH`` ids at a time, one transaction per batch."""
    totals: dict[str, int] = {}
    while True:
        ids = list(queryset.order_by("pk").values_list("pk", flat=True)[:BATCH])
        if not ids:
            return totals
        with transaction.atomic():
            for name, count in delete(ids).items():
                totals[name] = totals.get(name, 0) + count


def _logs_delete(ids: list[int]) -> dict[str, int]:
    _, per_model = InferenceLog.objects.filter(pk__in=ids).delete()
    return {
        "inference_logs": per_model.get(InferenceLog._meta.label, 0),
        "feedback": per_model.get(Feedback._meta.label, 0),
    }


def _actions_delete(ids: list[int]) -> dict[str, int]:
    _, per_model = ActionExecution.objects.filter(pk__in=ids).delete()
    return {"action_executions": per_model.get(ActionExecution._meta.label, 0)}


def logs_purge_counts(*, cutoff: datetime) -> dict[str, int]:
    """What ``logs_purge`` would delete at ``cutoff`` (a dry run), without deleting anything."""
    logs = InferenceLog.objects.filter(created_at__lt=cutoff)
    return {
        "inference_logs": logs.count(),
        "feedback": Feedback.objects.filter(log__created_at__lt=cutoff).count(),
        "action_executions": ActionExecution.objects.filter(created_at__lt=cutoff).count(),
    }


def purge_cutoff(*, now: datetime | None = None, days: int | None = None) -> datetime | None:
    """The instant before which rows are purged, or None when retention is off (``days`` 0).

    Refused (``RuleViolation``) for a negative window or one shorter than the offline loop's window."""
    days = retention_days() if days is None else days
    if days == 0:
        return None
    window = loop_window_days()
    if days < 0 or days < window:
        raise RuleViolation(
            Violation(
                "retention.window",
                f"logs are kept at least {window} days (the offline loop's window), not {days}; "
                "0 keeps them forever",
                "days",
            )
        )
    return (now or timezone.now()) - timedelta(days=days)


def logs_purge(*, now: datetime | None = None, days: int | None = None) -> dict[str, int]:
    """Delete the request logs (with their feedback) and action runs older than ``days`` (default
    ``ARG_LOG_RETENTION_DAYS``) before ``now``, in all projects; return the counts deleted per kind.

    Batched (``BATCH`` ids per delete, one transaction each) and idempotent. ``days=0`` deletes nothing."""
    counts = {"inference_logs": 0, "feedback": 0, "action_executions": 0}
    cutoff = purge_cutoff(now=now, days=days)
    if cutoff is None:
        return counts
    for name, count in _batched_delete(
        InferenceLog.objects.filter(created_at__lt=cutoff), _logs_delete
    ).items():
        counts[name] += count
    for name, count in _batched_delete(
        ActionExecution.objects.filter(created_at__lt=cutoff), _actions_delete
    ).items():
        counts[name] += count
    return counts
