"""The progressive confidence-boost loop, online side (ARG §3.4.3).

Step D (``review.loop.bins.boost_zones``) lists business-critical nodes whose traffic is dominated by weak
signals and stores them in the night's ``OfflineRun.stats["confidence_boost"]`` (node → active-check
rate). ``active_check_boost`` is a release context hook (``ontology.releases.CONTEXT_HOOKS``): every
release built afterwards freezes the latest successful run's boost zones as the ``active_check_boost``
document (and a draft identical to the active release is published again when they changed), and the online pipeline
samples its active checks at that rate on those nodes (instead of the default rate) — until a later
night finds the zone's ActiveCheckCoverage acceptable and drops it from the list. Releases of a project
without boost zones get no such document (their content, hence their checksum, is unchanged).
"""

from __future__ import annotations

from typing import Any

DOCUMENT = "active_check_boost"


def active_check_boost(documents: dict[str, Any]) -> dict[str, float] | None:
    """The latest night's boost zones (node → active-check rate), or ``None`` when there are none."""
    from review.models import OfflineRun

    slug = (documents.get("project") or {}).get("slug")
    if not slug:
        return None
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
        return None
    return {node: float(zone["rate"]) for node, zone in sorted(zones.items())}
