"""Worker killed in the middle of a release application: the message comes back, the retry applies
once, and the releases, the draft graph and the proposal stay consistent.

A real Celery worker (prefork pool, the embedded filesystem broker, ``acks_late`` +
``reject_on_worker_lost``) runs the task; the drill arms a publish hook (``tests/faults/drill_tasks.py``)
that pauses the publication half-way (after the embeddings and signals are computed, before anything is
committed) and the test SIGKILLs that pool process — what the kernel's OOM killer does. The worker's
main process sees the child die and puts the message back; a fresh child runs it again. Two drills in
one worker: the publication job (``ontology.release_publish``) and "approve now"'s job applying the
approved changesets (``review.apply_approved``).
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import transaction

from arg_platform.celery import app as celery_app
from arg_platform.jobs import job_enqueue
from arg_platform.models import AuditEvent, Job
from arg_platform.request_id import set_request_id
from ontology.models import Release
from ontology.publish_jobs import publish_job_open
from ontology.releases import release_snapshot
from ontology.store import get_graph_store
from ontology.tasks import release_publish_task
from taxonomy.packs import pack_import, pack_read
from tests.celery_worker import celery_worker, wait_for

ROOT = Path(__file__).resolve().parents[2]
SMALL_PACK = ROOT / "tests" / "taxonomy" / "fixtures" / "small_pack.yaml"


@pytest.fixture
def drill_worker(tmp_path):
    env = {"ARG_DRILL_DIR": str(tmp_path), "ARG_LOG_FORMAT": "json"}
    env["OPENBLAS_NUM_THREADS"] = os.environ.get("OPENBLAS_NUM_THREADS", "1")
    drill = ["tests.faults.drill_tasks"]
    with (
        open(tmp_path / "worker.log", "wb") as log,
        celery_worker(pool="prefork", include=drill, stdout=log, env=env) as proc,
    ):
        yield {"proc": proc, "dir": tmp_path, "log": tmp_path / "worker.log"}


def _kill_the_paused_attempt(drill: dict, *, timeout: float = 150) -> int:
    """Wait until an armed publication pauses, SIGKILL that pool process, return its pid."""
    folder: Path = drill["dir"]
    assert wait_for(lambda: any(folder.glob("paused-*")), timeout), drill["log"].read_text()[-3000:]
    paused = next(folder.glob("paused-*"))
    victim = int(paused.name.split("-")[1])
    assert victim != drill["proc"].pid  # a pool process, not the worker's main process
    os.kill(victim, signal.SIGKILL)
    paused.unlink()
    return victim


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_release_jobs_killed_half_way_are_retried_and_publish_once(drill_worker):
    project = pack_import(pack_read(SMALL_PACK)).project
    queue = Path(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"])

    # --- drill 1: the publication job, queued as the browser and the API queue it ------------------
    (drill_worker["dir"] / "armed").touch()
    set_request_id("web-req-drill-1")  # as if queued by an HTTP request: its id travels with the task
    try:
        with transaction.atomic():
            job = publish_job_open(project=project, actor=None, notes="drill")
            job_enqueue(job, release_publish_task)
    finally:
        set_request_id(None)
    _kill_the_paused_attempt(drill_worker)
    assert Release.objects.filter(project=project).count() == 0  # killed before anything was written

    assert wait_for(lambda: Job.objects.get(pk=job.pk).status == Job.Status.SUCCEEDED, 180), drill_worker[
        "log"
    ].read_text()[-3000:]
    job.refresh_from_db()
    assert job.params["attempts"] == 2
    releases = list(Release.objects.filter(project=project))
    assert [(r.pk, r.version, r.is_active, r.job_id) for r in releases] == [
        (job.result["release_id"], 1, True, job.pk)
    ]
    assert job.result["published"] is True and job.progress == 1.0
    assert "started again (attempt 2)" in job.log
    assert AuditEvent.objects.filter(project=project, action="publish").count() == 1
    assert sorted(release_snapshot(release=releases[0]).node_ids) == [
        "N-invoice-download",
        "N-oos",
        "N-resend-invoice",
    ]
    # the same message delivered once more (a duplicate after a broker failover) applies nothing
    celery_app.send_task("ontology.release_publish", args=[job.pk])
    assert wait_for(lambda: not any(queue.iterdir()), 60)
    time.sleep(1.0)
    assert Release.objects.filter(project=project).count() == 1
    assert Job.objects.get(pk=job.pk).params["attempts"] == 2

    # --- drill 2: "approve now" — the job applying the approved changesets + publishing ------------
    from review.changeset import EdgeSetWeight, changeset_dump, changeset_fingerprint, changeset_load
    from review.models import ConfidenceBin, Proposal, ProposalStatus
    from review.queue.apply_jobs import proposal_approve_now

    changeset = changeset_dump(
        [EdgeSetWeight("N-invoice-download", "N-resend-invoice", "LEADS_TO", 0.85, 0.7)]
    )
    proposal = Proposal.objects.create(
        project=project,
        kind="EDGE_WEIGHT",
        status=ProposalStatus.PENDING_REVIEW,
        confidence_bin=ConfidenceBin.MID_CONF,
        title="Reinforce invoice → resend",
        fingerprint=changeset_fingerprint("EDGE_WEIGHT", changeset_load(changeset)),
        base_release=releases[0],
        changeset=changeset,
    )
    (drill_worker["dir"] / "armed").touch()
    _, apply_job = proposal_approve_now(proposal=proposal, actor=None, reason="drill")
    _kill_the_paused_attempt(drill_worker)
    assert Release.objects.filter(project=project).count() == 1  # the application rolled back whole
    edges = get_graph_store().neighbours(project.pk, "N-invoice-download", "out")
    assert [e.weight for e in edges if e.target == "N-resend-invoice"] == [0.7]

    def done() -> bool:
        return Job.objects.get(pk=apply_job.pk).status == Job.Status.SUCCEEDED

    assert wait_for(done, 180), drill_worker["log"].read_text()[-3000:]
    proposal.refresh_from_db()
    apply_job.refresh_from_db()
    versions = list(
        Release.objects.filter(project=project).order_by("version").values_list("version", "is_active")
    )
    assert versions == [(1, False), (2, True)]
    assert proposal.status == ProposalStatus.APPLIED and proposal.applied_release.version == 2
    assert apply_job.params["attempts"] == 2
    assert (apply_job.result["release"], apply_job.result["applied"]) == (2, [proposal.pk])
    assert proposal.applied_release.job_id == apply_job.pk
    edges = get_graph_store().neighbours(project.pk, "N-invoice-download", "out")
    assert [e.weight for e in edges if e.target == "N-resend-invoice"] == [0.85]
    # a duplicate message publishes nothing
    celery_app.send_task("review.apply_approved", args=[apply_job.pk])
    assert wait_for(lambda: not any(queue.iterdir()), 60)
    time.sleep(1.0)
    assert Release.objects.filter(project=project).count() == 2

    log = drill_worker["log"].read_text()
    assert log.count("signal 9") + log.count("WorkerLostError") >= 2
    # the worker's structured JSON log lines carry the request id of the web request, on both attempts
    lines = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    attempts = [
        line
        for line in lines
        if line["logger"] == "arg_platform.jobs" and line["message"].startswith(f"job {job.pk} ")
    ]
    assert [(a["message"], a["request_id"]) for a in attempts] == [
        (f"job {job.pk} (release.publish) of project {project.pk}: attempt {n}", "web-req-drill-1")
        for n in (1, 2)
    ]


def test_the_drill_hook_is_only_registered_in_the_drill_worker():
    # importing the drill module elsewhere (this process has no ARG_DRILL_DIR) adds no publish hook
    import tests.faults.drill_tasks  # noqa: F401
    from ontology.releases import PUBLISH_HOOKS

    assert all(getattr(hook, "__name__", "") != "_pause_when_armed" for hook in PUBLISH_HOOKS)
