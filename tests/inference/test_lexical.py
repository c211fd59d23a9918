"""Step 2: lexical-first candidates under the policy constraints (ARG §2.2), on the demo release."""

from __future__ import annotations

import statistics
import time

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from inference.contracts import LexicalCandidates, PolicyState
from inference.steps.envelope import matching_tokens
from inference.steps.lexical import LexicalIndex, label_document, lexical_candidates
from inference.steps.policy_manager import precheck
from tests.inference.conftest import DEMO_PACK

pytestmark = pytest.mark.django_db  # the session fixture publishes the demo release once

PACK = yaml.safe_load(DEMO_PACK.read_text(encoding="utf-8"))
ROLES = sorted(r["key"] for r in PACK["roles"])


def candidates(envelope_for, demo, prompt, role="customer", **kwargs):
    envelope = envelope_for(prompt, role=role)
    return lexical_candidates(envelope, precheck(envelope, demo), demo, **kwargs)


@pytest.mark.parametrize(
    ("role", "prompt", "label_id"),
    [
        ("customer", "where can I download last month's invoice", "L00002"),
        ("customer", "my card expired, how do I update it", "L00007"),
        ("customer", "what payment methods do you accept", "L00006"),
        ("customer", "forgot my password", "L00023"),
        ("customer", "revoke token", "L00041"),
        ("anonymous-visitor", "how long is the free trial", "L00017"),
        ("anonymous-visitor", "password reset", "L00023"),
        ("privacy-officer", "export all my data", "L00073"),
        ("privacy-officer", "can we get your soc 2 report", "L00079"),
        ("sre-operator", "how do I declare an incident", "L00066"),
    ],
)
def test_example_utterances_rank_their_label_first(envelope_for, demo, role, prompt, label_id):
    result = candidates(envelope_for, demo, prompt, role=role)
    assert next(iter(result.raw)) == label_id
    assert next(iter(result.filtered)) == label_id


