"""Jobs: long work runs once per job, refusals fail it with their reason, and users watch it.

The worker path itself (a real worker, the broker, a SIGKILL half-way) is tests/faults/test_worker_killed.py;
here the job services, the publication and application work, the job's page and its API.
"""

from __future__ import annotations

import re

import pytest
from django.test import Client

from arg_platform.errors import RuleViolation, Violation
from arg_platform.jobs import job_execute, job_open, job_run_inline
from arg_platform.models import Job
from ontology.models import Release
from ontology.publish_jobs import publish_job_open, publish_job_work
from ontology.releases import PublishOptions, draft_publish
from taxonomy.packs import pack_import, pack_read
from tests.taxonomy.test_packs import SMALL

pytestmark = pytest.mark.django_db


@pytest.fixture
def tiny():
    return pack_import(pack_read(SMALL)).project


def test_a_job_runs_its_work_once_and_records_progress_and_result(tiny):
    job, created = job_open(kind="test.count", project=tiny, actor=None, params={}, idempotency_key="k1")
    assert created and job.status == Job.Status.QUEUED
    again, created_again = job_open(
        kind="test.count", project=tiny, actor=None, params={}, idempotency_key="k1"
    )
    assert (again.pk, created_again) == (job.pk, False)  # a double click finds the same job
    calls = []

    def work(claimed, progress):
        calls.append(claimed.pk)
        progress(0.5, "half way")
        assert Job.objects.get(pk=claimed.pk).progress == 0.5  # committed as it goes: the UI polls it
        return {"n": len(calls), "detail": "counted"}

    assert job_execute(job.pk, work) == {"n": 1, "detail": "counted"}
    assert job_execute(job.pk, work) == {"n": 1, "detail": "counted"}  # a duplicated message
    job.refresh_from_db()
    assert calls == [job.pk]
    assert (job.status, job.progress, job.message, job.params["attempts"]) == ("SUCCEEDED", 1.0, "counted", 1)
    assert "half way" in job.log and job.finished_at is not None


def test_a_refusal_fails_the_job_with_its_rules_and_an_unexpected_error_is_left_to_the_retry(tiny):
    refused, _ = job_open(kind="test.refuse", project=tiny, actor=None, params={})

    def refuse(claimed, progress):
        raise RuleViolation(Violation("release.draft_moved", "the draft changed", "draft_digest"))

    result = job_execute(refused.pk, refuse)
    refused.refresh_from_db()
    assert refused.status == "FAILED" and result["rules"] == ["release.draft_moved"]
    assert result["violations"][0]["message"] == "the draft changed"

    flaky, _ = job_open(kind="test.flaky", project=tiny, actor=None, params={})

    def crash(claimed, progress):
        raise OSError("store unreachable")

    with pytest.raises(OSError):
        job_execute(flaky.pk, crash, final_attempt=False)
    flaky.refresh_from_db()
    assert flaky.status == "RUNNING"  # the task retries it
    with pytest.raises(OSError):
        job_execute(flaky.pk, crash, final_attempt=True)
    flaky.refresh_from_db()
    assert (flaky.status, flaky.params["attempts"]) == ("FAILED", 2)
    assert flaky.result["error"] == "OSError: store unreachable"


def test_a_publication_job_whose_release_committed_before_the_worker_died_publishes_nothing_more(tiny):
    job = publish_job_open(project=tiny, actor=None, notes="first")
    # the first attempt committed its release, then the worker died before the job was marked done
    release, _ = draft_publish(project=tiny, actor=None, options=PublishOptions(job_id=job.pk))
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING, params={"attempts": 1})
    result = job_execute(job.pk, publish_job_work)
    assert (result["release"], result["published"]) == (release.version, True)
    assert Release.objects.filter(project=tiny).count() == 1
    assert Job.objects.get(pk=job.pk).params["attempts"] == 2


