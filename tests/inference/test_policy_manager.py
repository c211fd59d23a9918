"""The Policy Manager pre-check and post-check on the demo pack's five policies (ARG §2.1.2–2.1.3)."""

from __future__ import annotations

import dataclasses
import statistics
import time
from types import MappingProxyType

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inference.contracts import PolicyConstraints, PolicyState, RequestContext, ResponseMode
from inference.runtime import ReleaseRuntime
from inference.steps.envelope import build_envelope
from inference.steps.policy_manager import ScopeGuard, postcheck, precheck, secret_notice
from tests.inference.conftest import DEMO_PACK

pytestmark = pytest.mark.django_db  # the session fixture publishes the demo release once

PACK = yaml.safe_load(DEMO_PACK.read_text(encoding="utf-8"))
POLICIES = {p["key"]: p for p in PACK["policies"]}
ROLE_POLICY = {r["key"]: r["policy"] for r in PACK["roles"]}


def ids(*numbers: int) -> frozenset[str]:
    return frozenset(f"L{n:05d}" for n in numbers)


def check(envelope_for, demo, prompt, role="customer"):
    return precheck(envelope_for(prompt, role=role), demo)


# --- allow, and the constraints of every policy (access control) -----------------------------------


def test_plain_request_is_allowed_with_the_role_constraints(envelope_for, demo):
    decision = check(envelope_for, demo, "where can I download last month's invoice")
    assert decision.state is PolicyState.ALLOW
    assert decision.response_mode is ResponseMode.NORMAL
    assert (decision.reasons, decision.message, decision.policy_key) == ((), "", "customer")
    assert decision.constraints == PolicyConstraints(
        allowed_labels=None,
        forbidden_labels=ids(65, 66, 67, 68, 69, 70, 71),  # incident response + on-call, children included
        allowed_node_types=None,
        forbidden_node_types=frozenset(),
        max_hops=6,
        memory_scopes=frozenset({"USER"}),
    )


def test_constraints_of_each_policy_cover_whole_subtrees(demo):
    anonymous = demo.policy_for_role("anonymous-visitor").constraints
    assert anonymous.allowed_labels == ids(
        13, 14, 15, 16, 17, 60, 61, 62, 63, 64, 104, 77, 78, 79, 80, 81, 82, 83, 100, 101, 102, 103, 23
    )
    assert anonymous.forbidden_node_types == frozenset({"Action", "MemoryRead", "MemoryWrite"})
    assert (anonymous.max_hops, anonymous.memory_scopes) == (3, frozenset())
    privacy = demo.policy_for_role("privacy-officer").constraints
    assert privacy.allowed_labels == ids(
        72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 36, 37, 38, 41
    )
    assert privacy.forbidden_node_types == frozenset({"Shortcut"})
    assert privacy.memory_scopes == frozenset({"USER", "ORG"})
    agent = demo.policy_for_role("support-agent").constraints
    assert (agent.allowed_labels, agent.forbidden_labels, agent.max_hops) == (None, ids(71), 8)
    sre = demo.policy_for_role("sre-operator").constraints
    assert sre == PolicyConstraints(max_hops=10, memory_scopes=frozenset({"USER", "ORG", "GLOBAL"}))
    assert demo.policy_for_role("customer-admin") is demo.policy_for_role("customer")
    assert not anonymous.admits_label("L00002") and anonymous.admits_label("L00014")
    assert not anonymous.admits_node_type("Action") and anonymous.admits_node_type("FAQ")


# --- content filter --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "prompt",
    [
        "how do I run a cryptominer on my app",
        "Is CRYPTO-MINING allowed on the free plan?",
        "crypto\u200bminer deployment",
        "selling a phishing   kit",
        "Ｃａｒｄｉｎｇ tutorial",
        "botnet.",
    ],
)
def test_blocked_terms_block_whatever_the_spelling(envelope_for, demo, prompt):
    decision = check(envelope_for, demo, prompt)
    assert decision.state is PolicyState.BLOCK
    assert decision.response_mode is ResponseMode.REFUSE
    assert decision.reasons == ("blocked_term",)
    assert decision.message == POLICIES["customer"]["refusal_template"]


def test_blocked_terms_match_whole_words_only(envelope_for, demo):
    decision = check(envelope_for, demo, "discarding old invoices from the botnetwork report")
    assert (decision.state, decision.reasons) == (PolicyState.ALLOW, ())


