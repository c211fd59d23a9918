"""Approving "now" and "publish approved" are jobs: the request approves and queues, the job applies
the approved changesets to the active release and publishes once (``review.queue.apply_jobs``)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from tests.review.test_governed_change import _member
from tests.review.test_loop_application import PARENT, _split_ops

pytestmark = pytest.mark.django_db


def _reweight(project: Any, base: Any, stored_proposal: Any, weight: float = 0.31) -> Any:
    from review.changeset import EdgeSetWeight
    from review.loop.shadow import BaseRelease

    edge = next(e for e in BaseRelease.load(base).graph.edges if PARENT not in (e.source, e.target))
    ops = (EdgeSetWeight(edge.source, edge.target, edge.type, weight=weight, previous=edge.weight),)
    return stored_proposal(project, base, "EDGE", ops, status="PENDING_REVIEW")


def test_approve_now_queues_a_job_that_applies_the_clean_proposals_and_reports_the_blocked_one(
    demo_release, stored_proposal, run_jobs
):
    from ontology.services import node_update
    from review.models import ProposalStatus

    project, base = demo_release
    reviewer = _member(project, "reviewer")
    split = stored_proposal(project, base, "SPLIT", _split_ops(project), status="APPROVED")
    node_update(project=project, actor=None, node_id=PARENT, changes={"title": "Invoices!"})  # a draft edit
    reweight = _reweight(project, base, stored_proposal)
    browser = Client()
    browser.force_login(reviewer)

    with run_jobs():
        answer = browser.post(
            f"/p/{project.slug}/review/proposals/{reweight.pk}/approve/", {"mode": "now", "reason": "ok"}
        )
    assert answer.status_code == 302 and answer["Location"].startswith(f"/p/{project.slug}/jobs/")
    page = browser.get(answer["Location"]).content.decode()
    assert 'id="job-status">SUCCEEDED<' in page
    assert f"release v{base.version + 1} published with proposal(s) #{reweight.pk}" in page
    assert f"Proposal #{split.pk} is approved but not applied" in page and "review.draft_conflict" in page
    reweight.refresh_from_db()
    split.refresh_from_db()
    assert (reweight.status, split.status) == (ProposalStatus.APPLIED, ProposalStatus.APPROVED)
    assert reweight.applied_release.job_id is not None


def test_an_apply_job_retried_after_its_release_committed_publishes_nothing_more(
    demo_release, stored_proposal
):
    from arg_platform.jobs import job_execute
    from arg_platform.models import Job
    from ontology.models import Release
    from review.queue.apply_jobs import apply_job_work, proposal_approve_now
    from review.queue.decisions import proposals_apply_approved

    project, base = demo_release
    reweight = _reweight(project, base, stored_proposal)
    _, job = proposal_approve_now(proposal=reweight, actor=None, reason="")
    # the first attempt published, then its worker died before the job was marked done
    first = proposals_apply_approved(project=project, actor=None, job_id=job.pk)
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING, params={"attempts": 1})

    result = job_execute(job.pk, apply_job_work)

    assert (result["release"], result["applied"]) == (first.release.version, [reweight.pk])
    assert Release.objects.filter(project=project).count() == 2
    assert Job.objects.get(pk=job.pk).status == "SUCCEEDED"


def test_nothing_approved_is_refused_in_the_request_and_no_release_fails_the_job(
    demo_release, stored_proposal, run_jobs, api_as
):
    from arg_platform.models import Job
    from ontology.models import Release

    project, base = demo_release
    reviewer = api_as(_member(project, "reviewer"))
    nothing = reviewer.post(f"/api/v1/projects/{project.slug}/proposals/apply-approved/")
    assert nothing.status_code == 400 and nothing.json()["rules"] == ["review.nothing_approved"]
    assert not Job.objects.filter(project=project).exists()

    reweight = _reweight(project, base, stored_proposal)
    Release.objects.filter(project=project).update(is_active=False)  # e.g. every release was deactivated
    with run_jobs():
        queued = reviewer.post(
            f"/api/v1/projects/{project.slug}/proposals/{reweight.pk}/approve/",
            {"mode": "now"},
            format="json",
        )
    assert queued.status_code == 202
    job = reviewer.get(queued["Location"]).json()
    assert job["status"] == "FAILED" and "no active release" in job["result"]["error"]
    reweight.refresh_from_db()
    assert reweight.status == "APPROVED"  # still approved: it applies once a release is active again
