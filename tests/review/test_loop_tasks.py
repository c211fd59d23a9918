"""The offline loop on Celery: the nightly beat entry, tasks per step chained on commit, progress in the
Job row, and a real worker applying a duplicated step message once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from tests.celery_worker import celery_worker, wait_for

ROOT = Path(__file__).resolve().parents[2]


def test_the_beat_schedule_runs_the_offline_loop_nightly():
    from arg_platform.schedule import beat_schedule

    entry = beat_schedule(nightly_hour_utc=3)["review-offline-nightly"]

    assert entry["task"] == "review.offline_nightly"
    assert entry["schedule"].hour == {3} and entry["schedule"].minute == {0}


@pytest.mark.django_db
def test_the_nightly_task_opens_one_run_per_project_and_queues_it_on_commit(
    small_release, django_capture_on_commit_callbacks
):
    from review.loop.tasks import offline_nightly_task
    from review.models import OfflineRun

    project, _ = small_release
    with django_capture_on_commit_callbacks(execute=False) as first:
        opened = offline_nightly_task()
    with django_capture_on_commit_callbacks(execute=False) as second:
        again = offline_nightly_task()  # a duplicated beat tick

    run = OfflineRun.objects.get(project=project)
    assert opened == [run.pk] and again == []
    assert (len(first), len(second)) == (1, 0)
    assert run.idempotency_key.startswith("nightly:") and run.job.status == "QUEUED"


@pytest.mark.django_db
def test_each_step_queues_the_next_on_commit_and_reports_progress(
    small_release, django_capture_on_commit_callbacks, monkeypatch
):
    from arg_platform.celery import app
    from review.loop.run import STEPS, offline_run_open
    from review.loop.tasks import offline_run_enqueue

    monkeypatch.setitem(app.conf, "task_always_eager", True)
    project, release = small_release
    run = offline_run_open(project=project, idempotency_key="manual")
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        offline_run_enqueue(run)

    run.refresh_from_db()
    assert len(callbacks) == len(STEPS)  # the first queued by enqueue, each next one by its predecessor
    assert run.status == "SUCCEEDED" and run.base_release_id == release.pk
    assert [s for s in STEPS if run.stats["steps"][s]["done"]] == list(STEPS)
    assert run.job.status == "SUCCEEDED" and run.job.progress == 1.0
    started = [line.split(" ", 1)[1] for line in run.job.log.splitlines() if line.endswith(" started")]
    assert started == [f"[{step}] started" for step in STEPS]


@pytest.fixture
def worker() -> Any:
    with celery_worker() as proc:
        yield proc


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_runs_a_duplicated_step_message_once(worker, stored_proposal):
    from ontology.releases import release_publish
    from review.changeset import EdgeSetWeight
    from review.loop.run import STEPS, offline_run_open
    from review.loop.tasks import offline_bin_task
    from review.models import OfflineRun, ProposalDecision
    from taxonomy.packs import pack_import, pack_read

    project = pack_import(pack_read(ROOT / "tests" / "taxonomy" / "fixtures" / "small_pack.yaml")).project
    release = release_publish(project=project, actor=None)
    run = offline_run_open(project=project, idempotency_key="worker-test")
    run.stats = {"steps": {s: {"done": True} for s in STEPS[: STEPS.index("bin")]}}
    run.save(update_fields=["stats"])
    op = EdgeSetWeight("N-invoice-download", "N-resend-invoice", "LEADS_TO", 0.9, previous=0.7)
    proposal = stored_proposal(project, release, "EDGE_WEIGHT", [op], status="SCORED")
    proposal.run = run
    proposal.replay = {"score": 0.05, "violations": {"taxonomy": [], "security": []}, "zone_interactions": 50}
    proposal.save()

    offline_bin_task.delay(run.pk)
    offline_bin_task.delay(run.pk)  # a duplicated message must not bin twice

    assert wait_for(lambda: OfflineRun.objects.get(pk=run.pk).status != "RUNNING", 90.0), (
        "the worker never finished"
    )
    run.refresh_from_db()
    proposal.refresh_from_db()
    assert run.status == "SUCCEEDED"
    assert (proposal.status, proposal.confidence_bin) == ("PENDING_REVIEW", "MID_CONF")
    assert run.stats["steps"]["bin"]["bins"] == {"HIGH_CONF": 0, "MID_CONF": 1, "LOW_CONF": 0}
    assert run.job.status == "SUCCEEDED" and run.job.progress == 1.0
    queue = Path(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"])
    assert wait_for(lambda: not any(queue.iterdir()), 90.0), "the duplicated message was never consumed"
    run.refresh_from_db()
    assert run.job.log.count("[bin] started") == 1
    assert ProposalDecision.objects.filter(proposal=proposal).count() == 0


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_gates_auto_commit_on_geDIG_thresholds_from_earlier_nights(worker, stored_proposal):
    """θ_DG comes from the kind's history: a gain the fixed θ_DG = 0 would pass is held for review when
    it is worse than most of the project's earlier edge-weight changes."""
    from datetime import timedelta

    from django.utils import timezone

    from ontology.releases import release_publish
    from review.changeset import EdgeSetWeight
    from review.loop.run import STEPS, offline_run_open
    from review.loop.tasks import offline_bin_task
    from review.models import OfflineRun
    from taxonomy.packs import pack_import, pack_read

    project = pack_import(pack_read(ROOT / "tests" / "taxonomy" / "fixtures" / "small_pack.yaml")).project
    release = release_publish(project=project, actor=None)
    earlier = OfflineRun.objects.create(project=project, status="SUCCEEDED")
    OfflineRun.objects.filter(pk=earlier.pk).update(started_at=timezone.now() - timedelta(days=2))
    for i in range(30):  # b from 0.00 down to -0.29: median -0.145, g0 at most 0.29
        op = EdgeSetWeight("N-invoice-download", "N-resend-invoice", "LEADS_TO", 0.5 + i / 100, previous=0.5)
        old = stored_proposal(project, release, "EDGE_WEIGHT", [op], status="BACKLOG")
        old.run, old.replay = earlier, {"gedig": {"g0": i / 100, "b": -i / 100}}
        old.save()

    run = offline_run_open(project=project, idempotency_key="gate-test")
    run.stats = {"steps": {s: {"done": True} for s in STEPS[: STEPS.index("bin")]}}
    run.save(update_fields=["stats"])
    strong = {
        "score": 0.2,
        "violations": {"taxonomy": [], "security": []},
        "confirmed_gain": 0.1,
        "zone_interactions": 50,
        "silence_dominated": False,
    }
    tonight = {}
    # the marginal one scores higher, so it is binned first: no overlap with the other explains its bin
    for name, score, weight, b in (("clear", 0.2, 0.9, -0.25), ("marginal", 0.3, 0.8, -0.05)):
        op = EdgeSetWeight("N-invoice-download", "N-resend-invoice", "LEADS_TO", weight, previous=0.7)
        proposal = stored_proposal(project, release, "EDGE_WEIGHT", [op], status="SCORED")
        proposal.run = run
        proposal.replay = {**strong, "score": score, "gedig": {"g0": 0.05, "b": b}}
        proposal.save()
        tonight[name] = proposal

    offline_bin_task.delay(run.pk)
    assert wait_for(lambda: OfflineRun.objects.get(pk=run.pk).status != "RUNNING", 90.0), (
        "the worker never finished"
    )

    run.refresh_from_db()
    clear, marginal = (p.__class__.objects.get(pk=p.pk) for p in (tonight["clear"], tonight["marginal"]))
    assert run.status == "SUCCEEDED"
    # the chain goes on to the apply step, which applies what was auto-committed
    assert (clear.status, clear.replay["gedig_gate"]["decided"]) == ("APPLIED", "passed")
    assert clear.decisions.filter(action="AUTO_COMMIT").exists()
    assert marginal.status == "PENDING_REVIEW" and "geDIG DG did not confirm" in marginal.replay["bin_reason"]
    gate = marginal.replay["gedig_gate"]
    assert (gate["source"], gate["n_history"], gate["decided"]) == ("kind history", 30, "held back")
    assert gate["theta_dg"] == pytest.approx(-0.145)
    assert run.stats["gedig_thresholds"]["EDGE_WEIGHT"]["theta_dg"] == pytest.approx(-0.145)
