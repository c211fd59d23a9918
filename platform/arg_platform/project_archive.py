"""Archiving a project: how a project leaves the platform without losing its history.

A project is never deleted through the platform. Archiving sets ``Project.archived_at``: the project
disappears from every page and API (a 404, as for a project one is not a member of), its API tokens
stop authenticating, the nightly loop skips it, and every row it owns — releases, logs, memory, the
audit trail — is kept. Restoring clears the mark. Both are audited.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from projects.models import Project

from .audit import Actor, audit_record


def project_archive(*, project: Project, actor: Actor, reason: str = "") -> bool:
    """Archive ``project``; False when it already was (nothing is written)."""
    with transaction.atomic():
        locked = Project.objects.select_for_update().get(pk=project.pk)
        if locked.archived_at is not None:
            return False
        locked.archived_at = timezone.now()
        locked.save(update_fields=["archived_at"])
        audit_record(
            project=locked,
            actor=actor,
            action="archive",
            object_type="project",
            object_key=locked.slug,
            after={"archived_at": locked.archived_at.isoformat()},
            reason=reason,
        )
    project.archived_at = locked.archived_at
    return True


def project_restore(*, project: Project, actor: Actor, reason: str = "") -> bool:
    """Bring an archived ``project`` back; False when it was not archived."""
    with transaction.atomic():
        locked = Project.objects.select_for_update().get(pk=project.pk)
        if locked.archived_at is None:
            return False
        before = locked.archived_at.isoformat()
        locked.archived_at = None
        locked.save(update_fields=["archived_at"])
        audit_record(
            project=locked,
            actor=actor,
            action="restore",
            object_type="project",
            object_key=locked.slug,
            before={"archived_at": before},
            reason=reason,
        )
    project.archived_at = None
    return True
