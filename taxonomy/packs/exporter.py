"""Exporting a project as a knowledge pack: deterministic, so export → import → export is identical."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import yaml

from projects.models import Project
from taxonomy.models import Cluster, ContextTypology, Label, LabelIncompatibility, Policy, Role
from taxonomy.services import policy_as_data, typology_as_data

from .reader import FORMAT

if TYPE_CHECKING:
    from ontology.store.port import GraphData


def pack_export(*, project: Project, graph: GraphData | None = None) -> dict[str, Any]:
    """The project's core knowledge and graph as a pack mapping (see docs/knowledge-pack-format.md).

    ``graph`` is the project's graph when the caller has just exported it from the store."""
    from memory.models import TermDistinction
    from ontology.pack_graph import alias_to_pack, edge_to_pack, node_to_pack
    from ontology.store import get_graph_store

    labels = Label.objects.filter(project=project).select_related("cluster", "parent").order_by("label_id")
    if graph is None:
        graph = get_graph_store().export_graph(project.pk)
    return {
        "format": FORMAT,
        "project": {"slug": project.slug, "name": project.name, "description": project.description},
        "clusters": [
            {"key": c.key, "name": c.name, "description": c.description}
            for c in Cluster.objects.filter(project=project).order_by("key")
        ],
        "labels": [
            {
                "id": label.label_id,
                "name": label.name,
                "cluster": label.cluster.key,
                "parent": label.parent.label_id if label.parent is not None else None,
                "status": label.status,
                **({"status_reason": label.status_reason} if label.status_reason else {}),
                "description": label.description,
                "synonyms": list(label.synonyms),
                "examples": list(label.examples),
            }
            for label in labels
        ],
        "incompatibilities": sorted(
            (
                {"labels": [i.label_a.label_id, i.label_b.label_id], "reason": i.reason}
                for i in LabelIncompatibility.objects.filter(project=project).select_related(
                    "label_a", "label_b"
                )
            ),
            key=lambda x: x["labels"],
        ),
        "typologies": [
            typology_as_data(t) for t in ContextTypology.objects.filter(project=project).order_by("key")
        ],
        "policies": [policy_as_data(p) for p in Policy.objects.filter(project=project).order_by("key")],
        "roles": [
            {
                "key": r.key,
                "name": r.name,
                "policy": r.policy.key,
                "default_typology": r.default_typology.key if r.default_typology is not None else None,
            }
            for r in Role.objects.filter(project=project)
            .select_related("policy", "default_typology")
            .order_by("key")
        ],
        "distinct_terms": [
            {"terms": [d.first, d.second], "reason": d.reason}
            for d in TermDistinction.objects.filter(project=project).order_by("first", "second")
        ],
        "nodes": [node_to_pack(n) for n in graph.nodes],
        "edges": [edge_to_pack(e) for e in graph.edges],
        "aliases": [alias_to_pack(a) for a in graph.aliases],
    }


def pack_dump(data: dict[str, Any], *, fmt: str = "yaml") -> str:
    if fmt == "json":
        import json

        return json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
