"""Writes of labels: issue a LabelID, create, edit (name, description, synonyms, examples) and move.

A *label* is a node of the taxonomy tree, known forever by its LabelID (``L00042``, issued by
``next_label_id`` and never reused). Its *path* is the current chain of names from its cluster down to
it ("Billing › Invoices › Late fees") and its *depth* the number of ancestors; both are metadata that a
rename or a move refreshes for the whole subtree. Status changes live in ``label_lifecycle``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from arg_platform.audit import Actor, audit_record
from arg_platform.errors import NotFound, RuleViolation, Violation
from projects.models import Project

from ..models import Cluster, Label, LabelStatus
from ..selectors import taxonomy_view
from ..term_guard import TermConflict, TermConflicts, term_conflicts
from ..validator import LabelRecord, TaxonomyView, validate_taxonomy
from .knowledge import _clean_list, _diff, _full_clean, _raise_if, _user_or_none, knowledge_changed


def _label_snapshot(label: Label) -> dict[str, Any]:
    return {
        "name": label.name,
        "cluster": label.cluster.key,
        "parent": label.parent.label_id if label.parent is not None else None,
        "status": label.status,
        "description": label.description,
        "synonyms": list(label.synonyms),
        "examples": list(label.examples),
        "path": label.path,
    }


def _compute_path(label: Label) -> tuple[str, int]:
    names = [label.name]
    current = label.parent
    seen = {label.pk}
    while current is not None and current.pk not in seen:
        seen.add(current.pk)
        names.append(current.name)
        current = current.parent
    names.append(label.cluster.name)
    return " › ".join(reversed(names)), len(names) - 2


def _refresh_paths(label: Label) -> None:
    """Recompute ``path``/``depth`` of a label and its whole subtree (metadata only)."""
    stack = [label]
    while stack:
        current = stack.pop()
        current.refresh_from_db(fields=["name", "parent", "cluster"])
        path, depth = _compute_path(current)
        Label.objects.filter(pk=current.pk).update(path=path, depth=depth)
        stack.extend(current.children.all().select_related("cluster", "parent"))


def _guard_terms(
    view: TaxonomyView, label_id: str, new_terms: dict[str, list[str]], *, accept_similar: bool
) -> list[TermConflict]:
    """Refuse new terms identical to another label's, and very close ones unless ``accept_similar``
    (``taxonomy.term_guard``); the accepted close ones are returned (the audit records them)."""
    conflicts = term_conflicts(view, label_id=label_id, new_terms=new_terms)
    refused = [c for c in conflicts if c.identical or not accept_similar]
    if refused:
        raise TermConflicts(refused)
    return conflicts


def next_label_id(*, project: Project) -> str:
    """Issue the next LabelID; the counter only moves forward, so IDs are never reused."""
    Project.objects.filter(pk=project.pk).update(label_seq=F("label_seq") + 1)
    project.refresh_from_db(fields=["label_seq"])
    return f"L{project.label_seq:05d}"


@transaction.atomic
def label_create(
    *,
    project: Project,
    actor: Actor,
    name: str,
    cluster_key: str,
    parent_id: str | None = None,
    description: str = "",
    synonyms: Iterable[str] | None = None,
    examples: Iterable[str] | None = None,
    status: str = LabelStatus.ACTIVE,
    reason: str = "",
    label_id: str | None = None,
    accept_similar: bool = False,
) -> Label:
    """Add a label (root when ``parent_id`` is None) under the validator's rules.

    ``label_id`` is one the caller issued with ``next_label_id`` beforehand (the changeset interpreter
    issues it when it applies a ``label_add``); by default the next one is issued here. Synonyms and
    examples pass the term guard (``taxonomy.term_guard``): one identical to another label's term is
    refused, a very close one too unless ``accept_similar``."""
    if status == LabelStatus.DEPRECATED:
        raise RuleViolation(
            Violation("taxonomy.label_status", "a new label cannot start DEPRECATED", "status")
        )
    if status not in LabelStatus.values:
        raise RuleViolation(Violation("taxonomy.label_status", f"unknown status {status!r}", "status"))
    view = taxonomy_view(project=project)
    # The LabelID is issued first so messages name it; a refusal rolls the counter back with the rest.
    label_id = label_id or next_label_id(project=project)
    record = LabelRecord(
        label_id,
        name.strip(),
        cluster_key,
        parent_id or None,
        status,
        description,
        tuple(_clean_list(synonyms)),
        tuple(_clean_list(examples)),
    )
    _raise_if(validate_taxonomy(view.with_label(record)))
    accepted = _guard_terms(
        view,
        label_id,
        {"synonyms": list(record.synonyms), "examples": list(record.examples)},
        accept_similar=accept_similar,
    )
    cluster = Cluster.objects.get(project=project, key=cluster_key)
    parent = Label.objects.get(project=project, label_id=parent_id) if parent_id else None
    label = Label(
        project=project,
        label_id=label_id,
        name=record.name,
        description=description,
        cluster=cluster,
        parent=parent,
        status=status,
        synonyms=list(record.synonyms),
        examples=list(record.examples),
        status_changed_at=timezone.now(),
        status_changed_by=_user_or_none(actor),
        status_reason=reason[:500],
    )
    label.path, label.depth = _compute_path(label)
    _full_clean(label, "label", exclude=["project", "cluster", "parent", "status_changed_by"])
    label.save()
    audit_record(
        project=project,
        actor=actor,
        action="create",
        object_type="label",
        object_key=label.label_id,
        after=_label_snapshot(label),
        reason=_with_accepted(reason, accepted),
    )
    knowledge_changed(project=project)
    return label


@transaction.atomic
def label_update(
    *,
    label: Label,
    actor: Actor,
    name: str | None = None,
    description: str | None = None,
    synonyms: Iterable[str] | None = None,
    examples: Iterable[str] | None = None,
    reason: str = "",
    accept_similar: bool = False,
) -> Label:
    """Rename or edit a label's description, synonyms or examples (its LabelID never changes).

    Synonyms and examples the label did not have pass the term guard (``taxonomy.term_guard``): one
    identical to another label's term is refused, a very close one too unless ``accept_similar``."""
    label = Label.objects.select_for_update(of=("self",)).select_related("cluster", "parent").get(pk=label.pk)
    before = _label_snapshot(label)
    new_name = label.name if name is None else name.strip()
    new_description = label.description if description is None else description
    new_synonyms = list(label.synonyms) if synonyms is None else _clean_list(synonyms)
    new_examples = list(label.examples) if examples is None else _clean_list(examples)
    record = LabelRecord(
        label.label_id,
        new_name,
        label.cluster.key,
        before["parent"],
        label.status,
        new_description,
        tuple(new_synonyms),
        tuple(new_examples),
    )
    view = taxonomy_view(project=label.project)
    _raise_if(validate_taxonomy(view.with_label(record)))
    accepted = _guard_terms(
        view,
        label.label_id,
        {
            "synonyms": [s for s in new_synonyms if s not in before["synonyms"]],
            "examples": [e for e in new_examples if e not in before["examples"]],
        },
        accept_similar=accept_similar,
    )
    label.name, label.description, label.synonyms, label.examples = (
        new_name,
        new_description,
        new_synonyms,
        new_examples,
    )
    label.save()
    if new_name != before["name"]:
        _refresh_paths(label)
        label.refresh_from_db()
    audit_record(
        project=label.project,
        actor=actor,
        action="update",
        object_type="label",
        object_key=label.label_id,
        before=_diff(before, _label_snapshot(label))[0],
        after=_diff(before, _label_snapshot(label))[1],
        reason=_with_accepted(reason, accepted),
    )
    knowledge_changed(project=label.project)
    return label


