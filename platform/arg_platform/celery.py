"""The Celery application of the platform.

Embedded mode uses kombu's ``filesystem://`` transport and a ``file://`` result backend under
``ARG_DATA_DIR`` so that a real worker and beat run with no external service; production uses
Redis. The request id of the HTTP request that queued a task travels in the task headers and is set
again in the worker, so log lines of both sides share it.
"""

from __future__ import annotations

import os
from typing import Any

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arg_platform.settings")

app = Celery("arg_platform")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.before_task_publish.connect
def _propagate_request_id(headers: dict[str, Any] | None = None, **_: Any) -> None:
    from .request_id import get_request_id

    request_id = get_request_id()
    if headers is not None and request_id:
        headers.setdefault("request_id", request_id)


@signals.task_prerun.connect
def _adopt_request_id(task: Any = None, **_: Any) -> None:
    from .request_id import set_request_id

    request_id = getattr(task.request, "request_id", None) if task is not None else None
    set_request_id(request_id or f"task-{getattr(task.request, 'id', '')}")


@signals.task_postrun.connect
def _clear_request_id(**_: Any) -> None:
    from .request_id import set_request_id

    set_request_id(None)
