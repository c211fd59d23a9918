"""The one place where Celery beat's schedule lives (ARCHITECTURE decision 4)."""

from __future__ import annotations

from typing import Any


def beat_schedule(*, nightly_hour_utc: int) -> dict[str, dict[str, Any]]:
    """Periodic tasks: the worker heartbeat now; the nightly offline loop joins here at ``nightly_hour_utc``."""
    return {
        "platform-heartbeat": {"task": "platform.heartbeat", "schedule": 60.0},
    }
