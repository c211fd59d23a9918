"""The one place where Celery beat's schedule lives: every periodic task of the platform, by name."""

from __future__ import annotations

from typing import Any


def beat_schedule(*, nightly_hour_utc: int) -> dict[str, dict[str, Any]]:
    """Periodic tasks: the worker heartbeat, the nightly offline loop at ``nightly_hour_utc`` and, an hour
    later (once the loop has read its window), the purge of request logs past ``ARG_LOG_RETENTION_DAYS``."""
    from celery.schedules import crontab

    return {
        "platform-heartbeat": {"task": "platform.heartbeat", "schedule": 60.0},
        # offline loop (review.loop.tasks): consolidation, candidates, replay, bins, auto-commit — one run per project
        "review-offline-nightly": {
            "task": "review.offline_nightly",
            "schedule": crontab(hour=nightly_hour_utc, minute=0),
        },
        # retention (inference.tasks): request logs, their feedback and action runs past the retention window
        "inference-logs-purge": {
            "task": "inference.logs_purge",
            "schedule": crontab(hour=(nightly_hour_utc + 1) % 24, minute=0),
        },
    }
