"""The progressive confidence-boost loop, online side (ARG §3.4.3).

Step D (``review.bins.boost_zones``) lists business-critical nodes whose traffic is dominated by weak
signals and stores them in the night's ``OfflineRun.stats["confidence_boost"]`` (node → active-check
rate). ``active_check_boost_hook`` is a publish hook: every release published afterwards freezes the
latest successful run's boost zones as the ``active_check_boost`` document, and the online pipeline
samples its active checks at that rate on those nodes (instead of the default rate) — until a later
night finds the zone's ActiveCheckCoverage acceptable and drops it from the list. Releases of a project
without boost zones get no such document (their content, hence their checksum, is unchanged).
"""

from __future__ import annotations

from typing import Any

import numpy as np

DOCUMENT = "active_check_boost"


def active_check_boost_hook(
    documents: dict[str, Any], embedder: Any
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """``ontology.releases.PUBLISH_HOOKS`` entry: the latest night's boost zones, when there are any."""
    from .models import OfflineRun

    slug = (documents.get("project") or {}).get("slug")
    if not slug:
        return {}, {}
    run = (
        OfflineRun.objects.filter(
            project__slug=slug, status=OfflineRun.Status.SUCCEEDED, stats__has_key="confidence_boost"
        )
        .order_by("-started_at", "-id")
        .only("stats")
        .first()
    )
    zones = (run.stats.get("confidence_boost") or {}) if run is not None else {}
    if not zones:
        return {}, {}
    return {}, {DOCUMENT: {node: float(zone["rate"]) for node, zone in sorted(zones.items())}}
