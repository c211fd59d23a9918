"""Term distinctions: pairs of terms a project declares never to mean the same fact ("wool" ≠ "linen").

A reviewer teaches one with a DIFFERENT verdict — the term of the InfoUnit and the term of the fact — and
it is kept only when it separates the two statements it was taught on (``_distinction_checked``); a set of
mutually distinct terms may also be declared up front (``term_distinctions_declare``). The registry then
keeps any two facts apart that differ by such a pair of terms (``memory.distinctions``).
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction

from arg_platform.audit import Actor, actor_user, audit_record
from arg_platform.errors import NotFound, RuleViolation, Violation, ViolationCollector
from projects.models import Project

from ..distinctions import Distinction, separates, term_normalize, term_pairs, term_problem, term_set
from ..models import InfoUnit, RegistryAttempt, TermDistinction


def _distinction_checked(
    terms: tuple[str, str] | None, *, unit: InfoUnit, fact_statement: str
) -> Distinction | None:
    """The distinction a reviewer states with a DIFFERENT verdict — ``terms`` is (the term of the
    InfoUnit, the term of the fact) — checked against the two statements it must keep apart; ``None``
    when no term is given. Raises ``RuleViolation`` (rule ``memory.distinction``, fields ``unit_term``
    / ``fact_term``) before anything is written."""
    unit_term, fact_term = (term_normalize(t) for t in (terms or ("", "")))
    raw = tuple((t or "").strip() for t in (terms or ("", "")))
    if not any(raw):
        return None
    errors = ViolationCollector()
    for field_name, given, term in (("unit_term", raw[0], unit_term), ("fact_term", raw[1], fact_term)):
        if not given:
            errors.add("memory.distinction", "name the term on both sides, or neither", field_name)
        elif problem := term_problem(term, given):
            errors.add("memory.distinction", problem, field_name)
    errors.raise_if_any()
    if unit_term == fact_term:
        raise RuleViolation(Violation("memory.distinction", "the two terms are the same", "fact_term"))
    candidate = Distinction(min(unit_term, fact_term), max(unit_term, fact_term))
    if not separates(candidate, unit.canonical_statement, fact_statement):
        raise RuleViolation(
            Violation(
                "memory.distinction",
                f"InfoUnit #{unit.pk} must say “{unit_term}” and not “{fact_term}”, and the fact the reverse "
                f"(the unit: “{unit.canonical_statement}”; the fact: “{fact_statement}”)",
                "unit_term",
            )
        )
    return candidate


def _distinction_learn(
    distinction: Distinction | None,
    *,
    project: Project,
    attempt: RegistryAttempt | None,
    actor: Actor,
    reason: str,
) -> TermDistinction | None:
    """Store a checked distinction (once per pair of terms; a pair already taught is kept as it is)."""
    if distinction is None:
        return None
    row, created = TermDistinction.objects.get_or_create(
        project=project,
        first=distinction.first,
        second=distinction.second,
        defaults={"reason": reason[:500], "attempt": attempt, "created_by": actor_user(actor)},
    )
    if created:
        audit_record(
            project=project,
            actor=actor,
            action="create",
            object_type="term_distinction",
            object_key=str(row),
            after={"first": row.first, "second": row.second, "attempt": attempt.pk if attempt else None},
            reason=reason,
        )
    return row


@transaction.atomic
def term_distinctions_declare(
    *, project: Project, terms: Sequence[str], actor: Actor, reason: str = ""
) -> list[TermDistinction]:
    """Declare a set of mutually distinct terms up front ("window seat, aisle seat, middle seat";
    "wool, linen, cotton") — every pair of them becomes a term distinction, as if a reviewer had
    detached a wrong merge of each pair. Pairs already taught are kept as they are. Returns the
    distinctions created.

    Refused (``RuleViolation`` rule ``memory.distinction``, field ``terms``; nothing written) for the
    problems ``memory.distinctions.term_set`` finds."""
    normalized, problems = term_set(terms)
    if problems:
        raise RuleViolation([Violation("memory.distinction", problem, "terms") for problem in problems])
    created: list[TermDistinction] = []
    for pair in term_pairs(normalized):
        row, new = TermDistinction.objects.get_or_create(
            project=project,
            first=pair.first,
            second=pair.second,
            defaults={"reason": (reason or "declared as distinct")[:500], "created_by": actor_user(actor)},
        )
        if new:
            created.append(row)
    audit_record(
        project=project,
        actor=actor,
        action="declare",
        object_type="term_distinction",
        object_key=", ".join(normalized)[:200],
        after={"terms": normalized, "created": [str(row) for row in created]},
        reason=reason,
    )
    return created


@transaction.atomic
def term_distinction_delete(*, distinction: TermDistinction, actor: Actor, reason: str = "") -> None:
    """Forget a term distinction: later pairs are left to the comparator again (units already kept
    apart stay apart). ``NotFound`` when it is already gone (two reviewers forgetting it at once)."""
    locked = TermDistinction.objects.select_for_update().filter(pk=distinction.pk).first()
    if locked is None:
        raise NotFound(f"term distinction {distinction} is already forgotten")
    distinction = locked
    audit_record(
        project=distinction.project,
        actor=actor,
        action="delete",
        object_type="term_distinction",
        object_key=str(distinction),
        before={"first": distinction.first, "second": distinction.second},
        reason=reason,
    )
    distinction.delete()
