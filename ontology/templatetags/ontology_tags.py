"""Template helpers of the ontology UI: the nav badge of open requests to publish."""

from __future__ import annotations

from typing import Any

from django import template

from ontology.models import Release
from projects.access import Capability
from projects.publish_requests import publish_request_badge

register = template.Library()


@register.simple_tag
def publish_badge(access: Any) -> int:
    """Open requests to publish the project's draft, for the people who publish (0 for the others)."""
    if access is None or not access.can(Capability.PUBLISH):
        return 0
    since = (
        Release.objects.filter(project=access.project)
        .order_by("-created_at")
        .values_list("created_at", flat=True)
        .first()
    )
    return publish_request_badge(project=access.project, since=since)
