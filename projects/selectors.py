"""Reads for projects, with the permission checks every other app relies on."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from arg_platform.errors import Forbidden, NotFound

from .access import CLIENT, Capability, ProjectAccess
from .models import ApiToken, Membership, PlatformRole, Project


def project_list_for_user(*, user: Any) -> QuerySet[Project]:
    """The projects a person may open (archived ones are nobody's until restored)."""
    if not getattr(user, "is_authenticated", False):
        return Project.objects.none()
    live = Project.objects.filter(archived_at__isnull=True)
    if getattr(user, "is_superuser", False):
        return live
    return live.filter(memberships__user=user).distinct()


def project_access(*, user: Any, token: ApiToken | None, slug: str) -> ProjectAccess:
    """Resolve the caller inside project ``slug``; a project the caller cannot see, or an archived one, is
    a 404.

    A token only ever opens its own project (nothing crosses projects), whatever its user may be
    a member of elsewhere (an archived project's tokens no longer authenticate at all).
    """
    if token is not None:
        if token.project.slug != slug:
            raise NotFound(f"project {slug!r} not found")
        if token.user_id is None:
            return ProjectAccess(
                project=token.project, role=CLIENT, policy_role_id=token.role_id, token_id=token.pk
            )
        user = token.user
    project = Project.objects.filter(slug=slug, archived_at__isnull=True).first()
    if project is None or not getattr(user, "is_authenticated", False):
        raise NotFound(f"project {slug!r} not found")
    role: str
    if getattr(user, "is_superuser", False):
        role = PlatformRole.ADMIN
    else:
        membership = Membership.objects.filter(user=user, project=project).first()
        if membership is None:
            raise NotFound(f"project {slug!r} not found")
        role = membership.role
    return ProjectAccess(
        project=project,
        role=role,
        policy_role_id=token.role_id if token else None,
        token_id=token.pk if token else None,
    )


def project_access_require(
    *, user: Any, token: ApiToken | None, slug: str, capability: Capability
) -> ProjectAccess:
    access = project_access(user=user, token=token, slug=slug)
    if not access.can(capability):
        raise Forbidden(f"your role ({access.role}) may not {capability.value} in this project")
    return access