def _with_accepted(reason: str, accepted: list[TermConflict]) -> str:
    """The audit reason, with the close terms the writer confirmed (``accept_similar``)."""
    if not accepted:
        return reason
    note = "confirmed close to another label: " + "; ".join(
        f"“{c.text}” ~ {c.other.label_id} ({c.similarity:.2f})" for c in accepted
    )
    return f"{reason} ({note})" if reason else note


def label_example_add(*, label: Label, actor: Actor, text: str, accept_similar: bool = False) -> Label:
    return label_update(
        label=label, actor=actor, examples=[*label.examples, text], accept_similar=accept_similar
    )


def label_example_remove(*, label: Label, actor: Actor, text: str) -> Label:
    if text not in label.examples:
        raise NotFound(f"{label.label_id} has no example {text!r}")
    return label_update(label=label, actor=actor, examples=[e for e in label.examples if e != text])


def label_synonym_add(*, label: Label, actor: Actor, text: str, accept_similar: bool = False) -> Label:
    return label_update(
        label=label, actor=actor, synonyms=[*label.synonyms, text], accept_similar=accept_similar
    )


def label_synonym_remove(*, label: Label, actor: Actor, text: str) -> Label:
    if text not in label.synonyms:
        raise NotFound(f"{label.label_id} has no synonym {text!r}")
    return label_update(label=label, actor=actor, synonyms=[s for s in label.synonyms if s != text])


