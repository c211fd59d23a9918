"""Celery tasks of the offline loop: one task per step, by run id, chained on commit.

* ``offline_nightly_task`` — the beat entry (``arg_platform.schedule``): for every project with an
  active release, opens tonight's run (idempotency key ``nightly:<date>``: a duplicated beat tick opens
  nothing twice) and queues its first step once the run is committed;
* ``offline_consolidate_task`` → ``offline_collect_task`` → ``offline_generate_task`` →
  ``offline_replay_task`` → ``offline_bin_task`` → ``offline_apply_task`` — each takes the run id, runs
  its step (``review.loop.run``), writes progress and log lines to the run's Job row (the UI polls it), and
  queues the next step with ``transaction.on_commit``. A step already done is skipped (a retried or
  duplicated message applies once) and only the message that did the step queues the next one;

Retry policy: a domain refusal fails the run at once; an unexpected error is retried twice (30 s apart)
before the run is marked FAILED.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from django.db import transaction
from django.utils import timezone

from arg_platform.errors import DomainError
from arg_platform.models import Job
from ontology.models import Release
from projects.models import Project
from review.loop.run import STEP_FUNCTIONS, STEPS, job_progress, offline_run_finish, offline_run_get_or_open
from review.models import OfflineRun

logger = logging.getLogger(__name__)
TASK_NAMES = {step: f"review.offline_{step}" for step in STEPS}


def offline_run_enqueue(run: OfflineRun) -> None:
    """Queue the run's first step once the surrounding transaction commits."""
    transaction.on_commit(lambda: STEP_TASKS[STEPS[0]].delay(run.pk))


def _run_step(task: Any, step: str, run_id: int) -> dict[str, Any]:
    run = OfflineRun.objects.select_related("project", "base_release").filter(pk=run_id).first()
    if run is None or run.status != OfflineRun.Status.RUNNING:
        return {"skipped": "run is not running"}
    if run.stats.get("steps", {}).get(step, {}).get("done"):
        return {"skipped": f"{step} already done"}
    if run.job_id:
        Job.objects.filter(pk=run.job_id, status=Job.Status.QUEUED).update(
            status=Job.Status.RUNNING, started_at=timezone.now()
        )

    def progress(name: str, fraction: float, message: str) -> None:
        job_progress(run.job_id, step=name, fraction=fraction, message=message, log=fraction == 0)

    progress(step, 0.0, "started")
    try:
        STEP_FUNCTIONS[step](run, progress)
    except DomainError as exc:
        offline_run_finish(run, error=f"{step}: {exc.message}")
        return {"failed": exc.message}
    except Exception as exc:
        if task.request.retries < task.max_retries:
            raise task.retry(exc=exc, countdown=30) from exc
        logger.exception("offline step %s of run %s failed", step, run_id)
        offline_run_finish(run, error=f"{step}: {type(exc).__name__}: {exc}"[:500])
        return {"failed": str(exc)[:300]}
    progress(step, 1.0, "done")
    index = STEPS.index(step)
    if index + 1 < len(STEPS):
        following = STEP_TASKS[STEPS[index + 1]]
        transaction.on_commit(lambda: following.delay(run_id))
    else:
        offline_run_finish(run)
    return {"done": step}


@shared_task(name=TASK_NAMES["consolidate"], bind=True, acks_late=True, max_retries=2)
def offline_consolidate_task(self: Any, run_id: int) -> dict[str, Any]:
    """§4.2: episodic → semantic consolidation (``memory.services.memory_consolidate``)."""
    return _run_step(self, "consolidate", run_id)


@shared_task(name=TASK_NAMES["collect"], bind=True, acks_late=True, max_retries=2)
def offline_collect_task(self: Any, run_id: int) -> dict[str, Any]:
    """Step A: logs, feedback and episodes of the run's window → metrics."""
    return _run_step(self, "collect", run_id)


@shared_task(name=TASK_NAMES["generate"], bind=True, acks_late=True, max_retries=2)
def offline_generate_task(self: Any, run_id: int) -> dict[str, Any]:
    """Step B: candidate generators → NEW proposals."""
    return _run_step(self, "generate", run_id)


@shared_task(name=TASK_NAMES["replay"], bind=True, acks_late=True, max_retries=2)
def offline_replay_task(self: Any, run_id: int) -> dict[str, Any]:
    """Step C: replay every NEW proposal of the run on its shadow release → SCORED."""
    return _run_step(self, "replay", run_id)


@shared_task(name=TASK_NAMES["bin"], bind=True, acks_late=True, max_retries=2)
def offline_bin_task(self: Any, run_id: int) -> dict[str, Any]:
    """Step D: confidence bins, silent-success samples, confidence-boost zones."""
    return _run_step(self, "bin", run_id)


@shared_task(name=TASK_NAMES["apply"], bind=True, acks_late=True, max_retries=2)
def offline_apply_task(self: Any, run_id: int) -> dict[str, Any]:
    """Step E: apply the AUTO_COMMITTED proposals and publish one release."""
    return _run_step(self, "apply", run_id)


STEP_TASKS = {
    "consolidate": offline_consolidate_task,
    "collect": offline_collect_task,
    "generate": offline_generate_task,
    "replay": offline_replay_task,
    "bin": offline_bin_task,
    "apply": offline_apply_task,
}


@shared_task(name="review.offline_nightly", ignore_result=True)
def offline_nightly_task() -> list[int]:
    """Beat: open tonight's run for every project with an active release (archived ones rest) and queue
    its first step."""

    today = timezone.now().date().isoformat()
    opened = []
    live = Release.objects.filter(is_active=True, project__archived_at__isnull=True)
    for project_id in live.values_list("project_id", flat=True).distinct():
        project = Project.objects.get(pk=project_id)
        with transaction.atomic():
            run, created = offline_run_get_or_open(project=project, idempotency_key=f"nightly:{today}")
            if created:  # a duplicated beat tick finds tonight's run and queues nothing
                offline_run_enqueue(run)
                opened.append(run.pk)
    return opened
