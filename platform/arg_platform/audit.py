"""The one service that writes the audit trail."""

from __future__ import annotations

from typing import Any

from .models import AuditEvent
from .request_id import get_request_id


def audit_record(
    *,
    project: Any,
    actor: Any,
    action: str,
    object_type: str,
    object_key: str,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    reason: str = "",
) -> AuditEvent:
    """Append one audit event; call it inside the transaction of the write it describes."""
    user = (
        actor
        if getattr(actor, "pk", None) is not None and getattr(actor, "is_authenticated", False)
        else None
    )
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
