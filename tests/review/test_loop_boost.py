"""§3.4.3 confidence boost: weak-signal critical zones get a higher online active-check rate."""

from __future__ import annotations

import pytest


@pytest.mark.django_db
def test_the_latest_nights_boost_zones_reach_the_online_active_check_rate(small_release, fresh_snapshots):
    from inference.contracts import RequestContext
    from inference.pipeline import InferenceRequest, _active_check_boost, run_inference
    from ontology.releases import release_publish, release_snapshot
    from review.loop.run import offline_run_open
    from review.models import OfflineRun

    project, before = small_release
    run = offline_run_open(project=project, idempotency_key="boost")
    zone = {"uncertain": 0.9, "coverage": 0.0, "rate": 1.0}
    OfflineRun.objects.filter(pk=run.pk).update(
        status="SUCCEEDED", stats={"confidence_boost": {"N-invoice-download": zone}}
    )

    boosted = release_snapshot(release=release_publish(project=project, actor=None))

    assert boosted.documents["active_check_boost"] == {"N-invoice-download": 1.0}
    assert "active_check_boost" not in release_snapshot(release=before).documents
    assert _active_check_boost(boosted, "N-invoice-download") == {"sample_rate": 1.0}
    assert _active_check_boost(boosted, "N-oos") == {}
    result = run_inference(
        InferenceRequest(
            request_id="boost-1",
            project=project,
            prompt="where can I download my invoice pdf",
            context=RequestContext(),
            default_role="customer",
        )
    )
    assert result.route.target == "N-invoice-download"
    assert result.outcome.active_check is not None
