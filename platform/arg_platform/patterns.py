"""Expert-written regular expressions, compiled and matched on a linear-time engine with bounds.

Domain experts write patterns (a policy's ``blocked_patterns``, an Action parameter's ``pattern``) that
the online loop searches on every prompt and answer, or matches a parameter's value against. A
backtracking engine such as Python's ``re`` can take exponential time on some of them — ``(a+)+$``
against thirty ``a`` and a ``!`` holds a worker for minutes — so expert patterns
run on RE2 (the ``google-re2`` bindings), which never backtracks: a search takes time linear in the
text. RE2 refuses what needs backtracking, and this module adds bounds:

* **syntax** is RE2's: no backreferences (``\\1``), no lookahead or lookbehind (``(?=``, ``(?!``,
  ``(?<=``, ``(?<!``), no ``\\Z`` (RE2 writes ``\\z``), no ``\\uXXXX`` (RE2 writes ``\\x{XXXX}``),
  counted repetition at most ``{1000}``; ``{,n}`` (Python's ``{0,n}``, literal text for RE2) is
  refused too. ``\\d``, ``\\w``, ``\\s`` and ``\\b`` are ASCII-only (``\\p{Nd}``, ``\\p{L}``
  reach other scripts);
* **a pattern** is at most ``MAX_PATTERN_CHARS`` characters and compiles within ``MAX_MEM`` bytes
  (RE2's ``max_mem``: the compiled program and the cache of its DFA; a search whose DFA cache fills up
  goes on with RE2's NFA, still linear in the text);
* **a text** longer than ``MAX_TEXT_CHARS`` is not searched. An expert pattern is a deny rule, so the
  matcher fails closed: such a text counts as matched, never as clean.

``pattern_problem`` is what validators call (``""`` when the pattern can run, else a message naming
it); ``expert_pattern`` compiles one for the runtime and raises ``PatternError`` with the same message.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

import re2

MAX_PATTERN_CHARS = 200
MAX_TEXT_CHARS = 50_000
MAX_MEM = 4 << 20

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# Python reads "{,n}" as "{0,n}"; RE2 reads it as the literal text, so a pattern would quietly change meaning
_OPEN_LOWER_BOUND = re.compile(r"(?<!\\)(?:\\\\)*(\{,(\d+)\})")
_HINTS = (
    (re.compile(r"invalid escape sequence: \\[1-9]"), "backreferences are not supported"),
    (re.compile(r"invalid perl operator: \(\?[=!]"), "lookahead is not supported"),
    (re.compile(r"invalid perl operator: \(\?<[=!]"), "lookbehind is not supported"),
    (re.compile(r"invalid escape sequence: \\Z"), "RE2 writes the end of the text \\z"),
    (re.compile(r"invalid escape sequence: \\u"), "RE2 writes a code point \\x{hhhh}"),
    (re.compile(r"pattern too large"), f"it needs more than {MAX_MEM >> 20} MiB compiled"),
)


class PatternError(ValueError):
    """An expert pattern that cannot run on RE2 within the bounds; the message names the pattern."""


def _options() -> Any:
    options = re2.Options()
    options.max_mem = MAX_MEM
    options.log_errors = False  # a refusal is reported to the expert, not printed on stderr
    options.never_capture = True  # only whole matches are used
    return options


def _shown(source: str) -> str:
    return f"'{source}'" if len(source) <= 60 else f"'{source[:60]}…'"


def _searchable(text: str) -> str:
    """``text`` as RE2 can take it (UTF-8): a lone surrogate becomes U+FFFD."""
    return text if text.isascii() else _LONE_SURROGATE.sub("\ufffd", text)


def _word_char(char: str) -> bool:
    return char.isalnum() or char in "_-"


@dataclass(frozen=True, eq=False)
class ExpertPattern:
    """One expert pattern compiled on RE2 (``regexp``), searched within the text bound."""

    source: str
    regexp: Any  # a compiled re2 regular expression

    def search(self, text: str) -> bool:
        """Does the pattern match somewhere in ``text``? A text over ``MAX_TEXT_CHARS`` counts as matched."""
        if len(text) > MAX_TEXT_CHARS:
            return True
        return self.regexp.search(_searchable(text)) is not None

    def fullmatch(self, text: str) -> bool:
        """Does the pattern match the whole of ``text``? A text over ``MAX_TEXT_CHARS`` does not."""
        if len(text) > MAX_TEXT_CHARS:
            return False
        return self.regexp.fullmatch(_searchable(text)) is not None

    def words(self, text: str) -> list[str]:
        """The matches in ``text`` that stand as words of their own: neither the character before nor
        the one after is a letter, digit, ``_`` or ``-`` (an order number inside a longer code is not
        one). None in a text over ``MAX_TEXT_CHARS``."""
        if len(text) > MAX_TEXT_CHARS:
            return []
        text = _searchable(text)
        out = []
        for match in self.regexp.finditer(text):
            start, end = match.start(), match.end()
            if start == end:
                continue
            if (start and _word_char(text[start - 1])) or (end < len(text) and _word_char(text[end])):
                continue
            out.append(match.group(0))
        return out

    def subn(self, replacement: str, text: str) -> tuple[str, int]:
        """``text`` with every match replaced by ``replacement`` (taken literally), and how many there were.

        A text over ``MAX_TEXT_CHARS`` comes back unchanged with no replacement (``search`` then says it
        matches)."""
        if len(text) > MAX_TEXT_CHARS:
            return text, 0
        return self.regexp.subn(lambda _match: replacement, _searchable(text))


def _compiled(source: str) -> tuple[Any, str]:
    """``(regexp, "")`` for a pattern that can run, ``(None, message naming it)`` otherwise."""
    if not isinstance(source, str):
        return None, "a pattern must be text"
    if len(source) > MAX_PATTERN_CHARS:
        shown = _shown(source)
        return None, f"{shown} is {len(source)} characters long; a pattern has at most {MAX_PATTERN_CHARS}"
    if _LONE_SURROGATE.search(source):
        return None, f"{_shown(_searchable(source))} holds a lone surrogate character"
    if found := _OPEN_LOWER_BOUND.search(source):
        literal, upper = found.groups()
        return (
            None,
            f"{_shown(source)} cannot run on RE2: {literal} would match itself literally (write {{0,{upper}}})",
        )
    try:
        return re2.compile(source, _options()), ""
    except re2.error as exc:
        reason = exc.args[0].decode("utf-8", "replace") if isinstance(exc.args[0], bytes) else str(exc)
        hint = next((text for error_re, text in _HINTS if error_re.search(reason)), "")
        return None, f"{_shown(source)} cannot run on RE2: {reason}" + (f" ({hint})" if hint else "")


def pattern_problem(source: str) -> str:
    """Why ``source`` cannot run as an expert pattern, naming it; ``""`` when it can."""
    return _compiled(source)[1]


def expert_pattern(source: str) -> ExpertPattern:
    """``source`` compiled on RE2 within the bounds; ``PatternError`` (naming it) when it cannot run."""
    regexp, problem = _compiled(source)
    if regexp is None:
        raise PatternError(problem)
    return ExpertPattern(source, regexp)


@functools.lru_cache(maxsize=512)
def cached_expert_pattern(source: str) -> ExpertPattern | None:
    """``expert_pattern(source)``, compiled once per process; ``None`` for a pattern that cannot run
    (validators refuse such a pattern, so only a stale stored one gets here)."""
    try:
        return expert_pattern(source)
    except PatternError:
        return None
