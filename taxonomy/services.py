"""Writes of core knowledge. Every write runs the deterministic validator first and is atomic.

The taxonomy maintenance contract (ARG §2.3.5) lives here: adding, moving, renaming or deprecating a
label refreshes the current paths of its subtree, cleans policy references that would dangle, bumps
the project's ``knowledge_revision`` (the label index and the next release read it) and writes the
audit trail.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from django.contrib.auth.models import User
from django.db import models, transaction
from django.db.models import F
from django.utils import timezone

from arg_platform.audit import Actor, actor_user, audit_record
from arg_platform.errors import NotFound, RuleViolation, Violation
from projects.models import Project

from .attachments import attached_nodes
from .models import Cluster, ContextTypology, Label, LabelIncompatibility, LabelStatus, Policy, Role
from .selectors import taxonomy_view
from .validator import (
    LabelRecord,
    pair_key,
    validate_policy,
    validate_taxonomy,
    validate_typology,
)

# Allowed status transitions (ARG §3.2.4): CANDIDATE → SHADOW → ACTIVE → DEPRECATED; DEPRECATED is
# terminal so a LabelID is never brought back with another meaning.
STATUS_TRANSITIONS: dict[str, frozenset[str]] = {
    LabelStatus.CANDIDATE: frozenset({LabelStatus.SHADOW, LabelStatus.ACTIVE, LabelStatus.DEPRECATED}),
    LabelStatus.SHADOW: frozenset({LabelStatus.ACTIVE, LabelStatus.DEPRECATED, LabelStatus.CANDIDATE}),
    LabelStatus.ACTIVE: frozenset({LabelStatus.DEPRECATED}),
    LabelStatus.DEPRECATED: frozenset(),
}


def knowledge_changed(*, project: Project) -> None:
    """Mark the project's core knowledge as changed (label index and draft release depend on it)."""
    Project.objects.filter(pk=project.pk).update(knowledge_revision=F("knowledge_revision") + 1)


def _raise_if(violations: list[Violation]) -> None:
    if violations:
        raise RuleViolation(violations)


def _clean_list(values: Iterable[object] | None) -> list[str]:
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    out: list[str] = []
    seen: set[str] = set()
    for value in values:
        text = str(value).strip()
        if text and text.casefold() not in seen:
            seen.add(text.casefold())
            out.append(text)
    return out


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


# --- clusters -------------------------------------------------------------------------------------


@transaction.atomic
def cluster_create(*, project: Project, actor: Actor, key: str, name: str, description: str = "") -> Cluster:
    """Create a stable top-level domain."""
    cluster = Cluster(project=project, key=key.strip(), name=name.strip(), description=description)
    _full_clean(cluster, "cluster")
    if Cluster.objects.filter(project=project, key=cluster.key).exists():
        raise RuleViolation(Violation("cluster.unique_key", f"cluster key {key!r} already exists", "key"))
    if Cluster.objects.filter(project=project, name__iexact=cluster.name).exists():
        raise RuleViolation(
            Violation("cluster.unique_name", f"a cluster named {name!r} already exists", "name")
        )
    cluster.save()
    audit_record(
        project=project,
        actor=actor,
        action="create",
        object_type="cluster",
        object_key=cluster.key,
        after={"name": cluster.name, "description": cluster.description},
    )
    knowledge_changed(project=project)
    return cluster


@transaction.atomic
def cluster_update(*, cluster: Cluster, actor: Actor, name: str, description: str) -> Cluster:
    """Rename or re-describe a cluster (its key stays); refreshes the paths of its labels."""
    before = {"name": cluster.name, "description": cluster.description}
    if (
        Cluster.objects.filter(project=cluster.project, name__iexact=name.strip())
        .exclude(pk=cluster.pk)
        .exists()
    ):
        raise RuleViolation(
            Violation("cluster.unique_name", f"a cluster named {name!r} already exists", "name")
        )
    cluster.name, cluster.description = name.strip(), description
    _full_clean(cluster, "cluster")
    cluster.save()
    for root in Label.objects.filter(cluster=cluster, parent__isnull=True):
        _refresh_paths(root)
    audit_record(
        project=cluster.project,
        actor=actor,
        action="update",
        object_type="cluster",
        object_key=cluster.key,
        before=before,
        after={"name": cluster.name, "description": cluster.description},
    )
    knowledge_changed(project=cluster.project)
    return cluster


def _full_clean(obj: models.Model, kind: str, exclude: list[str] | None = None) -> None:
    from django.core.exceptions import ValidationError

    try:
        obj.full_clean(exclude=exclude, validate_unique=False, validate_constraints=False)
    except ValidationError as exc:
        raise RuleViolation(
            [
                Violation(f"{kind}.field", f"{field}: {' '.join(msgs)}", field)
                for field, msgs in exc.message_dict.items()
            ]
        ) from exc


# --- labels ---------------------------------------------------------------------------------------


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
) -> Label:
    """Add a label (root when ``parent_id`` is None) under the validator's rules.

    ``label_id`` is one the caller issued with ``next_label_id`` beforehand (the changeset interpreter
    issues it when it applies a ``label_add``); by default the next one is issued here."""
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
        reason=reason,
    )
    knowledge_changed(project=project)
    return label


