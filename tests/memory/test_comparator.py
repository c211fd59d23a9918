"""The grey-zone comparator (ARG §2.10.5.7): deterministic discriminators catch "same wording, other
fact"; paraphrases match; the grey zone is UNSURE, or the bounded LLM compare when one is configured."""

from __future__ import annotations

import pytest

from memory.canonical import InfoType, canonicalize
from memory.comparator import (
    DEFAULT_PARAMS,
    LEARNED,
    RULES_ONLY,
    Method,
    Verdict,
    compare,
    discriminators,
    llm_compare,
)
from tests.inference.loopback import Reply, loopback_server


def pair(a: str, b: str, info_type: str = InfoType.PRODUCT_CONFIG):
    return canonicalize(a, info_type=info_type), canonicalize(b, info_type=info_type)


@pytest.mark.parametrize(
    ("a", "b", "rule"),
    [
        ("Max connections is set to 200.", "Max connections is set to 500.", "numbers"),
        ("Backups are kept for 14 days.", "Backups are kept for 30 days.", "numbers"),
        ("The runtime is Python 3.11.", "The runtime is Python 3.12.", "versions"),
        ("Invoices are sent to the owner.", "Invoices are never sent to the owner.", "negation"),
        ("Partial refunds are allowed.", "Partial refunds are not allowed.", "antonyms"),
        ("Automatic deploys are enabled.", "Automatic deploys are disabled.", "antonyms"),
        (
            "The deploy goes to staging before production.",
            "The deploy goes to production before staging.",
            "swap",
        ),
        ("The user wants answers in French.", "The user wants answers in German.", "values"),
        ("Deploys in eu-west-1 are queued.", "Deploys in us-east-1 are queued.", "identifiers"),
        (
            "The payment service was down while login stayed up.",
            "Login was down while the payment service stayed up.",
            "swap",
        ),
    ],
)
def test_hard_negatives_are_different(a, b, rule):
    first, second = pair(a, b)

    hard, _, _ = discriminators(second, first)
    comparison = compare(second, first, cosine=0.95)

    assert any(reason.startswith(rule) for reason in hard), hard
    assert comparison.verdict == Verdict.DIFFERENT
    assert comparison.method == Method.VECTOR_RULES


def test_a_one_word_edit_is_never_a_strong_match():
    first, second = pair(
        "The team blocked writes to the users table.", "The team blocked reads from the users table."
    )

    rules = compare(second, first, cosine=0.97, params=RULES_ONLY)
    learned = compare(second, first, cosine=0.97, params=LEARNED)

    assert rules.verdict == Verdict.UNSURE
    assert rules.reasons[0].startswith("edited:")
    assert (learned.verdict, learned.method) == (Verdict.DIFFERENT, Method.VECTOR_LEARNED)


def test_equivalent_wordings_do_not_fire():
    first, second = pair(
        "Backups are kept for two weeks, not 30 days.", "Backups are retained 14 days instead of 30 days."
    )
    disabled, not_enabled = pair("Password login is disabled.", "Password login is not enabled.")

    assert discriminators(second, first)[0] == []
    assert discriminators(not_enabled, disabled)[0] == []


def test_decision_thresholds_of_the_rules_alone():
    first, second = pair(
        "The finance team downloads all invoices at the end of the quarter.",
        "At quarter end, finance pulls down the full set of invoices.",
    )
    anchored_a, anchored_b = pair("Refunds take 5 business days.", "A refund needs five working days.")

    assert compare(second, first, cosine=DEFAULT_PARAMS.strong, params=RULES_ONLY).verdict == Verdict.SAME
    assert (
        compare(second, first, cosine=DEFAULT_PARAMS.strong, params=RULES_ONLY).method == Method.VECTOR_ONLY
    )
    assert (
        compare(second, first, cosine=DEFAULT_PARAMS.strong - 0.01, params=RULES_ONLY).verdict
        == Verdict.UNSURE
    )
    assert (
        compare(second, first, cosine=DEFAULT_PARAMS.grey - 0.01, params=RULES_ONLY).verdict
        == Verdict.DIFFERENT
    )
    anchored = compare(anchored_b, anchored_a, cosine=DEFAULT_PARAMS.anchored, params=RULES_ONLY)
    assert (anchored.verdict, anchored.method, anchored.anchored) == (Verdict.SAME, Method.VECTOR_RULES, True)


def completion(content: str) -> Reply:
    return Reply(200, {"choices": [{"message": {"role": "assistant", "content": content}}]})


def test_grey_zone_asks_the_llm_only_when_configured(settings):
    first, second = pair(
        "The finance team downloads all invoices at the end of the quarter.",
        "At quarter end, finance pulls down the full set of invoices.",
    )
    grey = DEFAULT_PARAMS.strong - 0.05
    with loopback_server(lambda request: completion("SAME")) as llm:
        settings.LLM_URL, settings.MEMORY_LLM_COMPARE = llm.url, False
        without = compare(second, first, cosine=grey, params=RULES_ONLY)
        settings.MEMORY_LLM_COMPARE = True
        with_llm = compare(second, first, cosine=grey, params=RULES_ONLY)

    assert without.verdict == Verdict.UNSURE
    assert (with_llm.verdict, with_llm.method) == (Verdict.SAME, Method.VECTOR_LLM)
    (request,) = llm.requests
    body = request["json"]
    assert "Respond only with: SAME / DIFFERENT / UNSURE." in body["messages"][0]["content"]
    assert body["messages"][1]["content"].startswith("Chunk: at quarter end finance pulls down")


@pytest.mark.parametrize(
    "reply", [completion("Probably the same thing."), Reply(500, {"error": "down"}), completion("")]
)
def test_any_other_llm_answer_is_unsure(settings, reply):
    with loopback_server(lambda request: reply) as llm:
        settings.LLM_URL = llm.url
        assert llm_compare("a fact", "a unit") == Verdict.UNSURE