def test_blocked_pattern_blocks(envelope_for, demo):
    decision = check(envelope_for, demo, "can you help me hack into my ex's account")
    assert (decision.state, decision.reasons) == (PolicyState.BLOCK, ("blocked_pattern",))
    assert decision.message == POLICIES["customer"]["refusal_template"]


def test_blocked_pattern_depends_on_the_role(envelope_for, demo):
    prompt = "how do I stress test their api"
    customer = check(envelope_for, demo, prompt, role="customer")
    sre = check(envelope_for, demo, prompt, role="sre-operator")  # no load-attack pattern
    assert (customer.state, customer.reasons) == (PolicyState.BLOCK, ("blocked_pattern",))
    assert (sre.state, sre.reasons) == (PolicyState.ALLOW, ())


def test_a_card_number_is_no_reason_to_refuse_but_is_named_as_a_secret(envelope_for, demo):
    decision = check(envelope_for, demo, "my card 4242 4242 4242 4242 was charged twice", role="customer")
    assert (decision.state, decision.reasons, decision.secrets) == (PolicyState.ALLOW, (), ("CARD",))
    plain = check(envelope_for, demo, "my card was charged twice, invoice 4242", role="customer")
    assert plain.secrets == ()


def test_the_secret_notice_names_each_kind_found():
    assert secret_notice(()) == ""
    assert "don't share card numbers here" in secret_notice(("CARD",))
    both = secret_notice(("CARD", "IBAN"))
    assert "card numbers or bank account numbers" in both


def test_blocked_terms_depend_on_the_role(envelope_for, demo):
    assert check(envelope_for, demo, "crypto mining jobs", role="customer").state is PolicyState.BLOCK
    assert check(envelope_for, demo, "crypto mining jobs", role="sre-operator").state is PolicyState.ALLOW


# --- sensitive topics ------------------------------------------------------------------------------


def test_sensitive_topic_refocuses_with_the_refocus_template(envelope_for, demo):
    decision = check(envelope_for, demo, "I will ask my Lawyer about this invoice")
    assert decision.state is PolicyState.ALLOW_WITH_REFOCUS
    assert decision.response_mode is ResponseMode.REFOCUS
    assert decision.reasons == ("sensitive_topic:legal-advice",)
    assert decision.message == POLICIES["customer"]["refocus_template"]


def test_sensitive_topic_restricts(envelope_for, demo):
    decision = check(envelope_for, demo, "we received a subpoena for our deployment logs")
    assert decision.state is PolicyState.RESTRICT
    assert decision.response_mode is ResponseMode.CAUTIOUS
    assert (decision.reasons, decision.message) == (("sensitive_topic:law-enforcement",), "")


def test_sensitive_topic_with_typographic_apostrophe(envelope_for, demo):
    decision = check(envelope_for, demo, "show me another customer\u2019s invoices")
    assert (decision.state, decision.reasons) == (
        PolicyState.RESTRICT,
        ("sensitive_topic:other-customers-data",),
    )


def test_sensitive_topics_differ_per_policy(envelope_for, demo):
    prompt = "is this tax deductible"
    assert check(envelope_for, demo, prompt, role="customer").reasons == ("sensitive_topic:tax-advice",)
    assert check(envelope_for, demo, prompt, role="support-agent").reasons == ()


# --- precedence ------------------------------------------------------------------------------------


def test_refocus_beats_restrict_and_lists_both(envelope_for, demo):
    decision = check(envelope_for, demo, "our lawyer has a court order")
    assert decision.state is PolicyState.ALLOW_WITH_REFOCUS
    assert decision.reasons == ("sensitive_topic:legal-advice", "sensitive_topic:law-enforcement")
    assert decision.message == POLICIES["customer"]["refocus_template"]


def test_block_beats_everything_and_lists_every_reason(envelope_for, demo):
    decision = check(envelope_for, demo, "my attorney got a search warrant about the botnet; hack into it")
    assert decision.state is PolicyState.BLOCK
    assert decision.response_mode is ResponseMode.REFUSE
    assert decision.reasons == (
        "blocked_term",
        "blocked_pattern",
        "sensitive_topic:legal-advice",
        "sensitive_topic:law-enforcement",
    )
    assert decision.message == POLICIES["customer"]["refusal_template"]


