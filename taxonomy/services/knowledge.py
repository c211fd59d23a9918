"""What every write of core knowledge shares.

* ``knowledge_changed`` bumps the project's ``knowledge_revision``: the label index and the next
  release are built from the knowledge of a revision, so every write that changes it calls this;
* ``_raise_if`` turns the deterministic validator's violations into a ``RuleViolation``, and
  ``_full_clean`` does the same for a model's single-field checks;
* ``_clean_list`` is the canonical form of a list field (synonyms, examples): stripped, without empty
  entries, unique case-insensitively, first spelling kept;
* ``_diff`` is the part of a data form a write changed, as the audit trail's before/after pair.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.contrib.auth.models import User
from django.db import models
from django.db.models import F

from arg_platform.audit import Actor, actor_user
from arg_platform.errors import RuleViolation, Violation
from projects.models import Project


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


def _user_or_none(actor: Actor) -> User | None:
    return actor_user(actor)


def _diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    keys = [k for k in after if before.get(k) != after.get(k)]
    return {k: before.get(k) for k in keys}, {k: after.get(k) for k in keys}
