"""Reads of the ontology graph and its releases."""

from __future__ import annotations

from django.db.models import QuerySet

from projects.models import Project

from .models import OntologyNode, Release


def release_active_summary() -> dict[str, object] | None:
    """Active release per project slug (version, checksum); None while no project has a release."""
    active = Release.objects.filter(is_active=True).select_related("project").order_by("project__slug")
    summary = {r.project.slug: {"version": r.version, "checksum": r.checksum[:12]} for r in active}
    return summary or None


def release_list(*, project: Project) -> QuerySet[Release]:
    return Release.objects.filter(project=project).select_related("created_by").order_by("-version")


def nodes_for_label(*, project: Project, label_id: str) -> QuerySet[OntologyNode]:
    """Draft nodes attached to a label (the label page lists them)."""
    return OntologyNode.objects.filter(project=project, label_links__label_id=label_id).order_by("node_id")
