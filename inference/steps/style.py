"""The response style of an answer: the active context typology's ``response_style`` shapes the text the
caller gets, deterministically (no model).

The *active typology* is the request's (``context.typology``) or, without one, the role's default, else
the release's default (``inference.steps.envelope``). Its ``response_style`` is one of:

* ``concise`` — the short answer: the first ``CONCISE_SENTENCES`` sentences of the composed answer;
* ``detailed`` — the target node's whole chunk, followed by the answer's sentences the chunk does not
  hold (those taken from neighbouring nodes);
* ``step_by_step`` — the detailed text as numbered steps, one per list item when the text holds a list
  (lines starting with ``-``, ``*``, ``•`` or ``1.``/``1)``), else one per sentence;
* ``formal`` — the answer without casual openers ("Sure!", "No worries, …") and with contractions
  written out ("don't" → "do not", "you'll" → "you will").

An Info answer takes every style. An Action message and a Clarify question (a Clarify node's, an
action's request for parameters, the controlled fallback's "Do you mean X or Y?") take ``formal`` only:
cutting or numbering them would drop what the user must read or answer. Every other outcome (refusals,
refocus, out of scope, memory reads, policy messages) is left as it is. ``Outcome.response_style`` names the
style that shaped the answer, ``None`` when none did.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from inference.contracts import Outcome, OutcomeKind
from inference.steps.info.sentence_index import sentences

CONCISE = "concise"
DETAILED = "detailed"
STEP_BY_STEP = "step_by_step"
FORMAL = "formal"
STYLES = frozenset({CONCISE, DETAILED, STEP_BY_STEP, FORMAL})
CONCISE_SENTENCES = 2

_LIST_ITEM = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+(.*\S)\s*$")
_OPENER = re.compile(
    r"^\s*(?:sure(?: thing)?|ok(?:ay)?|no worries|no problem|great question|good question|hey(?: there)?"
    r"|hi(?: there)?|alright|cool|yep|yeah)\s*[!,.:;—–-]+\s*",  # an opener is set off by punctuation
    re.IGNORECASE,
)
# whole-word contractions first (irregular ones), then the regular suffixes
_CONTRACTIONS: tuple[tuple[str, str], ...] = (
    (r"\bwon't\b", "will not"),
    (r"\bcan't\b", "cannot"),
    (r"\bshan't\b", "shall not"),
    (r"\blet's\b(?!\s+(?-i:[A-Z]))", "let us"),  # not a name: "Let's Encrypt"
    (r"\bI'm\b", "I am"),
    (r"\b(it|that|there|here|what|who|where)'s\b", r"\1 is"),
    (r"\b(\w+)n't\b", r"\1 not"),
    (r"\b(\w+)'re\b", r"\1 are"),
    (r"\b(\w+)'ll\b", r"\1 will"),
    (r"\b(\w+)'ve\b", r"\1 have"),
    (r"\b(\w+)'d\b", r"\1 would"),
)


def _written_out(repl: str) -> Callable[[re.Match[str]], str]:
    """The replacement of a contraction by ``repl``, keeping the case of its first letter ("Won't" →
    "Will not")."""

    def write(match: re.Match[str]) -> str:
        written = match.expand(repl)
        return (written[:1].upper() if match.group(0)[:1].isupper() else written[:1]) + written[1:]

    return write


_COMPILED = tuple(
    (re.compile(pattern.replace("'", "['’]"), re.IGNORECASE), _written_out(repl))
    for pattern, repl in _CONTRACTIONS
)


def style_of(typology: Mapping[str, Any] | None) -> str | None:
    """The typology's response style, or None when it names none the platform knows."""
    style = (typology or {}).get("response_style")
    return style if style in STYLES else None


def concise(text: str) -> str:
    """The first ``CONCISE_SENTENCES`` sentences of ``text``."""
    return " ".join(sentences(text)[:CONCISE_SENTENCES]) or text


def detailed(text: str, chunk: str) -> str:
    """``chunk`` in full, then the sentences of ``text`` it does not hold."""
    if not chunk.strip():
        return text
    held = set(sentences(chunk))
    extra = [s for s in sentences(text) if s not in held]
    return " ".join([chunk.strip(), *extra])


def steps(text: str) -> str:
    """``text`` as numbered steps: its list items when it has at least two, else its sentences."""
    items = [m.group(1) for line in text.splitlines() if (m := _LIST_ITEM.match(line))]
    if len(items) < 2:
        items = list(sentences(text))
    if len(items) < 2:
        return text
    return "\n".join(f"{i}. {item}" for i, item in enumerate(items, start=1))


def formal(text: str) -> str:
    """``text`` without a casual opener and with its contractions written out (case kept on the first
    letter: "Don't" → "Do not")."""
    text = _OPENER.sub("", text, count=1) or text
    if "'" not in text and "’" not in text:  # no contraction to write out
        return text[:1].upper() + text[1:] if text else text
    for pattern, write in _COMPILED:
        text = pattern.sub(write, text)
    return text[:1].upper() + text[1:] if text else text


def styled_outcome(outcome: Outcome, typology: Mapping[str, Any] | None, *, chunk: str = "") -> Outcome:
    """``outcome`` with its answer shaped by the typology's response style (see the module doc);
    ``chunk`` is the target node's text (what ``detailed`` and ``step_by_step`` start from)."""
    style = style_of(typology)
    if style is None or not outcome.answer:
        return outcome
    if outcome.kind == OutcomeKind.INFO:
        llm = outcome.details.get("mode") == "llm"  # the model's own text: shaped, never replaced
        base = outcome.answer if llm else detailed(outcome.answer, chunk)
        if style == CONCISE:
            shaped = concise(outcome.answer)
        elif style == DETAILED:
            shaped = base
        elif style == STEP_BY_STEP:
            shaped = steps(base)
        else:
            shaped = formal(outcome.answer)
    elif outcome.kind in (OutcomeKind.ACTION, OutcomeKind.CLARIFY) and style == FORMAL:
        shaped = formal(outcome.answer)
    else:
        return outcome
    # also in the details: the log row keeps them, so the trace shows how the answer was shaped
    return replace(
        outcome, answer=shaped, response_style=style, details={**outcome.details, "response_style": style}
    )
