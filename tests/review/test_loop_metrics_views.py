"""The Step A metrics page (per node / per edge outcome metrics) and the offline runs panel."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _logs(project: Any) -> None:
    from inference.models import InferenceLog

    base = {"outcome_kind": "INFO", "role_key": "customer", "context": {"channel": "web"}}
    InferenceLog.objects.create(
        project=project,
        request_id="m-1",
        prompt="a",
        target_node="N-invoice-download",
        outcome_status="INFO_CONFIRMED_SUCCESS",
        silent_outcome=False,
        **base,
    )
    for n in range(2, 6):
        InferenceLog.objects.create(
            project=project,
            request_id=f"m-{n}",
            prompt="b",
            target_node="N-quiet",
            outcome_status="INFO_UNCERTAIN_SUCCESS",
            silent_outcome=True,
            **base,
        )


@pytest.mark.usefixtures("fresh_snapshots")
@pytest.mark.django_db
def test_a_reviewer_reads_the_metrics_computed_from_the_logs(small_release, make_user):
    project, _ = small_release
    reviewer = make_user("rita", "reviewer", project)
    _logs(project)

    response = _client(reviewer).get(f"/p/{project.slug}/metrics/")

    assert response.status_code == 200
    html = response.content.decode()
    assert "Computed now" in html and "5 interactions" in html
    assert 'data-node="N-invoice-download"' in html and 'data-node="N-quiet"' in html
    assert "silence-dominated" in html
    nodes = response.context["nodes"]
    assert [
        (n["node_id"], n["ConfirmedSuccessRate_info"], n["UncertainSuccessRate_info"]) for n in nodes
    ] == [
        ("N-quiet", 0.0, 1.0),
        ("N-invoice-download", 1.0, 0.0),
    ]
    assert response.context["nodes"][1]["title"] == "Download an invoice"


@pytest.mark.usefixtures("fresh_snapshots")
@pytest.mark.django_db
def test_the_page_shows_the_latest_run_and_filters_silence_dominated_nodes(small_release, make_user):
    from review.loop.run import offline_loop_run

    project, _ = small_release
    reviewer = make_user("rita", "reviewer", project)
    _logs(project)
    run = offline_loop_run(project=project, idempotency_key="k")

    response = _client(reviewer).get(f"/p/{project.slug}/metrics/?silent=1&sort=coverage")

    assert response.status_code == 200
    assert f"From offline run #{run.pk}" in response.content.decode()
    assert [n["node_id"] for n in response.context["nodes"]] == ["N-quiet"]
    assert response.context["runs"][0].pk == run.pk


@pytest.mark.usefixtures("fresh_snapshots")
@pytest.mark.django_db
def test_a_reviewer_cannot_start_a_run_and_an_expert_queues_one(
    small_release, make_user, django_capture_on_commit_callbacks
):
    from review.models import OfflineRun

    project, _ = small_release
    reviewer, expert = make_user("rita", "reviewer", project), make_user("eve", "expert", project)

    refused = _client(reviewer).post(f"/p/{project.slug}/metrics/runs/")
    assert refused.status_code == 403
    assert OfflineRun.objects.count() == 0

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        accepted = _client(expert).post(f"/p/{project.slug}/metrics/runs/")

    assert accepted.status_code == 200
    run = OfflineRun.objects.get(project=project)
    assert run.job.created_by == expert and run.job.status == "QUEUED"
    assert len(callbacks) == 1
    assert f'data-run="{run.pk}"' in accepted.content.decode() and "every 2s" in accepted.content.decode()


@pytest.mark.usefixtures("fresh_snapshots")
@pytest.mark.django_db
def test_the_metrics_of_another_project_are_not_found(small_release, other_project, make_user):
    project, _ = small_release
    outsider = make_user("otto", "reviewer", other_project)

    assert _client(outsider).get(f"/p/{project.slug}/metrics/").status_code == 404
