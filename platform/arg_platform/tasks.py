"""Cross-cutting Celery tasks: the worker heartbeat (scheduled by beat) and a job probe."""

from __future__ import annotations

import os
import time
from pathlib import Path

from celery import Task, shared_task
from django.conf import settings
from django.utils import timezone

from .models import Job
from .request_id import get_request_id


def heartbeat_path() -> Path:
    return Path(settings.CELERY_DATA_DIR) / "heartbeat"


@shared_task(name="platform.heartbeat", ignore_result=True)
def heartbeat_task() -> None:
    """Beat → worker round trip: writes the time a worker last ran a scheduled task."""
    path = heartbeat_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{time.time():.3f} {os.getpid()}\n", encoding="utf-8")


@shared_task(name="platform.job_probe", bind=True, acks_late=True, max_retries=3)
def job_probe_task(self: Task, job_id: int) -> dict[str, object]:
    """Mark a probe Job as run by a worker (idempotent: a retried or duplicated message applies once)."""
    job = Job.objects.get(pk=job_id)
    if job.status == Job.Status.SUCCEEDED:
        return job.result
    result = {"worker_pid": os.getpid(), "request_id": get_request_id(), "task_id": self.request.id}
    updated = (
        Job.objects.filter(pk=job_id)
        .exclude(status=Job.Status.SUCCEEDED)
        .update(
            status=Job.Status.SUCCEEDED,
            progress=1.0,
            result=result,
            finished_at=timezone.now(),
            message="probe ran",
        )
    )
    return result if updated else Job.objects.get(pk=job_id).result
