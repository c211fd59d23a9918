"""Celery tasks of the inference app, where the worker's autodiscovery (``<app>.tasks``) finds them:
the daily purge of request logs past the retention window (``inference.retention``)."""

from __future__ import annotations

import logging

from celery import shared_task

from .retention import logs_purge

logger = logging.getLogger(__name__)


@shared_task(name="inference.logs_purge", acks_late=True)
def logs_purge_task() -> dict[str, int]:
    """Beat entry ``inference-logs-purge`` (``arg_platform.schedule``): delete the request logs, their
    feedback and the action runs older than ``ARG_LOG_RETENTION_DAYS``. Idempotent: a duplicated
    tick or a retried message deletes nothing more."""
    counts = logs_purge()
    logger.info("purged request logs past retention: %s", counts)
    return counts
