"""Writes of context typologies. A *context typology* is an inference profile outside the graph:
access constraints, preferred node types, complexity budget, max depth and hops, beam width, response
style, fast-path eligibility and the composite-score weights α…ε; it carries no knowledge. A project
has at most one default typology. A *template* is a typology without a project, copied into a project
to be used.

A typology's *data form* (``typology_as_data``) is its knowledge-pack shape: ``key``, the
``TYPOLOGY_FIELDS`` and ``weights``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction

from arg_platform.audit import Actor, audit_record
from arg_platform.errors import NotFound, RuleViolation, Violation
from projects.models import Project

from ..models import ContextTypology
from ..validator import validate_typology
from .knowledge import _diff, _full_clean, _raise_if, knowledge_changed

TYPOLOGY_FIELDS = (
    "name",
    "description",
    "access_constraints",
    "preferred_node_types",
    "complexity_budget",
    "max_depth",
    "max_hops",
    "beam_width",
    "response_style",
    "fast_path_eligible",
    "is_default",
)


def typology_defaults() -> dict[str, Any]:
    """A new typology's data form (the knowledge-pack shape); a fresh dict on every call."""
    return {
        "key": "",
        "name": "",
        "description": "",
        "access_constraints": {},
        "preferred_node_types": [],
        "complexity_budget": 3,
        "max_depth": 3,
        "max_hops": 4,
        "beam_width": 3,
        "response_style": "concise",
        "fast_path_eligible": True,
        "is_default": False,
        "weights": {"alpha": 0.25, "beta": 0.35, "gamma": 0.2, "delta": 0.1, "epsilon": 0.1},
    }


def typology_as_data(t: ContextTypology) -> dict[str, Any]:
    data: dict[str, Any] = {"key": t.key, **{f: getattr(t, f) for f in TYPOLOGY_FIELDS}}
    data["weights"] = {w: getattr(t, f"weight_{w}") for w in ("alpha", "beta", "gamma", "delta", "epsilon")}
    return data


@transaction.atomic
def typology_save(
    *, project: Project | None, actor: Actor, data: Mapping[str, Any], typology: ContextTypology | None = None
) -> ContextTypology:
    """Create (``typology`` None) or update a context typology from its data form (see the pack format)."""
    merged = typology_as_data(typology) if typology is not None else typology_defaults()
    merged.update({k: v for k, v in data.items() if k != "weights"})
    if "weights" in data:
        merged["weights"] = {**merged["weights"], **dict(data["weights"])}
    if typology is not None:
        merged["key"] = typology.key
    _raise_if(validate_typology(merged))
    before = typology_as_data(typology) if typology is not None else {}
    if typology is None:
        if ContextTypology.objects.filter(project=project, key=merged["key"]).exists():
            raise RuleViolation(
                Violation("typology.unique_key", f"typology {merged['key']!r} already exists", "key")
            )
        typology = ContextTypology(project=project, key=merged["key"])
    for f in TYPOLOGY_FIELDS:
        setattr(typology, f, merged[f])
    for w, value in merged["weights"].items():
        setattr(typology, f"weight_{w}", float(value))
    _full_clean(typology, "typology", exclude=["project"])
    if typology.is_default:
        ContextTypology.objects.filter(project=project, is_default=True).exclude(pk=typology.pk).update(
            is_default=False
        )
    typology.save()
    if project is not None:
        audit_record(
            project=project,
            actor=actor,
            action="update" if before else "create",
            object_type="typology",
            object_key=typology.key,
            before=_diff(before, typology_as_data(typology))[0] if before else {},
            after=_diff(before, typology_as_data(typology))[1],
        )
        knowledge_changed(project=project)
    return typology


@transaction.atomic
def typology_copy_from_template(
    *, project: Project, actor: Actor, template_key: str, key: str | None = None
) -> ContextTypology:
    """Copy a shared typology template into a project (templates have no project)."""
    template = ContextTypology.objects.filter(project__isnull=True, key=template_key).first()
    if template is None:
        raise NotFound(f"typology template {template_key!r} not found")
    data = typology_as_data(template)
    data["key"] = key or template.key
    data["is_default"] = False
    return typology_save(project=project, actor=actor, data=data)
