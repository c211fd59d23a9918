"""The lifecycle of a label: its *status* moves along CANDIDATE → SHADOW → ACTIVE → DEPRECATED
(``STATUS_TRANSITIONS``), each move recorded with who, when and why. DEPRECATED is terminal, so a
LabelID is never brought back with another meaning; a label still attached to ACTIVE ontology nodes
cannot be deprecated, and deprecating one removes it from every policy allow-list."""

from __future__ import annotations

from dataclasses import replace

from django.db import transaction
from django.utils import timezone

from arg_platform.audit import Actor, audit_record
from arg_platform.errors import RuleViolation, Violation

from ..attachments import attached_nodes
from ..models import Label, LabelStatus, Policy
from ..selectors import taxonomy_view
from ..validator import validate_taxonomy
from .knowledge import _raise_if, _user_or_none, knowledge_changed

# Allowed status transitions (ARG §3.2.4): CANDIDATE → SHADOW → ACTIVE → DEPRECATED; DEPRECATED is
# terminal so a LabelID is never brought back with another meaning.
STATUS_TRANSITIONS: dict[str, frozenset[str]] = {
    LabelStatus.CANDIDATE: frozenset({LabelStatus.SHADOW, LabelStatus.ACTIVE, LabelStatus.DEPRECATED}),
    LabelStatus.SHADOW: frozenset({LabelStatus.ACTIVE, LabelStatus.DEPRECATED, LabelStatus.CANDIDATE}),
    LabelStatus.ACTIVE: frozenset({LabelStatus.DEPRECATED}),
    LabelStatus.DEPRECATED: frozenset(),
}


@transaction.atomic
def label_set_status(*, label: Label, actor: Actor, status: str, reason: str = "") -> Label:
    """Move a label along CANDIDATE → SHADOW → ACTIVE → DEPRECATED, recording who, when and why.

    Deprecating a label requires its children to be deprecated or moved first (children first), and
    removes it from every policy allow-list so no policy keeps a dangling reference.
    """
    label = Label.objects.select_for_update(of=("self",)).select_related("cluster", "parent").get(pk=label.pk)
    if status not in LabelStatus.values:
        raise RuleViolation(Violation("taxonomy.label_status", f"unknown status {status!r}", "status"))
    if status == label.status:
        return label
    if status not in STATUS_TRANSITIONS[label.status]:
        raise RuleViolation(
            Violation(
                "taxonomy.status_transition",
                f"{label.label_id} cannot go from {label.status} to {status}",
                "status",
            )
        )
    if status == LabelStatus.DEPRECATED and not reason.strip():
        raise RuleViolation(
            Violation("taxonomy.status_reason", "deprecating a label needs a reason", "reason")
        )
    if status == LabelStatus.DEPRECATED:
        _refuse_if_attached(label)
    view = taxonomy_view(project=label.project)
    record = view.labels[label.label_id]
    _raise_if(validate_taxonomy(view.with_label(replace(record, status=status))))
    before = label.status
    label.status = status
    label.status_changed_at = timezone.now()
    label.status_changed_by = _user_or_none(actor)
    label.status_reason = reason[:500]
    label.save(
        update_fields=["status", "status_changed_at", "status_changed_by", "status_reason", "updated_at"]
    )
    if status == LabelStatus.DEPRECATED:
        for policy in Policy.objects.select_for_update().filter(project=label.project):
            if label.label_id in policy.allowed_labels:
                policy.allowed_labels = [x for x in policy.allowed_labels if x != label.label_id]
                policy.save(update_fields=["allowed_labels", "updated_at"])
                audit_record(
                    project=label.project,
                    actor=actor,
                    action="update",
                    object_type="policy",
                    object_key=policy.key,
                    before={"allowed_labels": "+" + label.label_id},
                    after={"allowed_labels": "-" + label.label_id},
                    reason=f"label {label.label_id} deprecated",
                )
    audit_record(
        project=label.project,
        actor=actor,
        action="status",
        object_type="label",
        object_key=label.label_id,
        before={"status": before},
        after={"status": status},
        reason=reason,
    )
    knowledge_changed(project=label.project)
    return label


def _refuse_if_attached(label: Label) -> None:
    """Maintenance contract: ACTIVE nodes must be re-attached before their label is deprecated."""
    attached = [
        node.node_id
        for node in attached_nodes(project=label.project, label_id=label.label_id, status="ACTIVE", limit=6)
    ]
    if attached:
        shown = ", ".join(attached[:5]) + (" …" if len(attached) > 5 else "")
        raise RuleViolation(
            Violation(
                "taxonomy.label_attached",
                f"{label.label_id} is attached to ACTIVE ontology nodes ({shown}); re-attach them first",
                "status",
            )
        )
