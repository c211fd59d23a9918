"""The demo's first night: seeded customer traffic → the offline loop → a review queue (issue 21, part 6).

The loop runs in this process here; ``tests/platform/test_run_embedded.py`` runs the first start as
``make run`` does it, with the loop on the real Celery worker.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from django.test import Client

ROOT = Path(__file__).resolve().parents[2]
DEMO_TRAFFIC = ROOT / "packs" / "demo" / "traffic.yaml"

pytestmark = pytest.mark.django_db


def test_the_demo_night_gives_a_reviewer_proposals_the_loop_made_from_it(demo_release, make_user):
    from review.demo_traffic import traffic_read, traffic_seed
    from review.loop.run import offline_loop_run
    from review.models import Proposal

    project, _ = demo_release
    plan = traffic_read(DEMO_TRAFFIC)
    night = traffic_seed(project=project, plan=plan)
    assert night.requests == plan.requests == 1200
    assert 0.05 < night.feedback / night.requests < 0.3  # most customers stay silent
    assert night.landed["invoice_pdf"].get("N-billing-invoice-download", 0) > 0

    run = offline_loop_run(project=project, idempotency_key="demo-traffic")

    assert run.status == "SUCCEEDED"
    queue = list(
        Proposal.objects.filter(project=project, confidence_bin="MID_CONF", status="PENDING_REVIEW", run=run)
    )
    assert len(queue) >= 3 and len({p.kind for p in queue}) >= 2, [(p.kind, p.title) for p in queue]
    reviewer = make_user("rob-reviewer", "reviewer", project)
    browser = Client()
    browser.force_login(reviewer)
    listed = browser.get(f"/p/{project.slug}/review/").content.decode()
    badge = re.search(r'<span class="nav-badge" id="review-badge"[^>]*>(\d+)</span>', listed)
    tabs = dict(re.findall(r'id="tab-(\w+)"[^>]*>[^<]*<span class="count">(\d+)</span>', listed))
    assert int(tabs["proposals"]) == len(queue)  # the queue lists the night's proposals
    assert badge is not None and int(badge.group(1)) == sum(int(n) for n in tabs.values())
    for proposal in queue:
        assert proposal.replay.get("metrics") or proposal.replay.get("rerouted") is not None
        page = browser.get(f"/p/{project.slug}/review/proposals/{proposal.pk}/").content.decode()
        assert 'id="replay-metrics"' in page and 'id="pictures-before"' in page, proposal.kind


def test_the_same_traffic_file_gives_the_same_night(demo_release):
    from review.demo_traffic import traffic_read, traffic_seed

    project, _ = demo_release
    from arg_platform.errors import RuleViolation
    from inference.models import InferenceLog

    plan = replace(traffic_read(DEMO_TRAFFIC), requests=40)
    first = traffic_seed(project=project, plan=plan, night="a")
    second = traffic_seed(project=project, plan=plan, night="b")
    assert first.landed == second.landed and first.feedback == second.feedback
    prompts = [
        list(
            InferenceLog.objects.filter(request_id__startswith=f"demo-{project.slug}-{plan.seed}-{night}-")
            .order_by("created_at", "id")
            .values_list("prompt", flat=True)
        )
        for night in ("a", "b")
    ]
    assert prompts[0] == prompts[1] and len(prompts[0]) == 40
    with pytest.raises(RuleViolation, match="already sent"):
        traffic_seed(project=project, plan=plan, night="a")
    assert InferenceLog.objects.filter(project=project).count() == 80


def test_a_traffic_file_naming_unknown_nodes_is_refused(demo_release, tmp_path):
    from arg_platform.errors import RuleViolation
    from inference.models import InferenceLog
    from review.demo_traffic import traffic_read, traffic_seed

    project, _ = demo_release
    bad = tmp_path / "traffic.yaml"
    bad.write_text(
        "format: arg-demo-traffic/1\nintents:\n  - key: x\n    served_by: [N-nope]\n    prompts: [hello]\n"
    )
    with pytest.raises(RuleViolation, match="N-nope"):
        traffic_seed(project=project, plan=traffic_read(bad))
    assert not InferenceLog.objects.filter(project=project).exists()
    bad.write_text("format: something-else\n")
    with pytest.raises(RuleViolation, match="not an arg-demo-traffic/1 file"):
        traffic_read(bad)