def runtime_with(demo_snapshot, **policy_changes):
    """A runtime of the demo release whose customer policy is changed (built, not cached)."""
    documents = dict(demo_snapshot.documents)
    documents["policies"] = [
        {**p, **policy_changes} if p["key"] == "customer" else p for p in documents["policies"]
    ]
    snapshot = dataclasses.replace(demo_snapshot, documents=MappingProxyType(documents), checksum="test")
    return ReleaseRuntime.build(snapshot)


def test_a_topic_whose_action_is_block_blocks(demo_snapshot):
    runtime = runtime_with(
        demo_snapshot,
        sensitive_topics=[
            {"topic": "self-harm", "terms": ["hurt myself"], "action": "BLOCK"},
            {"topic": "legal-advice", "terms": ["lawyer"], "action": "REFOCUS"},
        ],
        refusal_template="",
    )
    envelope = build_envelope(
        request_id="r",
        project_id=runtime.project_id,
        prompt="my lawyer says I should not hurt myself",
        context=RequestContext(),
        default_role="customer",
        default_typology=None,
        runtime=runtime,
    )
    decision = precheck(envelope, runtime)
    assert decision.state is PolicyState.BLOCK
    assert decision.reasons == ("sensitive_topic:self-harm", "sensitive_topic:legal-advice")
    assert decision.message == "I can't help with that request."  # the default when the template is empty


# --- scope & intent guard --------------------------------------------------------------------------


def test_clearly_off_domain_request_is_refocused(envelope_for, demo):
    decision = check(envelope_for, demo, "What's the weather forecast for Paris tomorrow?")
    assert decision.state is PolicyState.ALLOW_WITH_REFOCUS
    assert decision.reasons == ("out_of_scope",)
    assert decision.message == POLICIES["customer"]["refocus_template"]
    anonymous = check(envelope_for, demo, "tell me a joke", role="anonymous-visitor")
    assert (anonymous.state, anonymous.message) == (
        PolicyState.ALLOW_WITH_REFOCUS,
        POLICIES["anonymous-visitor"]["refocus_template"],
    )


@pytest.mark.parametrize(
    "prompt",
    [
        "tell me a joke about my invoice",  # a domain word: the Context Weaver decides
        "is the weather causing your outage?",
        "blorf snizzle wug",  # no marker: left to the Context Weaver's OOD flag
    ],
)
def test_scope_guard_leaves_anything_doubtful_to_the_weaver(envelope_for, demo, prompt):
    assert check(envelope_for, demo, prompt).state is PolicyState.ALLOW


def test_markers_the_domain_uses_are_dropped():
    guard = ScopeGuard.build(["Weather forecasts for farmers", "Crop insurance"])
    assert guard.out_of_scope("what's the weather tomorrow") is False
    assert guard.out_of_scope("tell me a joke") is True
    assert guard.out_of_scope("tell me a joke about crop insurance") is False


# --- post-check ------------------------------------------------------------------------------------


def test_postcheck_redacts_blocked_patterns(envelope_for, demo):
    decision = check(envelope_for, demo, "which accounts are protected")
    assert postcheck(decision, "Nobody may hack into an account.", demo) == (
        "Nobody may [redacted] an account.",
        ("postcheck:blocked_pattern",),
    )


def test_postcheck_replaces_secret_pii_in_the_answer(envelope_for, demo):
    decision = check(envelope_for, demo, "which card do you have on file")
    assert postcheck(decision, "The card 4242 4242 4242 4242 is on file (ops@example.com).", demo) == (
        "The card <CARD> is on file (ops@example.com).",
        ("postcheck:secret_redacted",),
    )


def test_postcheck_refuses_answers_with_blocked_terms(envelope_for, demo):
    decision = check(envelope_for, demo, "what is allowed on the platform")
    assert postcheck(decision, "You may not run a BotNet here.", demo) == (
        POLICIES["customer"]["refusal_template"],
        ("postcheck:blocked_term",),
    )


def test_postcheck_refuses_a_pattern_hidden_by_invisible_characters(envelope_for, demo):
    decision = check(envelope_for, demo, "what is allowed on the platform")
    assert postcheck(decision, "Here is how to hack\u200b into it.", demo) == (
        POLICIES["customer"]["refusal_template"],
        ("postcheck:blocked_pattern",),
    )


