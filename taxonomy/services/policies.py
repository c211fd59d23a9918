"""Writes of policies and roles. A *policy* governs what the roles that use it may read and say:
label rules on LabelIDs (each covering the label's whole subtree; an empty allow-list means every
label), allowed and forbidden node types, a hop limit, blocked terms and patterns, sensitive topics,
the scope statement, refusal and refocus templates, the language messages (the answer to a prompt in
a language the release does not cover, per ISO 639-1 code or ``default``), and the memory scopes
MemoryWrite may use. A *role* maps people and API clients to one policy, and optionally to a default context typology.

A policy's *data form* (``policy_as_data``) is its knowledge-pack shape: ``key`` and the
``POLICY_FIELDS``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction

from arg_platform.audit import Actor, audit_record
from arg_platform.errors import RuleViolation, Violation
from projects.models import Project

from ..models import ContextTypology, Policy, Role
from ..selectors import taxonomy_view
from ..validator import validate_policy
from .knowledge import _diff, _full_clean, _raise_if, knowledge_changed

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
    "language_messages",
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
        "language_messages": {},
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
