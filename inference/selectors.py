"""Read-only queries of the inference app's pages."""

from __future__ import annotations

from django.db.models import Count, Q, QuerySet

from inference.models import InferenceLog
from projects.models import ApiToken, Project
from taxonomy.selectors import role_list

# The outcome filter's value for requests refused as invalid before routing (a 4xx): their log row
# carries the error and no outcome kind.
REJECTED = "REJECTED"


def try_role_default(*, project: Project) -> str:
    """The project's default role for "Try a request": the role most of the project's live API tokens
    carry (what its client apps send as), else the first role by key; ``""`` when the project defines
    no role (its releases are ungoverned)."""
    keys = [role.key for role in role_list(project=project)]
    if not keys:
        return ""
    used = (
        ApiToken.objects.filter(project=project, revoked_at__isnull=True, role__isnull=False)
        .values("role__key")
        .annotate(n=Count("pk"))
        .order_by("-n", "role__key")
        .values_list("role__key", flat=True)
        .first()
    )
    return used if used in keys else keys[0]


def trace_rows(*, project: Project, kind: str = "", flag: str = "") -> QuerySet[InferenceLog]:
    """The project's request log, newest first, filtered in the database by outcome kind (``REJECTED``:
    refused as invalid) and by a flag (one element of ``flags``, any case)."""
    logs = InferenceLog.objects.filter(project=project)
    if kind == REJECTED:
        logs = logs.filter(outcome_kind="").exclude(error="")
    elif kind:
        logs = logs.filter(outcome_kind=kind)
    if flag:
        # the JSON text of the list holds each flag quoted: '"OOD"' matches the element, not a substring
        logs = logs.filter(Q(flags__icontains=f'"{flag}"'))
    return logs
