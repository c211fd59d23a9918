"""Action parameters taken from the prompt and the request context (ARG v1 §2.8 step 5, before asking).

A declared parameter the caller did not send is looked for, in this order of authority:

1. the caller's ``parameters`` — always win, never overwritten;
2. ``source: context`` parameters — the request context's field of the same name (``user_id``,
   ``session_id``, ``product``, ``channel``, ``language``); nothing else, never the user's words;
3. ``source: prompt`` parameters — the user's words, by declared type only, where a value is
   unambiguous: an ``email`` (each e-mail address in the prompt, in order, to the next e-mail
   parameter), an ``identifier`` (a word matching its ``pattern``), an ``enum`` (exactly one of its
   values or synonyms named as a whole word; of several, the one after "to"/"into"), a ``date``
   (``YYYY-MM-DD``) and a ``datetime`` (ISO 8601). Free text, numbers and lists are never guessed.

``Extraction.values`` merges the three; ``from_prompt`` / ``from_context`` name the parameters taken
there. The values are personal data as much as the prompt is: callers store them only through the
Memory Guard (``memory.pii.redact``), as they do the caller's parameters.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from arg_platform.patterns import cached_expert_pattern
from inference.actions.checks import EMAIL_RE, ParameterSpec, absent
from inference.contracts import RequestContext

# The request-context fields a ``source: context`` parameter of the same name is read from.
CONTEXT_FIELDS = frozenset({"user_id", "session_id", "product", "channel", "language"})

DATE_RE = re.compile(r"(?<![\d-])(\d{4}-\d{2}-\d{2})(?![\d-])")
DATETIME_RE = re.compile(
    r"(?<![\d-])(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)"
)
TARGET_WORDS = ("to", "into", "onto", "on")


@dataclass(frozen=True)
class Extraction:
    """The parameters to validate: the caller's, completed from the context and the prompt."""

    values: dict[str, Any]
    from_prompt: tuple[str, ...] = ()
    from_context: tuple[str, ...] = ()


def extract_parameters(
    specs: Sequence[ParameterSpec],
    given: Mapping[str, Any],
    *,
    prompt: str,
    context: RequestContext | None,
) -> Extraction:
    """``given`` completed with what the request context and the prompt say (see the module doc)."""
    values = dict(given)
    from_prompt: list[str] = []
    from_context: list[str] = []
    used: set[str] = {str(v).lower() for v in given.values() if isinstance(v, str)}
    for spec in specs:
        if not absent(values.get(spec.name)):
            continue
        if spec.from_context:
            found = getattr(context, spec.name, None) if spec.name in CONTEXT_FIELDS else None
            if not absent(found):
                values[spec.name] = found
                from_context.append(spec.name)
            continue
        taken = _from_prompt(spec, prompt, used)
        if taken is not None:
            values[spec.name] = taken
            used.add(taken.lower())
            from_prompt.append(spec.name)
    return Extraction(values, tuple(from_prompt), tuple(from_context))


def _from_prompt(spec: ParameterSpec, prompt: str, used: set[str]) -> str | None:
    if spec.type == "email":
        return _first_unused((m.group(0) for m in EMAIL_RE.finditer(prompt)), used)
    if spec.type == "identifier" and spec.pattern:
        pattern = cached_expert_pattern(spec.pattern)
        if pattern is None:  # the validator refuses such a pattern; a stale release is not guessed from
            return None
        return _first_unused(pattern.words(prompt), used)
    if spec.type == "enum":
        return _enum_value(spec, prompt)
    if spec.type == "date":
        return _first_unused((m.group(1) for m in DATE_RE.finditer(prompt)), used)
    if spec.type == "datetime":
        return _first_unused((m.group(1) for m in DATETIME_RE.finditer(prompt)), used)
    return None


def _first_unused(candidates: Any, used: set[str]) -> str | None:
    for candidate in candidates:
        if candidate.lower() not in used:
            return str(candidate)
    return None


def _enum_value(spec: ParameterSpec, prompt: str) -> str | None:
    """The one value the prompt names (a value or a synonym, as whole words); of several, the one
    named right after "to" / "into" / "onto" / "on" when exactly one is."""
    text = " ".join(prompt.lower().split())
    named: dict[str, list[int]] = {}
    for word, value in spec.words().items():
        for m in re.finditer(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text):
            named.setdefault(value, []).append(m.start())
    if len(named) == 1:
        return next(iter(named))
    targets = {
        value
        for value, starts in named.items()
        if any(
            (" " + text[:start]).rstrip().endswith(tuple(f" {w}" for w in TARGET_WORDS)) for start in starts
        )
    }
    return targets.pop() if len(targets) == 1 else None