def test_the_cli_runs_a_publication_job_in_process_with_progress(tiny):
    job = publish_job_open(project=tiny, actor=None, notes="from the shell")
    heard: list[tuple[float, str]] = []
    job = job_run_inline(job, publish_job_work, lambda fraction, message: heard.append((fraction, message)))
    assert job.status == "SUCCEEDED" and job.result["release"] == 1
    fractions = [f for f, _ in heard]
    assert fractions == sorted(fractions) and fractions[0] == 0.0 and fractions[-1] >= 0.9
    stages = " | ".join(m for _, m in heard)
    assert (
        "embedding 3 nodes" in stages and "structural signals" in stages and "storing the release" in stages
    )
    assert Release.objects.get(project=tiny).job_id == job.pk


def test_the_job_page_polls_while_the_job_runs_and_hides_other_projects_jobs(tiny, make_user, make_project):
    other = make_project("other")
    member = make_user("rita", "reviewer", tiny)
    client = Client()
    client.force_login(member)
    job = publish_job_open(project=tiny, actor=member, notes="x")
    page = client.get(f"/p/tiny/jobs/{job.pk}/").content.decode()
    assert re.search(r'id="job-status">QUEUED<', page)
    assert f'hx-get="/p/tiny/jobs/{job.pk}/" hx-trigger="every 1s"' in page
    job_execute(job.pk, publish_job_work)
    row = client.get(f"/p/tiny/jobs/{job.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert row.lstrip().startswith(f'<section class="card job-row" id="job-{job.pk}"')  # the row alone
    assert "hx-trigger" not in row and 'href="/p/tiny/graph/releases/#release-v1"' in row
    foreign = publish_job_open(project=other, actor=None)
    assert client.get(f"/p/tiny/jobs/{foreign.pk}/").status_code == 404
    assert client.get(f"/p/{other.slug}/jobs/{foreign.pk}/").status_code == 404  # not a member there
    assert Client().get(f"/p/tiny/jobs/{job.pk}/").status_code == 302  # anonymous: to the login page


def test_the_job_api_answers_members_and_hides_other_projects_jobs(tiny, make_user, make_project, api_as):
    other = make_project("other")
    member = api_as(make_user("rita", "reviewer", tiny))
    job = publish_job_open(project=tiny, actor=None)
    body = member.get(f"/api/v1/projects/tiny/jobs/{job.pk}/").json()
    assert (body["id"], body["kind"], body["status"], body["url"]) == (
        job.pk,
        "release.publish",
        "QUEUED",
        f"http://testserver/api/v1/projects/tiny/jobs/{job.pk}/",
    )
    foreign = publish_job_open(project=other, actor=None)
    assert member.get(f"/api/v1/projects/tiny/jobs/{foreign.pk}/").status_code == 404
    assert member.get(f"/api/v1/projects/{other.slug}/jobs/{foreign.pk}/").status_code == 404


def test_a_job_task_retries_an_unexpected_error_and_fails_the_job_on_its_last_attempt(tiny, monkeypatch):
    from arg_platform.celery import app
    from arg_platform.jobs import job_task_execute

    monkeypatch.setitem(app.conf, "task_always_eager", True)
    failures = {"left": 1}

    def flaky(claimed, progress):
        if failures["left"]:
            failures["left"] -= 1
            raise OSError("broker hiccup")
        return {"detail": "done on a retry"}

    @app.task(bind=True, max_retries=2, name="tests.flaky_job")
    def flaky_task(self, job_id):
        return job_task_execute(self, job_id, flaky, retry_after_s=0)

    recovered, _ = job_open(kind="test.flaky", project=tiny, actor=None, params={})
    flaky_task.apply(args=[recovered.pk])
    recovered.refresh_from_db()
    assert (recovered.status, recovered.params["attempts"], recovered.message) == (
        "SUCCEEDED",
        2,
        "done on a retry",
    )

    failures["left"] = 99
    doomed, _ = job_open(kind="test.flaky", project=tiny, actor=None, params={})
    flaky_task.apply(args=[doomed.pk])
    doomed.refresh_from_db()
    assert (doomed.status, doomed.params["attempts"]) == ("FAILED", 3)  # the first try and two retries
    assert doomed.result["error"] == "OSError: broker hiccup"
