"""An Action parameter's ``pattern`` is an expert pattern: it runs on RE2 (``arg_platform.patterns``) both
where the prompt is searched for a value and where a given value is checked, so a pattern that makes a
backtracking engine run for minutes is answered at once, and a match counts only as a word of its own."""

from __future__ import annotations

import pytest

from inference.actions.checks import ParameterSpec, typed_coerce
from inference.actions.extraction import extract_parameters

CATASTROPHIC = "(a+)+$"  # Python's re takes 2^n steps on n "a" and a "!"


def _from_prompt(pattern: str, prompt: str) -> dict[str, object]:
    spec = ParameterSpec("ref", type="identifier", pattern=pattern)
    return extract_parameters([spec], {}, prompt=prompt, context=None).values


def test_a_catastrophic_identifier_pattern_is_searched_in_linear_time():
    assert _from_prompt(CATASTROPHIC, "a" * 5000 + "!") == {}
    assert _from_prompt(CATASTROPHIC, "see aaaa") == {"ref": "aaaa"}


def test_a_catastrophic_pattern_checks_a_given_value_in_linear_time():
    spec = ParameterSpec("ref", type="identifier", pattern=CATASTROPHIC, description="a run of a")
    with pytest.raises(ValueError, match="a run of a"):
        typed_coerce("a" * 5000 + "!", spec)
    assert typed_coerce("aaa", spec) == "aaa"


@pytest.mark.parametrize(
    ("prompt", "taken"),
    [
        ("refund INV-1234 please", "INV-1234"),
        ("refund xINV-1234 and INV-5678", "INV-5678"),  # inside a longer code: not that one
        ("refund INV-1234-5", None),
        ("INV-1234", "INV-1234"),
        ("(INV-1234).", "INV-1234"),
    ],
)
def test_an_identifier_is_taken_only_as_a_word_of_its_own(prompt, taken):
    assert _from_prompt(r"INV-\d{4}", prompt).get("ref") == taken


def test_a_stored_pattern_re2_refuses_extracts_nothing_and_accepts_no_value():
    """Validators refuse such a pattern; a stale release that still has one is not guessed from."""
    spec = ParameterSpec("ref", type="identifier", pattern=r"(?<!x)INV-\d+")
    assert _from_prompt(spec.pattern, "refund INV-12") == {}
    with pytest.raises(ValueError):
        typed_coerce("INV-12", spec)
