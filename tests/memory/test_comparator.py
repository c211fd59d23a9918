"""The grey-zone comparator (ARG §2.10.5.7): deterministic discriminators catch "same wording, other
fact"; paraphrases match; the grey zone is UNSURE, or the bounded LLM compare when one is configured."""

from __future__ import annotations

from dataclasses import replace

import pytest

from memory.canonical import InfoType, canonicalize
from memory.comparator import (
    DEFAULT_PARAMS,
    LEARNED,
    Comparison,
    Method,
    RegistryParams,
    Verdict,
    compare,
    discriminators,
    identity_gate,
    llm_compare,
)
from memory.comparator import RULES_ONLY as RULES_GATED
from memory.comparator.identity import identity_gap
from tests.inference.loopback import Reply, loopback_server

# The rules as they decide before the identity gate (tested on its own at the end of this file): with
# their promotions, and without (the rules of step 3, docs/benchmarks.md).
RULES_ONLY = replace(RULES_GATED, identity=False)
NO_PROMOTION = RegistryParams(learned=False, promote=False, identity=False)


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
        compare(second, first, cosine=DEFAULT_PARAMS.strong - 0.01, params=NO_PROMOTION).verdict
        == Verdict.UNSURE
    )
    promoted = compare(second, first, cosine=DEFAULT_PARAMS.strong - 0.01, params=RULES_ONLY)
    assert (promoted.verdict, promoted.method) == (Verdict.SAME, Method.VECTOR_RULES)
    assert promoted.reasons == ("promoted: clean grey zone",)
    assert (
        compare(second, first, cosine=DEFAULT_PARAMS.promote_grey - 0.01, params=RULES_ONLY).verdict
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
        without = compare(second, first, cosine=grey, params=NO_PROMOTION)
        settings.MEMORY_LLM_COMPARE = True
        with_llm = compare(second, first, cosine=grey, params=NO_PROMOTION)

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


# --- session 3: promotions of staged pairs, and the rules that keep them safe ------------------------


@pytest.mark.parametrize(
    ("a", "b", "reason"),
    [
        # generic verbs / a moved or re-inflected word: the edit carries no meaning of its own
        (
            "The developer wants API changelog emails, not release notes.",
            "Send this developer the API changelog emails instead of the release notes.",
            "promoted: trivial edit",
        ),
        (
            "Cold starts happen mostly on the first request after midnight.",
            "Most cold starts hit the first request after midnight.",
            "promoted: trivial edit",
        ),
        # a number written in words on one side, with a quantity word there
        (
            "Storage grows by roughly 50 GB per month.",
            "Each month storage grows by about fifty gigabytes.",
            "promoted: number in words",
        ),
        (
            "Nonprofit customers get a 50 percent discount.",
            "Nonprofit customers get half off.",
            "promoted: number in words",
        ),
    ],
)
def test_a_staged_pair_whose_difference_carries_no_meaning_is_promoted(a, b, reason):
    first, second = pair(a, b)

    strict = compare(second, first, cosine=0.80, params=NO_PROMOTION)
    promoted = compare(second, first, cosine=0.80, params=RULES_ONLY)

    assert strict.verdict == Verdict.UNSURE
    assert (promoted.verdict, promoted.method, promoted.reasons[-1]) == (
        Verdict.SAME,
        Method.VECTOR_RULES,
        reason,
    )
    below = RegistryParams(learned=False, promote_edit=0.81, promote_number=0.81, promote_grey=0.81)
    assert compare(second, first, cosine=0.80, params=below).verdict == Verdict.UNSURE


@pytest.mark.parametrize(
    ("a", "b", "reason"),
    [
        # one meaningful word for another: never promoted
        ("The mobile app accounts for 70 percent of sessions.", "The web app accounts for 70 percent of sessions.",
         "edited: web → mobil"),
        # "use" is not a generic verb here
        ("The CDN is bypassed for the /api path.", "The CDN is used for the /api path.", "edited: used → bypass"),
        # a critical short word added
        ("New strings are sent to translators every Thursday.",
         "New strings are sent to translators every other Thursday.", "edited: other → ∅"),
        # a number only one side states, and no quantity word on the other
        ("Deleted records are kept for 30 days before being purged.", "Deleted records are purged immediately.",
         "missing_number"),
        # one entity for another in a short statement (no minimal pair by share)
        ("Webhook signatures are checked with a shared secret.", "Webhook signatures are checked with a public key.",
         "replaced: public key → shar secret"),
        ("Spot instances are used for batch jobs only.", "Spot instances are used for web servers only.",
         "replaced: web server → batch job"),
    ],
)  # fmt: skip
def test_a_staged_pair_with_a_meaningful_difference_stays_unsure(a, b, reason):
    first, second = pair(a, b)

    comparison = compare(second, first, cosine=0.95, params=RULES_ONLY)

    assert (comparison.verdict, comparison.reasons) == (Verdict.UNSURE, (reason,))


@pytest.mark.parametrize(
    ("a", "b", "flip"),
    [
        ("Uploads over 5 GB failed.", "Uploads under 5 GB failed.", "over ↔ under"),
        ("Tokens are rotated automatically.", "Tokens are rotated manually.", "automatically ↔ manually"),
        (
            "The user contacts support on weekends.",
            "The user contacts support on weekdays.",
            "weekday ↔ weekend",
        ),
        (
            "The migration locked the orders table.",
            "The migration did not lock the orders table.",
            "lock ↔ unlock",
        ),
    ],
)
def test_antonyms_compare_on_stems_and_cover_stopwords(a, b, flip):
    first, second = pair(a, b)

    hard, _, _ = discriminators(second, first)

    assert any(flip in reason or " ↔ ".join(reversed(flip.split(" ↔ "))) in reason for reason in hard), hard
    assert compare(second, first, cosine=0.99, params=RULES_ONLY).verdict == Verdict.DIFFERENT


def test_a_phrase_moved_to_the_front_is_not_a_swap_but_two_exchanged_roles_are():
    moved_a, moved_b = pair(
        "The ETL job loads orders into Snowflake every 15 minutes.",
        "Every fifteen minutes the ETL job loads the orders into Snowflake.",
    )
    swapped_a, swapped_b = pair(
        "The payment service was down while login stayed up.",
        "Login was down while the payment service stayed up.",
    )

    assert discriminators(moved_b, moved_a)[0] == []
    assert compare(moved_b, moved_a, cosine=0.98, params=RULES_ONLY).verdict == Verdict.SAME
    assert any(r.startswith("swap") for r in discriminators(swapped_b, swapped_a)[0])


def test_negation_cues_are_counted_between_alike_wordings_only():
    reworded_a, reworded_b = pair(
        "The paging integration silently dropped alerts during the weekend of June 8.",
        "Over the June 8 weekend, alerts were dropped by the paging integration without any error.",
    )
    negated_a, negated_b = pair(
        "The paging integration dropped alerts during the weekend of June 8.",
        "The paging integration did not drop alerts during the weekend of June 8.",
    )

    assert discriminators(reworded_b, reworded_a)[0] == []
    assert compare(reworded_b, reworded_a, cosine=0.95, params=RULES_ONLY).verdict == Verdict.SAME
    assert discriminators(negated_b, negated_a)[0] == ["negation: 1 vs 0"]
    assert compare(negated_b, negated_a, cosine=0.95, params=RULES_ONLY).verdict == Verdict.DIFFERENT


def test_a_converse_statement_is_not_an_antonym_flip_but_a_reversed_order_is():
    converse_a, converse_b = pair(
        "HR approves timesheets before finance locks the payroll.",
        "Finance locks the payroll only after HR has approved the timesheets.",
    )
    flipped_a, flipped_b = pair(
        "HR approves timesheets before finance locks the payroll.",
        "HR approves timesheets after finance locks the payroll.",
    )

    assert discriminators(converse_b, converse_a)[0] == []
    assert discriminators(flipped_b, flipped_a)[0] == ["antonyms: after ↔ before"]


def test_two_roles_exchanged_in_place_around_stopwords_are_a_swap():
    first, second = pair(
        "Purchase orders are approved by the department head, then by finance.",
        "Purchase orders are approved by finance, then by the department head.",
    )

    hard, _, _ = discriminators(second, first)

    assert hard == ["swap: financ ⇄ department head"]


@pytest.mark.parametrize(
    ("a", "b", "reason"),
    [
        ("Tickets are sold until 31 March.", "Tickets are sold until 31 May.", "values (month): may ≠ march"),
        ("The member wants to opt out of offers.", "The member wants to opt in to offers.",
         "antonyms: opt in ↔ opt out"),
        ("Tests run for at least 14 days.", "Tests run for at most 14 days.", "antonyms: at most ↔ at least"),
        ("Deals over $50k need approval.", "Deals over $40,000 need approval.", "numbers: 40000 usd ≠ 50000 usd"),
    ],
)  # fmt: skip
def test_months_named_may_opt_in_bounds_and_thousands_are_read(a, b, reason):
    first, second = pair(a, b)

    hard, _, _ = discriminators(second, first)

    assert hard == [reason]


def test_bounds_and_the_verb_last_are_not_negations_or_ordinals():
    bound_a, bound_b = pair(
        "Drivers must not exceed 9 hours of driving per day.", "A driver may drive at most nine hours a day."
    )
    same_a, same_b = pair("Deals above 50,000 dollars need a VP.", "Deals above $50k need a VP.")

    assert (bound_a.features.negations, bound_b.features.negations) == (0, 0)
    assert "at most" in bound_a.statement
    assert not any(
        t.startswith("ordinal_") for t in pair("x", "Each meeting can last 40 minutes.")[1].features.tokens
    )
    assert discriminators(same_b, same_a) == ([], [], True)
    assert pair("x", "Deals over $1500k or €2.5k.")[1].statement == "deals over 1500000 usd or 2500 eur"


# --- the identity gate: an automatic merge needs evidence close to identity ---------------------------


def test_the_identity_gate_stages_a_match_that_adds_a_fact():
    first, second = pair(
        "Support tickets from enterprise customers are answered within four hours.",
        "Enterprise customers' support tickets, which arrive mostly by email from their admins, are answered "
        "within four hours.",
    )

    rules = compare(second, first, cosine=0.95, params=NO_PROMOTION)
    gated = compare(second, first, cosine=0.95)

    assert identity_gap(second, first, DEFAULT_PARAMS) == (
        ["which", "arrive", "mostly", "email", "admins"],
        [],
    )
    assert rules.verdict == Verdict.SAME
    assert (gated.verdict, gated.method) == (Verdict.UNSURE, rules.method)
    assert gated.reasons[-1] == "not_identical: -which -arrive -mostly -email -admins"
    # the slack is the number of unexplained words tolerated: five here
    assert identity_gate(second, first, rules, replace(DEFAULT_PARAMS, identity_slack=5)) == rules
    assert (
        identity_gate(second, first, rules, replace(DEFAULT_PARAMS, identity_slack=4)).verdict
        == Verdict.UNSURE
    )


def test_a_reordered_statement_of_the_same_words_passes_the_gate():
    first, second = pair(
        "Refunds are processed by the billing team every Friday.",
        "Every Friday, the billing team processes all refunds.",
    )

    assert identity_gap(second, first, DEFAULT_PARAMS) == ([], [])
    assert compare(second, first, cosine=0.95).verdict == Verdict.SAME


def test_a_synonym_or_a_word_of_the_same_family_is_explained():
    first, second = pair(
        "Customers buy licences through the partner portal.",
        "Customer accounts purchase licences through the partner portal.",
    )

    # "buy" / "purchase" share a frequent WordNet sense; "Customers" / "Customer" are one family;
    # "accounts" is on one side only
    assert identity_gap(second, first, DEFAULT_PARAMS) == (["accounts"], [])
    assert identity_gap(second, first, replace(DEFAULT_PARAMS, lexicon=False)) == (
        ["accounts", "purchase"],
        ["buy"],
    )


def test_the_gate_leaves_decisions_that_read_both_statements_and_non_matches_alone():
    first, second = pair(
        "Support tickets from enterprise customers are answered within four hours.",
        "Enterprise customers' support tickets, which arrive mostly by email from their admins, are answered "
        "within four hours.",
    )
    llm = Comparison(Verdict.SAME, Method.VECTOR_LLM, ("llm",))
    staged = Comparison(Verdict.UNSURE, Method.VECTOR_RULES, ("grey_zone",))

    assert identity_gate(second, first, llm, DEFAULT_PARAMS) == llm
    assert identity_gate(second, first, staged, DEFAULT_PARAMS) == staged
    ungated = replace(DEFAULT_PARAMS, identity=False)
    assert compare(second, first, cosine=0.95, params=ungated).verdict == Verdict.SAME
