"""Asking the administrators to publish: who publishes a project, and the open publish requests.

Publishing is an administrator's act (``Capability.PUBLISH``: project admins and platform superusers).
An expert who has curated the draft asks them with ``publish_request_create``; the request is *open*
while no release was published after it and no administrator dismissed it. ``since`` — the time of the
project's newest release, which the caller (the ontology app) reads — closes older requests, so a
publication answers every request made before it without writing to them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from .models import Membership, PlatformRole, Project, PublishRequest


def project_publishers(*, project: Project) -> list[str]:
    """User names of the people who may publish ``project``: its admins and the platform superusers."""
    admins = Membership.objects.filter(project=project, role=PlatformRole.ADMIN).values_list(
        "user__username", flat=True
    )
    superusers = (
        get_user_model().objects.filter(is_superuser=True, is_active=True).values_list("username", flat=True)
    )
    return sorted(set(admins) | set(superusers))


def publish_requests_open(*, project: Project, since: datetime | None) -> QuerySet[PublishRequest]:
    """The open requests, newest first: made after ``since`` (the newest release) and not dismissed."""
    found = PublishRequest.objects.filter(project=project, dismissed_at__isnull=True)
    if since is not None:
        found = found.filter(created_at__gt=since)
    return found.select_related("requested_by")


@transaction.atomic
def publish_request_create(
    *, project: Project, user: Any, note: str, since: datetime | None
) -> tuple[PublishRequest, bool]:
    """Ask the administrators to publish; ``(request, created)``. A person with an open request gets
    it back, its note replaced when a new one is given (one open request per person)."""
    mine = publish_requests_open(project=project, since=since).filter(requested_by=user).first()
    if mine is not None:
        if note:
            mine.note = note
            mine.save(update_fields=["note"])
        return mine, False
    return PublishRequest.objects.create(project=project, requested_by=user, note=note), True


@transaction.atomic
def publish_requests_dismiss(*, project: Project, user: Any, since: datetime | None) -> int:
    """An administrator dismisses every open request (the draft is not to be published); how many."""
    return publish_requests_open(project=project, since=since).update(
        dismissed_at=timezone.now(), dismissed_by=user
    )


def publish_request_badge(*, project: Project, since: datetime | None) -> int:
    """The nav badge beside "Releases" for the people who publish: open requests."""
    return publish_requests_open(project=project, since=since).count()