def _user_or_none(actor: Actor) -> User | None:
    return actor_user(actor)


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
) -> Label:
    """Rename or edit a label's description, synonyms or examples (its LabelID never changes)."""
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
    _raise_if(validate_taxonomy(taxonomy_view(project=label.project).with_label(record)))
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
        reason=reason,
    )
    knowledge_changed(project=label.project)
    return label


def _diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    keys = [k for k in after if before.get(k) != after.get(k)]
    return {k: before.get(k) for k in keys}, {k: after.get(k) for k in keys}


def label_example_add(*, label: Label, actor: Actor, text: str) -> Label:
    return label_update(label=label, actor=actor, examples=[*label.examples, text])


def label_example_remove(*, label: Label, actor: Actor, text: str) -> Label:
    if text not in label.examples:
        raise NotFound(f"{label.label_id} has no example {text!r}")
    return label_update(label=label, actor=actor, examples=[e for e in label.examples if e != text])


def label_synonym_add(*, label: Label, actor: Actor, text: str) -> Label:
    return label_update(label=label, actor=actor, synonyms=[*label.synonyms, text])


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


# --- incompatibilities ----------------------------------------------------------------------------


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


# --- typologies -----------------------------------------------------------------------------------

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


# --- policies and roles ---------------------------------------------------------------------------

POLICY_FIELDS = (
    "name",
    "description",
    "allowed_labels",
    "forbidden_labels",
    "allowed_node_types",
    "forbidden_node_types",
    "max_hops",
    "blocked_terms",
    "blocked_patterns",
    "sensitive_topics",
    "scope_statement",
    "refusal_template",
    "refocus_template",
    "memory_scopes",
)


def policy_defaults() -> dict[str, Any]:
    """A new policy's data form (the knowledge-pack shape); a fresh dict on every call."""
    return {
        "key": "",
        "name": "",
        "description": "",
        "allowed_labels": [],
        "forbidden_labels": [],
        "allowed_node_types": [],
        "forbidden_node_types": [],
        "max_hops": None,
        "blocked_terms": [],
        "blocked_patterns": [],
        "sensitive_topics": [],
        "scope_statement": "",
        "refusal_template": "",
        "refocus_template": "",
        "memory_scopes": ["USER"],
    }


def policy_as_data(p: Policy) -> dict[str, Any]:
    return {"key": p.key, **{f: getattr(p, f) for f in POLICY_FIELDS}}


@transaction.atomic
def policy_save(
    *, project: Project, actor: Actor, data: Mapping[str, Any], policy: Policy | None = None
) -> Policy:
    """Create (``policy`` None) or update a policy; label references are checked against the taxonomy."""
    merged: dict[str, Any] = policy_as_data(policy) if policy is not None else policy_defaults()
    merged.update(data)
    if policy is not None:
        merged["key"] = policy.key
    _raise_if(validate_policy(taxonomy_view(project=project), merged))
    before = policy_as_data(policy) if policy is not None else {}
    if policy is None:
        if Policy.objects.filter(project=project, key=merged["key"]).exists():
            raise RuleViolation(
                Violation("policy.unique_key", f"policy {merged['key']!r} already exists", "key")
            )
        policy = Policy(project=project, key=merged["key"])
    for f in POLICY_FIELDS:
        setattr(policy, f, merged[f])
    policy.blocked_terms = [t.strip().lower() for t in policy.blocked_terms if t.strip()]
    _full_clean(policy, "policy", exclude=["project"])
    policy.save()
    audit_record(
        project=project,
        actor=actor,
        action="update" if before else "create",
        object_type="policy",
        object_key=policy.key,
        before=_diff(before, policy_as_data(policy))[0] if before else {},
        after=_diff(before, policy_as_data(policy))[1],
    )
    knowledge_changed(project=project)
    return policy


@transaction.atomic
def role_save(
    *,
    project: Project,
    actor: Actor,
    key: str,
    name: str,
    policy_key: str,
    default_typology_key: str | None = None,
    role: Role | None = None,
) -> Role:
    """Create or update a policy role (maps people and API clients to a policy)."""
    policy = Policy.objects.filter(project=project, key=policy_key).first()
    if policy is None:
        raise RuleViolation(
            Violation("role.policy_exists", f"policy {policy_key!r} does not exist", "policy")
        )
    typology = None
    if default_typology_key:
        typology = ContextTypology.objects.filter(project=project, key=default_typology_key).first()
        if typology is None:
            raise RuleViolation(
                Violation(
                    "role.typology_exists",
                    f"typology {default_typology_key!r} does not exist",
                    "default_typology",
                )
            )
    if role is None:
        if Role.objects.filter(project=project, key=key).exists():
            raise RuleViolation(Violation("role.unique_key", f"role {key!r} already exists", "key"))
        role = Role(project=project, key=key)
    before = {"name": role.name, "policy": role.policy.key if role.policy_id else None}
    role.name, role.policy, role.default_typology = name, policy, typology
    _full_clean(role, "role", exclude=["project", "policy", "default_typology"])
    role.save()
    audit_record(
        project=project,
        actor=actor,
        action="save",
        object_type="role",
        object_key=role.key,
        before=before,
        after={"name": name, "policy": policy_key, "default_typology": default_typology_key},
    )
    knowledge_changed(project=project)
    return role
