"""The task of the worker-kill drill: publish a release under a Job, exactly once.

Loaded only by the drill's worker (``celery worker --include tests.faults.drill_tasks``). The graph
hook registered here (``GRAPH_HOOKS`` run in every freeze, of the draft or of parent + changesets)
pauses one publication in its middle (after validation, embeddings and signals, before the release is
written) when the drill has armed it, and names the paused process, so the drill can SIGKILL that pool
process there. It also pauses the publication inside the review app's ``review.proposal_apply`` task,
which the second drill kills. Idempotency of the task below comes from the Job row: the release and
the job's SUCCEEDED status are committed in one transaction, and a delivery that finds the job
SUCCEEDED returns its result.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

from celery import shared_task
from django.db import transaction
from django.utils import timezone

from arg_platform.models import Job
from ontology.releases import GRAPH_HOOKS, PublishOptions, release_publish

logger = logging.getLogger("drill")


def _pause_when_armed(
    arrays: Any, documents: dict[str, Any], embedder: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Publication step of the drill: when the drill has armed it, pause (once) to be killed here."""
    folder = Path(os.environ.get("ARG_DRILL_DIR", ""))
    try:
        # rename is atomic: exactly one attempt takes the "armed" file and pauses
        os.rename(folder / "armed", folder / f"paused-{os.getpid()}")
    except OSError:
        return {}, {}
    time.sleep(300)  # the drill kills this process here
    return {}, {}


if os.environ.get("ARG_DRILL_DIR"):
    GRAPH_HOOKS.append(_pause_when_armed)


@shared_task(name="drill.release_publish", bind=True, acks_late=True, reject_on_worker_lost=True)
def release_publish_drill_task(self: Any, job_id: int) -> dict[str, Any]:
    """Publish the job's project once, however often the message is delivered."""
    job = Job.objects.select_related("project").get(pk=job_id)
    if job.status == Job.Status.SUCCEEDED:
        return job.result
    attempts = int(job.params.get("attempts", 0)) + 1
    logger.info("publishing project %s, attempt %d", job.project.slug, attempts)
    Job.objects.filter(pk=job_id).update(
        status=Job.Status.RUNNING, started_at=timezone.now(), params={**job.params, "attempts": attempts}
    )
    with transaction.atomic():
        if Job.objects.select_for_update().get(pk=job_id).status == Job.Status.SUCCEEDED:
            return Job.objects.get(pk=job_id).result
        release = release_publish(
            project=job.project, actor=None, options=PublishOptions(notes=f"job {job_id}")
        )
        result = {"release_id": release.pk, "version": release.version, "pid": os.getpid()}
        Job.objects.filter(pk=job_id).update(
            status=Job.Status.SUCCEEDED, progress=1.0, result=result, finished_at=timezone.now()
        )
    return result