def test_scores_are_normalized_and_sorted(envelope_for, demo):
    result = candidates(envelope_for, demo, "where can I download last month's invoice")
    scores = list(result.raw.values())
    assert len(scores) == 19  # every label sharing a word with the prompt, fewer than top_k
    assert all(0.0 < s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert result.raw["L00002"] > 0.9
    assert result.filtered == result.raw and result.blocked == ()


def test_top_k_bounds_the_raw_set(envelope_for, demo):
    result = candidates(envelope_for, demo, "where can I download last month's invoice", top_k=3)
    assert list(result.raw) == ["L00002", "L00001", "L00004"]


def test_forbidden_labels_are_blocked_and_logged(envelope_for, demo):
    result = candidates(envelope_for, demo, "how do I declare an incident", role="customer")
    # Incident reports (L00104), published for customers under Service status, shares the word and stays
    assert list(result.raw)[:3] == ["L00066", "L00065", "L00104"] and "L00067" in result.raw
    assert {"L00066", "L00065", "L00067"}.isdisjoint(result.filtered) and "L00104" in result.filtered
    assert result.blocked[:2] == (("L00066", "forbidden_label"), ("L00065", "forbidden_label"))
    assert ("L00067", "forbidden_label") in result.blocked
    assert set(result.filtered) | {label for label, _ in result.blocked} == set(result.raw)


def test_labels_outside_the_allow_list_are_blocked(envelope_for, demo):
    result = candidates(
        envelope_for, demo, "where can I download last month's invoice", role="anonymous-visitor"
    )
    assert result.blocked[:2] == (("L00002", "not_in_allow_list"), ("L00001", "not_in_allow_list"))
    allowed = demo.policy_for_role("anonymous-visitor").constraints.allowed_labels
    assert set(result.filtered) <= allowed
    assert all(constraint == "not_in_allow_list" for _, constraint in result.blocked)


def test_shadow_labels_are_scored_but_never_routed(envelope_for, demo):
    result = candidates(envelope_for, demo, "purge CDN cache", role="sre-operator")
    assert list(result.raw) == ["L00056", "L00047"]  # L00056 "Edge caching rules" is SHADOW
    assert result.filtered == {"L00047": result.raw["L00047"]}
    assert result.blocked == (("L00056", "shadow"),)


def test_unknown_words_give_no_candidates(envelope_for, demo):
    assert candidates(envelope_for, demo, "blorf snizzle wug") == LexicalCandidates()


def test_blocked_request_never_reaches_retrieval(envelope_for, demo):
    envelope = envelope_for("botnet invoices")
    decision = precheck(envelope, demo)
    assert decision.state is PolicyState.BLOCK
    with pytest.raises(ValueError, match="blocked"):
        lexical_candidates(envelope, decision, demo)


def test_index_covers_active_and_shadow_labels_only(demo):
    index = demo.lexical
    assert len(index.label_ids) == 101  # 104 labels less 2 DEPRECATED and 1 CANDIDATE
    assert {"L00010", "L00030", "L00090"}.isdisjoint(index.label_ids)
    assert index.shadow == frozenset({"L00056"})


def test_label_document_holds_names_synonyms_description_examples_and_ancestors(demo):
    label = demo.labels["L00008"]  # "3-D Secure verification" under card details → payment methods → payments
    document = label_document(label, demo.labels)
    assert document[:2] == ["secure", "verification"]  # one-character tokens ("3", "d") are dropped
    assert document[-6:] == ["update", "card", "detail", "payment", "method", "payment"]  # ancestors
    for text in [*label["synonyms"], label["description"], *label["examples"]]:
        assert set(matching_tokens(text)) <= set(document)


@pytest.mark.parametrize(
    "prompt",
    [
        "where can I download last month's invoice",
        "card card expired",
        "sso login fails",
        "nothing matches zzz",
    ],
)
def test_postings_equal_rank_bm25_scores(demo, prompt):
    index: LexicalIndex = demo.lexical
    tokens = matching_tokens(prompt)
    np.testing.assert_allclose(index.raw_scores(tokens), index.bm25.get_scores(list(tokens)), rtol=1e-12)


def test_lexical_reads_no_database(envelope_for, demo, django_assert_num_queries):
    envelope = envelope_for("update credit card")
    decision = precheck(envelope, demo)
    with django_assert_num_queries(0):
        lexical_candidates(envelope, decision, demo)


def test_lexical_is_fast(envelope_for, demo):
    pairs = []
    for label in PACK["labels"][:40]:
        for example in label["examples"]:
            envelope = envelope_for(example)
            pairs.append((envelope, precheck(envelope, demo)))
    timings = []
    for envelope, decision in pairs:
        started = time.perf_counter()
        lexical_candidates(envelope, decision, demo)
        timings.append(time.perf_counter() - started)
    assert statistics.median(timings) < 1e-3  # typically ~0.03 ms


# --- property: policy filtering is a hard gate -----------------------------------------------------

WORDS = sorted(
    {word for label in PACK["labels"] for example in label["examples"] for word in example.split()}
)


@settings(
    max_examples=1000,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    role=st.sampled_from(ROLES),
    words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=12),
    noise=st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=20),
    top_k=st.integers(min_value=1, max_value=40),
)
def test_filtered_labels_are_never_forbidden_by_the_constraints(
    envelope_for, demo, role, words, noise, top_k
):
    envelope = envelope_for(" ".join(words) + " " + noise, role=role)
    decision = precheck(envelope, demo)
    assume(decision.state is not PolicyState.BLOCK)
    result = lexical_candidates(envelope, decision, demo, top_k=top_k)
    constraints = decision.constraints
    assert all(constraints.admits_label(label) for label in result.filtered)
    assert demo.lexical.shadow.isdisjoint(result.filtered)
    assert all(
        not constraints.admits_label(label) or label in demo.lexical.shadow for label, _ in result.blocked
    )
    assert len(result.raw) <= top_k
    assert set(result.filtered) | {label for label, _ in result.blocked} == set(result.raw)
    assert set(result.filtered).isdisjoint(label for label, _ in result.blocked)
