"""The one service that writes the audit trail."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

from django.contrib.auth.models import User

from .models import AuditEvent
from .request_id import get_request_id

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser

# Who made a change: a person (``request.user``: signed in, or anonymous), a named process, or None
# (the system). A signed-in user is linked; any other actor is recorded by name.
Actor: TypeAlias = "User | AnonymousUser | str | None"


def actor_user(actor: Actor) -> User | None:
    """``actor`` when it is a signed-in, saved user (the rows it writes link to it), else None."""
    if isinstance(actor, User) and actor.pk is not None and actor.is_authenticated:
        return actor
    return None


def audit_record(
    *,
    project: Any,
    actor: Actor,
    action: str,
    object_type: str,
    object_key: str,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    reason: str = "",
) -> AuditEvent:
    """Append one audit event; call it inside the transaction of the write it describes."""
    user = actor_user(actor)
    name = getattr(actor, "username", "") or (str(actor) if actor is not None else "system")
    return AuditEvent.objects.create(
        project=project,
        actor=user,
        actor_name=name[:150],
        action=action,
        object_type=object_type,
        object_key=str(object_key)[:128],
        before=before or {},
        after=after or {},
        reason=(reason or "")[:500],
        request_id=get_request_id() or "",
    )
