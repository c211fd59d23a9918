"""Step 1: normalization, language detection and the request envelope (ARG §2.1.1)."""

from __future__ import annotations

import pytest

from arg_platform.errors import RuleViolation
from inference.contracts import RequestContext
from inference.steps.envelope import (
    MAX_PROMPT_CHARS,
    build_envelope,
    detect_language,
    is_binary,
    matching_tokens,
    normalize_prompt,
    normalized_for_matching,
)

pytestmark = pytest.mark.django_db  # the session fixture publishes the demo release once


# --- normalization -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("  Where is   my\tinvoice?\n", "Where is my invoice?"),
        ("Hello\u200b wor\u00adld\u2060!", "Hello world!"),  # zero-width space, soft hyphen, word joiner
        ("\ufeffBOM first", "BOM first"),
        ("Ｉｎｖｏｉｃｅ ＰＤＦ", "Invoice PDF"),  # fullwidth forms
        ("the ﬁle", "the file"),  # ligature
        ("cafe\u0301", "café"),  # NFKC composes
        ("e\u200d\u0301", "é"),  # a hidden joiner does not stop composition
        ("a\u00a0b\u3000c\u2028d", "a b c d"),  # unusual spaces and line separators
        ("red\x1b[31m alert\x07", "red[31m alert"),  # control characters dropped
        ("CASE Is Kept", "CASE Is Kept"),
    ],
)
def test_normalize_prompt(raw, expected):
    assert normalize_prompt(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Crème BRÛLÉE", "creme brulee"),
        ("Straße", "strasse"),
        ("customer\u2019s  account", "customer's account"),
        ("Ｃｒｙｐｔｏ\u200bｍｉｎｅｒ", "cryptominer"),
        ("pay\u2013as\u2014you go", "pay-as-you go"),
        ("already normalized", "already normalized"),
    ],
)
def test_normalized_for_matching(raw, expected):
    assert normalized_for_matching(raw) == expected
    assert normalized_for_matching(expected) == expected  # idempotent


def test_matching_tokens_drop_stop_words_and_fold_plurals():
    assert matching_tokens("Where are my Invoices? The companies' addresses — API status") == (
        "invoice",
        "company",
        "address",
        "api",
        "status",
    )
    assert matching_tokens("is the site down? I'm locked out") == ("site", "down", "locked", "out")
    assert matching_tokens("a I ? !") == ()


def test_is_binary():
    assert is_binary("abc\x00def") is True
    assert is_binary("\x01\x02\x03 hello") is True  # 3 of 9 characters are control characters
    assert is_binary("lone \ud800 surrogate") is True
    assert is_binary("one stray \x1b escape in a longer sentence") is False
    assert is_binary("tabs\tand\nnewlines\r\n") is False


# --- language ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Where can I download last month's invoice?", "en"),
        ("Où puis-je télécharger la facture du mois dernier ?", "fr"),
        ("Wo kann ich die Rechnung vom letzten Monat herunterladen?", "de"),
        ("¿Dónde puedo descargar la factura del mes pasado?", "es"),
    ],
)
def test_detect_language(text, language):
    detected, confidence = detect_language(text)
    assert detected == language
    assert 0.9 <= confidence <= 1.0


@pytest.mark.parametrize(
    "text", ["", "ok", "12345 !!!", "asdf qwer zxcv", "xkcd zzqv bnmp wrtl", "hjkl hjkl hjkl"]
)
def test_detect_language_undetermined(text):
    assert detect_language(text) == ("und", 0.0)


# --- the envelope ------------------------------------------------------------------------------


def test_envelope_normalizes_and_detects(envelope_for, demo):
    envelope = envelope_for("  Where can I\u200b download   last month's INVOICE?  ")
    assert envelope.request_id == "r-1"
    assert envelope.project_id == demo.project_id
    assert envelope.prompt_raw == "  Where can I\u200b download   last month's INVOICE?  "
    assert envelope.prompt == "Where can I download last month's INVOICE?"
    assert envelope.language == "en"
    assert envelope.language_confidence > 0.9
    assert (envelope.role_key, envelope.typology_key) == ("customer", "quick-answer")


def test_envelope_uses_the_stated_language(envelope_for):
    envelope = envelope_for("Where can I download my invoice?", language="fr-CA")
    assert (envelope.language, envelope.language_confidence) == ("fr", 1.0)


def test_envelope_junk_prompt_is_undetermined(envelope_for):
    envelope = envelope_for("zzqv xkcd")
    assert (envelope.language, envelope.language_confidence) == ("und", 0.0)


def test_typology_resolution(envelope_for, demo):
    assert envelope_for("hi there", role="support-agent").typology_key == "guided-troubleshooting"
    assert envelope_for("hi there", role="privacy-officer").typology_key == "compliance-careful"
    assert envelope_for("hi there", typology="compliance-careful").typology_key == "compliance-careful"
    from inference.steps.envelope import build_envelope

    envelope = build_envelope(
        request_id="r-2",
        project_id=demo.project_id,
        prompt="hi there",
        context=RequestContext(),
        default_role="customer",
        default_typology="operator-console",
        runtime=demo,
    )
    assert envelope.typology_key == "operator-console"  # the caller's default beats the role's


