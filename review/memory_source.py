"""The offline loop's read-only door into episodic memory (ARG §4.1–4.2).

The memory app owns episodic memory and the Info Registry; the offline loop only *reads* them, through
the memory app's selectors, and turns what it reads into ``review.collection.Episode`` values. When the
memory app has no selectors yet, or its tables are empty, the loop sees no episodes and the
node-from-memory generator degrades to "no candidates".
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

logger = logging.getLogger(__name__)


def episodes_for(*, project: Any, window_start: datetime, window_end: datetime) -> list[Any]:
    """The project's episodic entries written in the window (empty when memory is unavailable)."""
    try:
        from memory import selectors  # noqa: F401
    except ImportError:
        return []
    reader = getattr(selectors, "offline_episodes", None)
    if reader is None:
        return []
    try:
        return list(reader(project=project, window_start=window_start, window_end=window_end))
    except Exception:  # the memory tables may not be migrated yet: the loop goes on without episodes
        logger.warning("episodic memory unavailable to the offline loop", exc_info=True)
        return []