def test_postcheck_keeps_a_clean_answer(envelope_for, demo):
    decision = check(envelope_for, demo, "where can I download my invoice")
    answer = "Open Billing › Invoices and click Download.\nPDFs are kept for 24 months."
    assert postcheck(decision, answer, demo) == (answer, ())


def test_postcheck_of_a_blocked_request_is_the_refusal(envelope_for, demo):
    decision = check(envelope_for, demo, "botnet")
    assert postcheck(decision, "anything", demo) == (POLICIES["customer"]["refusal_template"], ())


# --- a release without roles -----------------------------------------------------------------------


def test_release_without_roles_is_ungoverned(demo_snapshot):
    documents = {**demo_snapshot.documents, "roles": [], "policies": []}
    snapshot = dataclasses.replace(demo_snapshot, documents=MappingProxyType(documents), checksum="no-roles")
    runtime = ReleaseRuntime.build(snapshot)
    envelope = build_envelope(
        request_id="r",
        project_id=runtime.project_id,
        prompt="botnet invoice",
        context=RequestContext(),
        default_role=None,
        default_typology=None,
        runtime=runtime,
    )
    assert (envelope.role_key, envelope.typology_key) == (None, "quick-answer")
    decision = precheck(envelope, runtime)
    assert (decision.state, decision.constraints, decision.policy_key) == (
        PolicyState.ALLOW,
        PolicyConstraints(),
        None,
    )
    assert postcheck(decision, "botnet", runtime) == ("botnet", ())


# --- purity and speed ------------------------------------------------------------------------------


def test_precheck_reads_no_database(envelope_for, demo, django_assert_num_queries):
    envelope = envelope_for("our lawyer has a court order")
    with django_assert_num_queries(0):
        precheck(envelope, demo)


def test_precheck_is_fast(envelope_for, demo):
    envelopes = [
        envelope_for(example, role=role)
        for label in PACK["labels"][:40]
        for example in label["examples"]
        for role in ("customer", "anonymous-visitor")
    ]
    timings = []
    for envelope in envelopes:
        started = time.perf_counter()
        precheck(envelope, demo)
        timings.append(time.perf_counter() - started)
    # typically ~0.02 ms; the bound leaves room for a loaded CI machine
    assert statistics.median(timings) < 0.5e-3


# --- property: a blocked term always blocks --------------------------------------------------------

SEPARATORS = st.sampled_from(
    [" ", "  ", "\n", "\t", ". ", ", ", "! ", "? ", " - ", "(", ")", '"', "'", ": ", "/", "\u00a0", "\u3000"]
)
FREE_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc")),  # no NUL or binary: the envelope refuses those
    max_size=120,
)
INVISIBLE = st.sampled_from(["", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"])


@st.composite
def disguised(draw, term: str) -> str:
    """The term with random case per character, invisible characters inside, maybe fullwidth."""
    out = []
    for ch in term:
        ch = ch.upper() if draw(st.booleans()) else ch
        if draw(st.booleans()) and ch.isascii() and ch.isalnum():
            ch = chr(ord(ch) + 0xFEE0)  # fullwidth form, folded back by NFKC
        out.append(ch + draw(INVISIBLE))
    return "".join(out)


@st.composite
def prompts_with_a_blocked_term(draw):
    role = draw(st.sampled_from(sorted(ROLE_POLICY)))
    term = draw(st.sampled_from(POLICIES[ROLE_POLICY[role]]["blocked_terms"]))
    prompt = draw(FREE_TEXT) + draw(SEPARATORS) + draw(disguised(term)) + draw(SEPARATORS) + draw(FREE_TEXT)
    return role, prompt


@settings(
    max_examples=1000,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(case=prompts_with_a_blocked_term())
def test_any_prompt_with_a_blocked_term_of_the_role_is_blocked(envelope_for, demo, case):
    role, prompt = case
    decision = precheck(envelope_for(prompt, role=role), demo)
    assert decision.state is PolicyState.BLOCK
    assert "blocked_term" in decision.reasons
    assert decision.response_mode is ResponseMode.REFUSE
    assert decision.message == POLICIES[ROLE_POLICY[role]]["refusal_template"]
