"""What is verified before an action runs (ARG v1 §2.8 steps 1–2): its parameters and preconditions.

*Parameters* are declared on the Action node (``extras["parameters"]``: name, type, required,
description, and for typed ones ``pattern``, ``values``, ``synonyms``, ``source`` — see
``ontology.store.port.ParameterSpec``). ``parameters_validate`` keeps the declared ones, coerces them
to their type (string, integer, number, boolean, list, map, datetime, date, email, identifier — a
value matching its ``pattern`` —, enum — one of its ``values`` or a synonym of one) and reports the
required ones that are missing and the ones whose value does not fit — both become a clarification
question.

*Preconditions* are human-readable sentences on the node (``extras["preconditions"]``). Each gets one
of three statuses: ``met`` / ``unmet`` when the handler's registration checks it (see
``inference.actions.registry``), ``to_confirm`` otherwise — listed in the explanation, never silently
assumed.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from arg_platform.patterns import cached_expert_pattern
from inference.actions.registry import ActionContext, RegisteredHandler, Verdict

logger = logging.getLogger(__name__)

# Parameters the pipeline reads itself; they are never forwarded to a handler.
CONTROL_PARAMETERS = frozenset({"confirm"})

TRUE_WORDS = frozenset({"true", "yes", "y", "1", "on"})
FALSE_WORDS = frozenset({"false", "no", "n", "0", "off"})


class PreconditionStatus:
    MET = "met"
    UNMET = "unmet"
    TO_CONFIRM = "to_confirm"


EMAIL_RE = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")


@dataclass(frozen=True)
class ParameterSpec:
    """A declared parameter as the pipeline reads it from the node's extras. ``source`` is ``prompt``
    (the caller or the user's words may give it) or ``context`` (only the calling application)."""

    name: str
    type: str = "string"
    required: bool = False
    description: str = ""
    pattern: str = ""
    values: tuple[str, ...] = ()
    synonyms: tuple[tuple[str, tuple[str, ...]], ...] = ()
    source: str = "prompt"

    @property
    def from_context(self) -> bool:
        return self.source == "context"

    def words(self) -> dict[str, str]:
        """An enum's accepted words (lower case) → the value each stands for."""
        out = {v.lower(): v for v in self.values}
        for value, synonyms in self.synonyms:
            for word in synonyms:
                out.setdefault(word.lower(), value)
        return out


@dataclass(frozen=True)
class ParameterCheck:
    """The outcome of validating the caller's parameters against the node's declaration."""

    values: dict[str, Any]  # declared, present and valid parameters, JSON-safe
    missing: tuple[str, ...] = ()  # required parameters that were not given
    invalid: tuple[tuple[str, str], ...] = ()  # (name, what is expected)
    ignored: tuple[str, ...] = ()  # given but not declared by the node

    @property
    def complete(self) -> bool:
        return not self.missing and not self.invalid


@dataclass(frozen=True)
class PreconditionResult:
    text: str
    status: str  # PreconditionStatus
    reason: str = ""

    def as_json(self) -> dict[str, str]:
        return {"precondition": self.text, "status": self.status, "reason": self.reason}


def parameter_specs(extras: Mapping[str, Any]) -> tuple[ParameterSpec, ...]:
    return tuple(
        ParameterSpec(
            name=str(p["name"]),
            type=str(p.get("type") or "string"),
            required=bool(p.get("required")),
            description=str(p.get("description") or ""),
            pattern=str(p.get("pattern") or ""),
            values=tuple(str(v) for v in p.get("values") or ()),
            synonyms=tuple(
                (str(k), tuple(str(w) for w in ws)) for k, ws in (p.get("synonyms") or {}).items()
            ),
            source=str(p.get("source") or "prompt"),
        )
        for p in extras.get("parameters") or ()
        if p.get("name")
    )


def absent(value: Any) -> bool:
    """True for a value that counts as not given: None, blank text, an empty list or map."""
    return value is None or (isinstance(value, str) and not value.strip()) or value in ([], {})


def typed_coerce(value: Any, spec: ParameterSpec) -> Any:
    """``value`` converted to ``spec``'s type, checked against its pattern or values; ``ValueError``
    says what was expected."""
    if spec.type == "email":
        text = coerce(value, "string")
        if not EMAIL_RE.fullmatch(text):
            raise ValueError("an email address, e.g. ana@example.com")
        return text
    if spec.type in ("identifier", "string") and spec.pattern:
        text = coerce(value, "string")
        pattern = cached_expert_pattern(spec.pattern)
        if pattern is None or not pattern.fullmatch(text):
            shown = spec.description or f"a value matching {spec.pattern}"
            raise ValueError(shown if spec.type == "identifier" else f"a value matching {spec.pattern}")
        return text
    if spec.type == "enum":
        text = coerce(value, "string")
        found = spec.words().get(" ".join(text.lower().split()))
        if found is None:
            raise ValueError("one of " + ", ".join(spec.values))
        return found
    return coerce(value, spec.type)


def coerce(value: Any, kind: str) -> Any:
    """``value`` converted to the declared parameter type; ``ValueError`` says what was expected."""
    if kind in ("string", "identifier", "email", "enum"):
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise ValueError("a text value")
        return str(value).strip()
    if kind == "integer":
        if isinstance(value, bool):
            raise ValueError("a whole number")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
            return int(value)
        raise ValueError("a whole number")
    if kind == "number":
        if isinstance(value, bool):
            raise ValueError("a number")
        if isinstance(value, int | float):
            return value
        if isinstance(value, str):
            try:
                number = float(value)
            except ValueError:
                raise ValueError("a number") from None
            if number != number or number in (float("inf"), float("-inf")):
                raise ValueError("a number")
            return int(number) if number.is_integer() and "." not in value else number
        raise ValueError("a number")
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, str | int) and str(value).strip().lower() in TRUE_WORDS | FALSE_WORDS:
            return str(value).strip().lower() in TRUE_WORDS
        raise ValueError("yes or no")
    if kind == "list":
        if isinstance(value, str):
            return [item.strip() for item in value.split(",") if item.strip()]
        if isinstance(value, list | tuple):
            return [json.loads(json.dumps(item, default=str)) for item in value]
        raise ValueError("a list of values")
    if kind == "map":
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                raise ValueError("a set of name/value pairs") from None
        if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
            return json.loads(json.dumps(dict(value), default=str))
        raise ValueError("a set of name/value pairs")
    if kind == "date":
        if isinstance(value, datetime):
            return value.date().isoformat()
        if isinstance(value, date):
            return value.isoformat()
        if isinstance(value, str):
            try:
                return date.fromisoformat(value.strip()[:10]).isoformat()
            except ValueError:
                raise ValueError("a date (YYYY-MM-DD, e.g. 2025-03-01)") from None
        raise ValueError("a date (YYYY-MM-DD, e.g. 2025-03-01)")
    if kind == "datetime":
        if isinstance(value, datetime):
            return value.isoformat()
        if isinstance(value, str):
            try:
                return datetime.fromisoformat(value.strip()).isoformat()
            except ValueError:
                raise ValueError("a date and time (ISO 8601, e.g. 2025-03-01T09:00:00Z)") from None
        raise ValueError("a date and time (ISO 8601, e.g. 2025-03-01T09:00:00Z)")
    return json.loads(json.dumps(value, default=str))  # an unknown declared type: passed through


