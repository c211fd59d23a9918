"""Writes of label incompatibilities. An *incompatibility* is an explicit pair of labels that may not
co-occur in one request's final label set, stored once per pair in ``pair_key`` order."""

from __future__ import annotations

from django.db import transaction

from arg_platform.audit import Actor, audit_record
from arg_platform.errors import RuleViolation, Violation
from projects.models import Project

from ..models import Label, LabelIncompatibility
from ..selectors import taxonomy_view
from ..validator import pair_key, validate_taxonomy
from .knowledge import _raise_if, knowledge_changed


@transaction.atomic
def incompatibility_create(
    *, project: Project, actor: Actor, label_a: str, label_b: str, reason: str = ""
) -> LabelIncompatibility:
    """Declare that two labels may not co-occur."""
    a, b = pair_key(label_a, label_b)
    view = taxonomy_view(project=project)
    if (a, b) in view.incompatibilities:
        raise RuleViolation(
            Violation("taxonomy.incompatible_unique", f"{a} and {b} are already incompatible", "labels")
        )
    _raise_if(validate_taxonomy(view.with_incompatibility(a, b)))
    inc = LabelIncompatibility.objects.create(
        project=project,
        label_a=Label.objects.get(project=project, label_id=a),
        label_b=Label.objects.get(project=project, label_id=b),
        reason=reason[:500],
    )
    audit_record(
        project=project,
        actor=actor,
        action="create",
        object_type="incompatibility",
        object_key=f"{a}|{b}",
        after={"reason": reason},
        reason=reason,
    )
    knowledge_changed(project=project)
    return inc


@transaction.atomic
def incompatibility_delete(*, incompatibility: LabelIncompatibility, actor: Actor, reason: str = "") -> None:
    project = incompatibility.project
    key = f"{incompatibility.label_a.label_id}|{incompatibility.label_b.label_id}"
    incompatibility.delete()
    audit_record(
        project=project,
        actor=actor,
        action="delete",
        object_type="incompatibility",
        object_key=key,
        reason=reason,
    )
    knowledge_changed(project=project)
