"""The Celery application of the platform.

Embedded mode uses kombu's ``filesystem://`` transport and a ``file://`` result backend under
``ARG_DATA_DIR`` so that a real worker and beat run with no external service; production uses
Redis. The request id of the HTTP request that queued a task travels in the task headers and is set
again in the worker, so log lines of both sides share it.
"""

from __future__ import annotations

import os
import time
from typing import Any

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arg_platform.settings")

app = Celery("arg_platform")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.setup_logging.connect
def _use_the_platform_logging(**_: Any) -> None:
    """Workers and beat log like the web processes (settings.LOGGING: JSON in production, with the
    request id on every line) instead of Celery replacing the root logger with its own format."""
    from logging.config import dictConfig

    from django.conf import settings

    dictConfig(settings.LOGGING)


@signals.before_task_publish.connect
def _propagate_request_id(headers: dict[str, Any] | None = None, **_: Any) -> None:
    from .request_id import get_request_id

    request_id = get_request_id()
    if headers is not None and request_id:
        headers.setdefault("request_id", request_id)


_task_started: dict[str, float] = {}


@signals.task_prerun.connect
def _adopt_request_id(task: Any = None, task_id: str | None = None, **_: Any) -> None:
    from .request_id import set_request_id

    request_id = getattr(task.request, "request_id", None) if task is not None else None
    set_request_id(request_id or f"task-{getattr(task.request, 'id', '')}")
    if task_id:
        _task_started[task_id] = time.perf_counter()


@signals.task_postrun.connect
def _clear_request_id(
    task: Any = None, task_id: str | None = None, state: str | None = None, **_: Any
) -> None:
    from .request_id import set_request_id

    set_request_id(None)
    started = _task_started.pop(task_id or "", None)
    if started is not None:
        from .metrics import task_observe

        task_observe(
            task=getattr(task, "name", "unknown"),
            state=state or "UNKNOWN",
            seconds=time.perf_counter() - started,
        )
