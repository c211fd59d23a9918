"""Celery tasks of the ontology app: publishing the draft as a job (``ontology.publish_jobs``).

``acks_late`` with ``reject_on_worker_lost``: a worker killed half-way gives the message back and the
retry publishes once (the job is recorded on the release in the release's own transaction). A refusal
(invalid draft, draft moved since the reviewed diff) fails the job with its reason at once; an
unexpected error is retried twice, 10 s apart.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task

from arg_platform.jobs import job_task_execute

from .publish_jobs import publish_job_work


@shared_task(
    name="ontology.release_publish", bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=2
)
def release_publish_task(self: Any, job_id: int) -> dict[str, Any]:
    """Publish the draft of the job's project (``publish_job_work``)."""
    return job_task_execute(self, job_id, publish_job_work)
