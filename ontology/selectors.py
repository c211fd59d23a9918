"""Reads of the ontology graph and its releases."""

from __future__ import annotations

from django.db.models import QuerySet

from projects.models import Project

from .models import Release
from .store import get_graph_store
from .store.port import NodeData

LABEL_NODES_SHOWN = 200


def release_active_summary() -> dict[str, dict[str, object]] | None:
    """Active release per project slug (version, checksum); None while no project has a release."""
    active = Release.objects.filter(is_active=True).select_related("project").order_by("project__slug")
    summary = {r.project.slug: {"version": r.version, "checksum": r.checksum[:12]} for r in active}
    return summary or None


def release_list(*, project: Project) -> QuerySet[Release]:
    """The project's releases, newest first, with their lineage (parent, applied proposals) loaded."""
    return (
        Release.objects.filter(project=project)
        .select_related("created_by", "parent")
        .prefetch_related("applied_proposals__decided_by")
        .order_by("-version")
    )


def nodes_for_label(
    *, project: Project, label_id: str, status: str | None = None, limit: int = LABEL_NODES_SHOWN
) -> list[NodeData]:
    """Draft nodes attached to a label, by node_id, read from the graph store (at most ``limit``)."""
    nodes, _ = get_graph_store().list_nodes(project.pk, label=label_id, status=status, limit=limit)
    return nodes


def node_count_for_label(*, project: Project, label_id: str, status: str | None = None) -> int:
    """How many draft nodes are attached to a label."""
    _, total = get_graph_store().list_nodes(project.pk, label=label_id, status=status, limit=0)
    return total
