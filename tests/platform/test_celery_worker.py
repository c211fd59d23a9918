"""A real Celery worker on the embedded filesystem broker runs tasks queued by the web process."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from django.conf import settings

from arg_platform.models import Job
from arg_platform.request_id import set_request_id
from arg_platform.tasks import job_probe_task
from tests.celery_worker import celery_worker, wait_for


@pytest.fixture
def worker():
    with celery_worker(stdout=subprocess.PIPE) as proc:
        yield proc


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_worker_runs_task_once_and_request_id_travels(worker):
    job = Job.objects.create(kind="probe")
    set_request_id("req-from-web-1")
    try:
        job_probe_task.delay(job.pk)
        job_probe_task.delay(job.pk)  # a duplicated message must not apply twice
    finally:
        set_request_id(None)
    assert wait_for(lambda: Job.objects.get(pk=job.pk).status == Job.Status.SUCCEEDED, 60.0), (
        "worker never ran the task"
    )
    job.refresh_from_db()
    assert job.result["request_id"] == "req-from-web-1"
    assert job.result["worker_pid"] == worker.pid
    assert job.result["worker_pid"] != os.getpid()
    first_result = dict(job.result)
    queue = Path(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"])
    assert wait_for(lambda: not any(queue.iterdir()), 60.0), "second message never consumed"
    job.refresh_from_db()
    assert job.result == first_result
