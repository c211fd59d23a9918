"""Expert-written patterns (``arg_platform.patterns``): RE2, linear time, bounded; what cannot run is
refused with a message naming the pattern."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import re2

from arg_platform.patterns import (
    MAX_PATTERN_CHARS,
    MAX_TEXT_CHARS,
    ExpertPattern,
    PatternError,
    expert_pattern,
    pattern_problem,
)

ROOT = Path(__file__).resolve().parents[2]
CATASTROPHIC = "(a+)+$"


def test_a_catastrophic_pattern_is_searched_in_linear_time():
    """``(a+)+$`` on 5,000 ``a`` and a ``!``: Python's ``re`` would not finish (2^5000 paths); RE2 answers
    at once. In a subprocess with a timeout, so a backtracking engine fails the test, not the suite."""
    script = (
        "from arg_platform.patterns import expert_pattern\n"
        f"p = expert_pattern({CATASTROPHIC!r})\n"
        "print(p.search('a' * 5000 + '!'), p.search('a' * 5000))\n"
    )
    try:
        proc = subprocess.run(
            [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=10
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{CATASTROPHIC} on 'a' * 5000 + '!' did not finish in 10 s: the engine backtracks")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "True"]


def test_the_compiled_pattern_is_an_re2_object():
    pattern = expert_pattern(CATASTROPHIC)
    assert isinstance(pattern, ExpertPattern)
    assert isinstance(pattern.regexp, type(re2.compile("x")))
    assert pattern.source == CATASTROPHIC


@pytest.mark.parametrize(
    ("source", "hint"),
    [
        (r"(a)\1", "backreferences are not supported"),
        (r"(?=card)\d+", "lookahead is not supported"),
        (r"(?!ok)\w+", "lookahead is not supported"),
        (r"(?<!not )hack", "lookbehind is not supported"),
        (r"(?<=my )password", "lookbehind is not supported"),
        (r"secret\Z", r"RE2 writes the end of the text \z"),
        (r"caf\u00e9", r"RE2 writes a code point \x{hhhh}"),
        (r"\pL{1000}", "more than 4 MiB compiled"),
        ("(unclosed", "missing )"),
        ("a{1001}", "invalid repetition size"),
        (r"\d{,4}", "{,4} would match itself literally (write {0,4})"),
    ],
)
def test_a_pattern_re2_cannot_run_is_refused_naming_it(source, hint):
    problem = pattern_problem(source)
    assert problem.startswith(f"'{source}' cannot run on RE2: "), problem
    assert hint in problem
    with pytest.raises(PatternError) as info:
        expert_pattern(source)
    assert str(info.value) == problem


def test_a_pattern_over_the_length_bound_is_refused_naming_it():
    source = "x" * (MAX_PATTERN_CHARS + 1)
    problem = pattern_problem(source)
    assert problem == (
        f"'{'x' * 60}…' is {MAX_PATTERN_CHARS + 1} characters long; a pattern has at most {MAX_PATTERN_CHARS}"
    )
    assert pattern_problem("x" * MAX_PATTERN_CHARS) == ""


def test_a_pattern_with_a_lone_surrogate_is_refused():
    assert pattern_problem("hack\ud800") == "'hack\ufffd' holds a lone surrogate character"


@pytest.mark.parametrize(
    "source",
    [
        r"(?i)\bhack(?:ing)?\s+(?:into|someone(?:'s)?)\b",
        r"\b\d{4}[ -]?\d{4}[ -]?\d{4}[ -]?\d{1,7}\b",
        r"(?P<card>\d{16})",
        r"\p{Nd}{4}",
        r"\{,4}",
        "",
    ],
)
def test_usual_patterns_run(source):
    assert pattern_problem(source) == ""


def test_search_and_redaction():
    card = expert_pattern(r"\b\d{4}[ -]?\d{4}[ -]?\d{4}[ -]?\d{1,7}\b")
    assert card.search("my card is 4242 4242 4242 4242.")
    assert not card.search("order 4242")
    assert card.subn("[redacted]", "cards 4242424242424242 and 4000-0000-0000-0002") == (
        "cards [redacted] and [redacted]",
        2,
    )
    groups = expert_pattern(r"(h)ack")
    assert groups.subn(r"\1 [x]", "hack") == (r"\1 [x]", 1)  # the replacement is literal


def test_a_text_over_the_bound_counts_as_matched_and_is_left_alone():
    pattern = expert_pattern("never-there")
    text = "a" * (MAX_TEXT_CHARS + 1)
    assert pattern.search(text) is True
    assert pattern.subn("[redacted]", text) == (text, 0)
    assert pattern.search("a" * MAX_TEXT_CHARS) is False


def test_a_text_with_a_lone_surrogate_is_searched():
    pattern = expert_pattern("hack")
    assert pattern.search("h\ud800 hack")
    assert pattern.subn("[x]", "\ud800hack") == ("\ufffd[x]", 1)