def parameters_validate(specs: Sequence[ParameterSpec], given: Mapping[str, Any]) -> ParameterCheck:
    """Keep the declared parameters, coerce them, and report what is missing or invalid."""
    values: dict[str, Any] = {}
    missing: list[str] = []
    invalid: list[tuple[str, str]] = []
    for spec in specs:
        raw = given.get(spec.name)
        if absent(raw):
            if spec.required:
                missing.append(spec.name)
            continue
        try:
            values[spec.name] = typed_coerce(raw, spec)
        except ValueError as exc:
            invalid.append((spec.name, str(exc)))
    declared = {spec.name for spec in specs}
    ignored = tuple(sorted(str(k) for k in given if k not in declared and k not in CONTROL_PARAMETERS))
    return ParameterCheck(values, tuple(missing), tuple(invalid), ignored)


def confirmed(given: Mapping[str, Any]) -> bool:
    """True when the caller explicitly confirmed (``confirm=true``)."""
    value = given.get("confirm")
    if isinstance(value, bool):
        return value
    return isinstance(value, str | int) and str(value).strip().lower() in TRUE_WORDS


def _normal(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(".")


def context_checks(registered: RegisteredHandler | None, context: ActionContext) -> list[PreconditionResult]:
    """The handler's ``required_context``: each key must be present in the request's context."""
    if registered is None:
        return []
    results = []
    for key in registered.required_context:
        present = not absent(getattr(context, key))
        results.append(
            PreconditionResult(
                text=f"The request context provides {key}",
                status=PreconditionStatus.MET if present else PreconditionStatus.UNMET,
                reason="" if present else f"the calling application did not send {key}",
            )
        )
    return results


def precondition_checks(
    preconditions: Iterable[str],
    registered: RegisteredHandler | None,
    context: ActionContext,
    parameters: Mapping[str, Any],
) -> list[PreconditionResult]:
    """Every node precondition with its status, then the handler's own invariants (unlisted texts)."""
    verdicts: dict[str, tuple[bool | None, str]] = {}
    extra_texts: dict[str, str] = {}
    if registered is not None and registered.check_preconditions is not None:
        try:
            raw = registered.check_preconditions(context, parameters)
        except Exception as exc:  # a broken check blocks the action rather than skipping the check
            logger.exception("precondition check of %s raised", registered.name)
            raw = {"The handler's precondition check completes": (False, f"the check raised {exc!r}")}
        for text, verdict in raw.items():
            verdicts[_normal(text)] = _verdict(verdict)
            extra_texts[_normal(text)] = text
    results: list[PreconditionResult] = []
    for text in preconditions:
        key = _normal(text)
        extra_texts.pop(key, None)
        if key not in verdicts or verdicts[key][0] is None:
            reason = verdicts[key][1] if key in verdicts else "not checked automatically"
            results.append(PreconditionResult(text, PreconditionStatus.TO_CONFIRM, reason))
        else:
            met, reason = verdicts[key]
            results.append(
                PreconditionResult(text, PreconditionStatus.MET if met else PreconditionStatus.UNMET, reason)
            )
    for key, text in extra_texts.items():
        met, reason = verdicts[key]
        if met is not None:
            status = PreconditionStatus.MET if met else PreconditionStatus.UNMET
            results.append(PreconditionResult(text, status, reason))
    return results


def _verdict(value: Verdict) -> tuple[bool | None, str]:
    if isinstance(value, tuple):
        met, reason = value
        return (None if met is None else bool(met)), str(reason)
    return (None if value is None else bool(value)), ""
