"""Retention of the request logs: ``inference.retention.logs_purge``, its daily beat entry, the setting
``ARG_LOG_RETENTION_DAYS`` and ``manage.py purge_logs``."""

from __future__ import annotations

import io
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from arg_platform.celery import app
from arg_platform.errors import RuleViolation
from arg_platform.schedule import beat_schedule
from inference import retention
from inference.models import ActionExecution, Feedback, InferenceLog
from inference.retention import logs_purge
from inference.tasks import logs_purge_task
from tests.platform.test_settings import probe

NOW = timezone.now()


def _log(project: Any, age_days: float) -> InferenceLog:
    log = InferenceLog.objects.create(
        project=project, request_id=uuid.uuid4().hex, prompt="where is my invoice"
    )
    InferenceLog.objects.filter(pk=log.pk).update(created_at=NOW - timedelta(days=age_days))
    Feedback.objects.create(log=log, kind=Feedback.Kind.HELPFUL, helpful=True)
    return log


def _action(project: Any, log: InferenceLog, age_days: float) -> ActionExecution:
    run = ActionExecution.objects.create(
        project=project,
        idempotency_key=uuid.uuid4().hex,
        request_id=log.request_id,
        node_id="N-invoice-download",
        handler="test",
        status=ActionExecution.Status.SUCCEEDED,
    )
    ActionExecution.objects.filter(pk=run.pk).update(created_at=NOW - timedelta(days=age_days))
    return run


@pytest.fixture
def aged(project: Any, other_project: Any) -> dict[str, list[int]]:
    """Logs (each with one feedback) and action runs of two projects, 100 and 10 days old."""
    old, new = [], []
    for p in (project, other_project):
        for _ in range(3):
            log = _log(p, 100)
            old.append(log.pk)
            _action(p, log, 100)
        log = _log(p, 10)
        new.append(log.pk)
        _action(p, log, 10)
    return {"old": old, "new": new}


@pytest.mark.django_db
def test_the_purge_deletes_what_is_older_than_the_window_in_every_project_and_is_idempotent(
    aged, monkeypatch
):
    monkeypatch.setattr(retention, "BATCH", 2)  # several batches

    first = retention.logs_purge(now=NOW, days=90)
    second = retention.logs_purge(now=NOW, days=90)

    assert first == {"inference_logs": 6, "feedback": 6, "action_executions": 6}
    assert second == {"inference_logs": 0, "feedback": 0, "action_executions": 0}
    assert sorted(InferenceLog.objects.values_list("pk", flat=True)) == sorted(aged["new"])
    assert Feedback.objects.count() == 2
    assert ActionExecution.objects.count() == 2
    assert all(a.created_at > NOW - timedelta(days=90) for a in ActionExecution.objects.all())


@pytest.mark.django_db
def test_the_default_window_is_the_setting_and_zero_keeps_everything(aged, settings):
    settings.LOG_RETENTION_DAYS = 0
    assert logs_purge(now=NOW) == {"inference_logs": 0, "feedback": 0, "action_executions": 0}
    assert InferenceLog.objects.count() == 8

    settings.LOG_RETENTION_DAYS = 5 * 365
    assert logs_purge(now=NOW)["inference_logs"] == 0
    settings.LOG_RETENTION_DAYS = 7
    assert logs_purge(now=NOW)["inference_logs"] == 8


@pytest.mark.django_db
def test_a_window_shorter_than_the_offline_loop_reads_is_refused(aged):
    with pytest.raises(RuleViolation, match="retention.window"):
        logs_purge(now=NOW, days=6)
    with pytest.raises(RuleViolation):
        logs_purge(now=NOW, days=-1)
    assert InferenceLog.objects.count() == 8


@pytest.mark.django_db
def test_the_task_purges_with_the_configured_window(aged, settings):
    settings.LOG_RETENTION_DAYS = 90
    assert logs_purge_task() == {"inference_logs": 6, "feedback": 6, "action_executions": 6}
    assert logs_purge_task()["inference_logs"] == 0


def test_beat_runs_the_purge_daily_an_hour_after_the_nightly_loop_and_the_worker_knows_the_task():
    from django.conf import settings

    entry = beat_schedule(nightly_hour_utc=23)["inference-logs-purge"]
    assert entry["task"] == "inference.logs_purge"
    assert entry["schedule"].hour == {0} and entry["schedule"].minute == {0}
    assert settings.CELERY_BEAT_SCHEDULE["inference-logs-purge"]["task"] == "inference.logs_purge"

    app.loader.import_default_modules()  # what a worker does at start: autodiscovery of <app>.tasks
    assert "inference.logs_purge" in app.tasks


@pytest.mark.django_db
def test_purge_logs_command_dry_run_counts_and_deletes_nothing_then_purges(aged):
    dry, real = io.StringIO(), io.StringIO()

    call_command("purge_logs", "--days", "30", "--dry-run", stdout=dry)
    assert InferenceLog.objects.count() == 8
    call_command("purge_logs", "--days", "30", stdout=real)

    assert "would delete" in dry.getvalue() and "inference_logs: 6" in dry.getvalue()
    assert "feedback: 6" in dry.getvalue() and "action_executions: 6" in dry.getvalue()
    assert "deleted" in real.getvalue() and "inference_logs: 6" in real.getvalue()
    assert InferenceLog.objects.count() == 2
    with pytest.raises(CommandError, match="at least 7 days"):
        call_command("purge_logs", "--days", "3", stdout=io.StringIO())


@pytest.mark.parametrize(
    ("value", "ok"), [("0", True), ("7", True), ("365", True), ("3", False), ("-1", False)]
)
def test_the_setting_refuses_a_window_shorter_than_the_loops(tmp_path, value, ok):
    code, out = probe(tmp_path, ARG_LOG_RETENTION_DAYS=value)

    if ok:
        assert code == 0, out
        assert out["env_vars"]["ARG_LOG_RETENTION_DAYS"]
    else:
        assert code == 3 and "ARG_LOG_RETENTION_DAYS" in out["error"], out
