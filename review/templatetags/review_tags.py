"""Template helpers of the review UI: compact renderings of operations and metrics, and the nav badge."""

from __future__ import annotations

import json
from typing import Any

from django import template

from projects.access import Capability

register = template.Library()

SUMMARY_FIELDS = (
    "node_id",
    "source",
    "type",
    "target",
    "targets",
    "weight",
    "status",
    "name",
    "parent",
    "label_id",
    "labels",
    "clusters",
    "title",
)


@register.filter
def join_or_value(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)


@register.filter
def op_summary(op: dict[str, Any]) -> str:
    """``node_id=N-x title=… labels=L1,L2`` — the identifying fields of one changeset operation."""
    parts = []
    for key in SUMMARY_FIELDS:
        value = op.get(key)
        if value in (None, "", []):
            continue
        if isinstance(value, list):
            value = ",".join(str(v) for v in value)
        text = str(value)
        parts.append(f"{key}={text if len(text) <= 60 else text[:59] + '…'}")
    return " ".join(parts)


@register.filter
def percent(value: Any) -> str:
    try:
        return f"{100 * float(value):.0f} %"
    except (TypeError, ValueError):
        return "—"


@register.filter
def signed(value: Any) -> str:
    try:
        return f"{float(value):+.3f}"
    except (TypeError, ValueError):
        return ""


@register.filter
def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)[:4000]


@register.simple_tag
def review_badge(access: Any) -> int:
    """How many items await this reviewer's project (0 for people who do not review)."""
    from review.queue import notifications

    if access is None:
        return 0
    return notifications.review_badge_count(access=access)


@register.simple_tag
def review_inbox(access: Any) -> dict[str, int]:
    """What the nav badge adds up, per review list: ``proposals``, ``silent`` and ``merges`` (empty for
    people who do not review), so each tab shows its share of the badge."""
    from review.queue import notifications

    if access is None or not access.can(Capability.REVIEW):
        return {}
    return notifications.review_inbox_counts(project=access.project)
