"""Jobs: long work (publication, applying approved proposals) run by a Celery worker, watched by users.

A **job** is a ``Job`` row: kind, project, parameters, status (QUEUED → RUNNING → SUCCEEDED/FAILED),
progress 0..1, a message, a log, and a result (e.g. the release it published) or an error. The door
a user uses opens the job and queues its task (``job_open`` + ``job_enqueue``) and answers at once;
the browser polls the job's row, the API answers ``202`` with the job's URL. The CLI runs the same
work in its own process (``job_run_inline``) and prints the progress.

``job_execute`` is what a task does with a job id: it claims the job (a finished job returns its
result — a duplicated or retried message applies nothing twice), runs the job's work with a progress
callback, and records the outcome. A ``DomainError`` (a refusal with a reason) fails the job at once;
any other error is re-raised so the task can retry it. The work itself must be idempotent across a
worker killed half-way: publication does so by recording the job on the release it writes, in the
release's own transaction (``ontology.models.Release.job``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.utils import timezone

from .audit import Actor, actor_user
from .errors import DomainError
from .models import Job

Progress = Callable[[float, str], None]
"""``progress(fraction, message)``: fraction of the job done (0..1) and what it is doing."""

Work = Callable[[Job, Progress], dict[str, Any]]
"""A job's work: takes the job and a progress callback, returns the job's result (JSON)."""

LOG_LIMIT = 100_000
logger = logging.getLogger(__name__)


def job_open(
    *, kind: str, project: Any, actor: Actor, params: dict[str, Any], idempotency_key: str = ""
) -> tuple[Job, bool]:
    """``(job, created)``: a new QUEUED job, or the job already opened with this key for this kind."""
    if idempotency_key:
        existing = Job.objects.filter(kind=kind, idempotency_key=idempotency_key).first()
        if existing is not None:
            return existing, False
    job = Job.objects.create(
        kind=kind,
        project=project,
        params=params,
        idempotency_key=idempotency_key,
        created_by=actor_user(actor),
        message="queued: waiting for a worker",
    )
    return job, True


def job_enqueue(job: Job, task: Any) -> None:
    """Queue ``task(job.pk)`` once the surrounding transaction commits (a rolled-back open queues nothing)."""
    transaction.on_commit(lambda: task.delay(job.pk))


def _log_line(job_id: int, message: str) -> str:
    current = Job.objects.filter(pk=job_id).values_list("log", flat=True).first() or ""
    return (current + "\n" + f"{timezone.now():%H:%M:%S} {message}").strip()[-LOG_LIMIT:]


def job_progress(job_id: int, fraction: float, message: str) -> None:
    """Record the job's progress and a log line (committed at once: the UI polls it)."""
    Job.objects.filter(pk=job_id, status=Job.Status.RUNNING).update(
        progress=round(max(0.0, min(1.0, fraction)), 4),
        message=message[:500],
        log=_log_line(job_id, message),
    )


def job_claim(job_id: int) -> Job | None:
    """Mark the job RUNNING and count the attempt; ``None`` when it is already finished."""
    with transaction.atomic():
        job = (
            Job.objects.select_for_update(of=("self",)).select_related("project", "created_by").get(pk=job_id)
        )
        if job.status in (Job.Status.SUCCEEDED, Job.Status.FAILED):
            return None
        attempts = int(job.params.get("attempts", 0)) + 1
        job.status = Job.Status.RUNNING
        job.started_at = job.started_at or timezone.now()
        job.params = {**job.params, "attempts": attempts}
        job.message = "started" if attempts == 1 else f"started again (attempt {attempts})"
        job.log = _log_line(job_id, job.message)
        job.save(update_fields=["status", "started_at", "params", "message", "log"])
    logger.info("job %s (%s) of project %s: attempt %d", job.pk, job.kind, job.project_id, attempts)
    return job


def job_succeed(job_id: int, result: dict[str, Any], message: str) -> None:
    Job.objects.filter(pk=job_id).update(
        status=Job.Status.SUCCEEDED,
        progress=1.0,
        result=result,
        message=message[:500],
        log=_log_line(job_id, message),
        finished_at=timezone.now(),
    )


def job_fail(job_id: int, error: str, result: dict[str, Any] | None = None) -> None:
    Job.objects.filter(pk=job_id).update(
        status=Job.Status.FAILED,
        result={**(result or {}), "error": error[:1000]},
        message=error[:500],
        log=_log_line(job_id, f"failed: {error}"),
        finished_at=timezone.now(),
    )


def job_execute(job_id: int, work: Work, *, final_attempt: bool = True) -> dict[str, Any]:
    """Run ``work`` for the job once: claim, work, record the outcome; returns the job's result.

    A refusal (``DomainError``) fails the job with its message and rule(s). Any other error fails
    the job on the ``final_attempt`` and is re-raised (the caller's task retries earlier attempts).
    """
    job = job_claim(job_id)
    if job is None:
        return Job.objects.get(pk=job_id).result
    try:
        result = work(job, lambda fraction, message: job_progress(job_id, fraction, message))
    except DomainError as exc:
        violations = [
            {"rule": v.rule, "message": v.message, "field": v.field} for v in getattr(exc, "violations", [])
        ]
        job_fail(job_id, exc.message, {"rules": [v["rule"] for v in violations], "violations": violations})
        return Job.objects.get(pk=job_id).result
    except Exception as exc:
        if final_attempt:
            job_fail(job_id, f"{type(exc).__name__}: {exc}")
        raise
    job_succeed(job_id, result, str(result.get("detail") or "done"))
    return result


def job_task_execute(task: Any, job_id: int, work: Work, *, retry_after_s: int = 10) -> dict[str, Any]:
    """What a job's Celery task (``bind=True``) runs: ``job_execute``; an unexpected error is retried
    ``retry_after_s`` later until the task's last attempt, which fails the job."""
    final = task.request.retries >= task.max_retries
    try:
        return job_execute(job_id, work, final_attempt=final)
    except Exception as exc:
        if final:
            raise
        raise task.retry(exc=exc, countdown=retry_after_s) from exc


def job_run_inline(job: Job, work: Work, progress: Progress | None = None) -> Job:
    """Run the job's work in this process (the CLI's synchronous mode), echoing progress to ``progress``."""

    def both(fraction: float, message: str) -> None:
        job_progress(job.pk, fraction, message)
        if progress is not None:
            progress(fraction, message)

    def reported(claimed: Job, _: Progress) -> dict[str, Any]:
        return work(claimed, both)

    try:
        job_execute(job.pk, reported)
    finally:
        job.refresh_from_db()
    return job