@transaction.atomic
def label_move(
    *, label: Label, actor: Actor, parent_id: str | None, cluster_key: str | None = None, reason: str = ""
) -> Label:
    """Move a label (and its subtree) under another parent, or to the root of a cluster.

    A child always lives in its parent's cluster; moving to a root needs ``cluster_key``. The whole
    subtree follows the label into the new cluster. LabelIDs do not change — only current paths.
    """
    label = Label.objects.select_for_update(of=("self",)).select_related("cluster", "parent").get(pk=label.pk)
    view = taxonomy_view(project=label.project)
    if parent_id:
        parent = view.labels.get(parent_id)
        if parent is None:
            raise RuleViolation(
                Violation("taxonomy.parent_exists", f"parent {parent_id} does not exist", "parent")
            )
        target_cluster = parent.cluster
        if cluster_key and cluster_key != target_cluster:
            raise RuleViolation(
                Violation(
                    "taxonomy.cluster_compat",
                    f"{label.label_id} cannot live in cluster {cluster_key!r} under {parent_id} "
                    f"(cluster {target_cluster!r})",
                    "parent",
                )
            )
    else:
        target_cluster = cluster_key or label.cluster.key
    before = _label_snapshot(label)
    subtree = view.subtree(label.label_id)
    moved = view
    for label_id in subtree:
        record = view.labels[label_id]
        moved = moved.with_label(
            LabelRecord(
                record.label_id,
                record.name,
                target_cluster,
                (parent_id or None) if label_id == label.label_id else record.parent,
                record.status,
                record.description,
                record.synonyms,
                record.examples,
            )
        )
    _raise_if(validate_taxonomy(moved))
    cluster = Cluster.objects.get(project=label.project, key=target_cluster)
    Label.objects.filter(project=label.project, label_id__in=subtree).update(cluster=cluster)
    label.parent = Label.objects.get(project=label.project, label_id=parent_id) if parent_id else None
    label.cluster = cluster
    label.save(update_fields=["parent", "cluster", "updated_at"])
    _refresh_paths(label)
    label.refresh_from_db()
    audit_record(
        project=label.project,
        actor=actor,
        action="move",
        object_type="label",
        object_key=label.label_id,
        before={"parent": before["parent"], "cluster": before["cluster"], "path": before["path"]},
        after={"parent": parent_id or None, "cluster": target_cluster, "path": label.path},
        reason=reason,
    )
    knowledge_changed(project=label.project)
    return label