def rules_of(excinfo):
    return [(v.rule, v.field) for v in excinfo.value.violations]


@pytest.mark.parametrize(
    ("prompt", "rule"),
    [
        ("", "request.prompt_empty"),
        ("   \u200b\n\t\u00ad  ", "request.prompt_empty"),
        ("x" * (MAX_PROMPT_CHARS + 1), "request.prompt_size"),
        ("word " * 5000, "request.prompt_size"),  # refused before normalization
        ("invoice\x00please", "request.prompt_binary"),
        ("\x01\x02\x03\x04 invoice", "request.prompt_binary"),
        ("bad \udcff bytes", "request.prompt_binary"),
    ],
)
def test_bad_prompts_are_refused(envelope_for, prompt, rule):
    with pytest.raises(RuleViolation) as excinfo:
        envelope_for(prompt)
    assert rules_of(excinfo) == [(rule, "prompt")]


def test_prompt_at_the_size_limit_is_accepted(envelope_for):
    assert len(envelope_for("y" * MAX_PROMPT_CHARS).prompt) == MAX_PROMPT_CHARS


def test_non_text_prompt_is_refused(envelope_for):
    with pytest.raises(RuleViolation) as excinfo:
        envelope_for(b"invoice")
    assert rules_of(excinfo) == [("request.prompt_type", "prompt")]


def test_unknown_role_in_context(demo):
    with pytest.raises(RuleViolation) as excinfo:
        build_envelope(
            request_id="r",
            project_id=demo.project_id,
            prompt="invoice",
            context=RequestContext(role="janitor"),
            default_role=None,
            default_typology=None,
            runtime=demo,
        )
    assert rules_of(excinfo) == [("request.role_unknown", "role")]


def test_context_role_used_when_the_caller_has_none(demo):
    envelope = build_envelope(
        request_id="r",
        project_id=demo.project_id,
        prompt="invoice",
        context=RequestContext(role="sre-operator"),
        default_role=None,
        default_typology=None,
        runtime=demo,
    )
    assert (envelope.role_key, envelope.typology_key) == ("sre-operator", "operator-console")


def test_context_cannot_switch_to_another_role(demo):
    with pytest.raises(RuleViolation) as excinfo:
        build_envelope(
            request_id="r",
            project_id=demo.project_id,
            prompt="declare an incident",
            context=RequestContext(role="sre-operator"),
            default_role="customer",
            default_typology=None,
            runtime=demo,
        )
    assert rules_of(excinfo) == [("request.role_forbidden", "role")]


def test_unknown_default_role(envelope_for):
    with pytest.raises(RuleViolation) as excinfo:
        envelope_for("invoice", role="ghost")
    assert rules_of(excinfo) == [("request.role_unknown", "role")]


def test_role_required_when_the_release_has_roles(envelope_for):
    with pytest.raises(RuleViolation) as excinfo:
        envelope_for("invoice", role=None)
    assert rules_of(excinfo) == [("request.role_required", "role")]


def test_unknown_typology(envelope_for):
    with pytest.raises(RuleViolation) as excinfo:
        envelope_for("invoice", typology="turbo")
    assert rules_of(excinfo) == [("request.typology_unknown", "typology")]


def test_typology_access_constraints(envelope_for):
    with pytest.raises(RuleViolation) as excinfo:
        envelope_for("invoice", typology="operator-console")  # roles: support-agent, sre-operator
    assert rules_of(excinfo) == [("request.typology_forbidden", "typology")]
    with pytest.raises(RuleViolation) as excinfo:
        envelope_for("invoice", typology="quick-answer", channel="email")  # channels: chat, web
    assert rules_of(excinfo) == [("request.typology_forbidden", "typology")]
    envelope = envelope_for("invoice", role="sre-operator", typology="operator-console", channel="api")
    assert envelope.typology_key == "operator-console"


@pytest.mark.parametrize("language", ["xx", "klingon", "e", "en_US_POSIX_extra_long_tag!"])
def test_unknown_language(envelope_for, language):
    with pytest.raises(RuleViolation) as excinfo:
        envelope_for("invoice", language=language)
    assert rules_of(excinfo) == [("request.language_unknown", "language")]


def test_every_broken_rule_is_reported_at_once(envelope_for):
    with pytest.raises(RuleViolation) as excinfo:
        envelope_for("", role="ghost", typology="turbo", language="xx")
    assert rules_of(excinfo) == [
        ("request.prompt_empty", "prompt"),
        ("request.role_unknown", "role"),
        ("request.typology_unknown", "typology"),
        ("request.language_unknown", "language"),
    ]
