"""What the graph views share with the curation UI, and the few things only they need.

Access, rendering and refusals follow ``arg_platform.ui`` (imported, not copied): a project the
caller cannot see is a 404, any POST needs CURATE (403), a refused form comes back with status 422
and is swapped in place. Publishing and activating releases additionally need PUBLISH (admins).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.http import HttpRequest
from django.urls import reverse

from arg_platform.handler_targets import handler_shown
from arg_platform.models import AuditEvent
from arg_platform.ui import REFUSED, go_to, project_view, render_page, save_form, shown
from ontology.graph_read import DRAFT, RELEASE
from ontology.models import Release
from ontology.releases import release_active
from projects.access import Capability, ProjectAccess

__all__ = [
    "REFUSED",
    "draft_state",
    "go_to",
    "graph_url",
    "node_events",
    "node_history_rows",
    "project_view",
    "render_page",
    "require_publish",
    "save_form",
    "source_of",
]

NODE_HISTORY_SIZE = 20


def graph_url(name: str, access: ProjectAccess, *args: Any, **query: Any) -> str:
    url = reverse(f"graph:{name}", args=[access.project.slug, *args])
    query = {k: v for k, v in query.items() if v not in (None, "")}
    return f"{url}?{urlencode(query)}" if query else url


def require_publish(access: ProjectAccess) -> None:
    if not access.can(Capability.PUBLISH):
        raise PermissionDenied(f"your role ({access.role}) may not publish or activate releases")


def source_of(request: HttpRequest, active: Release | None) -> str:
    """``?source=release`` shows the active release (when there is one); the draft otherwise."""
    return RELEASE if request.GET.get("source") == RELEASE and active is not None else DRAFT


def draft_state(access: ProjectAccess) -> dict[str, Any]:
    """The active release and whether the draft moved on since it was frozen (knowledge revisions)."""
    project = access.project
    project.refresh_from_db(fields=["knowledge_revision"])
    active = release_active(project_id=project.pk)
    return {
        "active_release": active,
        "draft_revision": project.knowledge_revision,
        "draft_differs": active is None or active.knowledge_revision != project.knowledge_revision,
    }


def node_events(access: ProjectAccess, node_id: str) -> Any:
    """Audit events of the node and of every edge touching it (edge keys are ``source|target|type``)."""
    return AuditEvent.objects.filter(
        Q(object_type="node", object_key=node_id)
        | Q(object_type="edge", object_key__startswith=f"{node_id}|")
        | Q(object_type="edge", object_key__contains=f"|{node_id}|"),
        project=access.project,
    ).order_by("-created_at", "-id")


def _shown_value(field: str, value: Any, curator: bool) -> Any:
    return shown(handler_shown(value, curator=curator) if field == "handler" else value)


def node_history_rows(access: ProjectAccess, node_id: str, events: Any) -> list[dict[str, Any]]:
    """Events as rows with their changed fields; an edge event names (and links) the other node."""
    curator = access.can(Capability.CURATE)
    rows = []
    for event in events:
        fields = list(dict.fromkeys([*event.before, *event.after]))
        changes = [
            (f, _shown_value(f, event.before.get(f), curator), _shown_value(f, event.after.get(f), curator))
            for f in fields
        ]
        changes = [change for change in changes if change[1] != change[2]]  # edge updates log both fields
        row: dict[str, Any] = {"event": event, "changes": changes, "url": ""}
        if event.object_type == "edge":
            source, target, edge_type = (event.object_key.split("|") + ["", "", ""])[:3]
            other = target if source == node_id else source
            row.update(
                edge={"source": source, "target": target, "type": edge_type, "outgoing": source == node_id},
                url=graph_url("node_detail", access, other),
                other=other,
            )
        rows.append(row)
    return rows
