"""The Memory Guard's PII detectors: each kind found with its checksum or shape, placeholders on
scrub, and nothing taken from code-like text, versions or ordinary words."""

from __future__ import annotations

import pytest

from memory import pii


def kinds(text: str) -> list[tuple[str, str]]:
    return [(f.type, text[f.start : f.end]) for f in pii.detect(text)]


def test_luhn_and_iban_checksums():
    assert pii.luhn_valid("4111111111111111") is True
    assert pii.luhn_valid("4111111111111112") is False
    assert pii.iban_valid("DE89 3704 0044 0532 0130 00") is True
    assert pii.iban_valid("DE88 3704 0044 0532 0130 00") is False  # check digits off by one
    assert pii.iban_valid("GB82WEST12345698765432") is True
    assert pii.iban_valid("GB82WEST1234569876543") is False  # one character short for GB


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("write to jane.doe@example.com today", [("EMAIL", "jane.doe@example.com")]),
        ("call +44 20 7946 0958 after lunch", [("PHONE", "+44 20 7946 0958")]),
        ("my mobile is 06 12 34 56 78", [("PHONE", "06 12 34 56 78")]),
        ("card 4111 1111 1111 1111 was charged", [("CARD", "4111 1111 1111 1111")]),
        ("IBAN DE89 3704 0044 0532 0130 00 on file", [("IBAN", "DE89 3704 0044 0532 0130 00")]),
        ("the server 10.0.3.17 answers", [("IP", "10.0.3.17")]),
        ("reach 2001:db8::1 over ipv6", [("IP", "2001:db8::1")]),
        ("SSN 536-90-4399 on the form", [("NATIONAL_ID", "536-90-4399")]),
        ("DNI 54362315K attached", [("NATIONAL_ID", "54362315K")]),
        ("passport number X12345678 expired", [("NATIONAL_ID", "X12345678")]),
        ("My name is Jane Doe and I run billing", [("PERSON", "Jane Doe")]),
        ("Please contact Pierre Martin about it", [("PERSON", "Pierre Martin")]),
        ("Maria called support about invoice 12", [("PERSON", "Maria")]),
        ("Dr. Okafor approved the refund", [("PERSON", "Okafor")]),
    ],
)
def test_each_kind_of_pii_is_found(text, expected):
    assert kinds(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Card 4111 1111 1111 1112 fails the Luhn check",
        "Set max_connections to 200 in production",
        "Release v1.2.3.4 fixed the crash on 2024-01-15",
        "Use `John.config` and userName=Alice in the getUser() call; John_Smith is a variable",
        "Mark the ticket as done. Grace period is 14 days for the Pro plan.",
        "Will the invoice arrive in May? The region is in Paris.",
        "The Data export and The Git integration run at 09:00",
        "Order 4815162342 shipped; port 8080 is open",
        "contact support or ask for a refund",
    ],
)
def test_no_pii_in_ordinary_or_code_like_text(text):
    assert pii.detect(text) == ()


def test_scrub_replaces_every_finding_with_its_placeholder():
    text = "I'm Sophie, mail sophie@acme.example or call +1 415-555-0132; card 4111-1111-1111-1111."

    scrubbed = pii.scrub(text)

    assert scrubbed == "I'm <PERSON>, mail <EMAIL> or call <PHONE>; card <CARD>."
    assert pii.detect(scrubbed) == ()


def test_only_the_first_max_scan_chars_are_scanned():
    text = "x " * pii.MAX_SCAN_CHARS + "jane@example.com"

    assert pii.detect(text) == ()


def test_redact_finds_pii_past_the_scan_window_of_detect():
    filler = "please help with the billing page " * 200  # ~6,800 characters, no PII
    text = f"{filler}mail me at late@example.com or call card 4111 1111 1111 1111"
    assert len(text) > pii.MAX_SCAN_CHARS and not pii.detect(text)  # detect stops at MAX_SCAN_CHARS
    redacted = pii.redact_text(text)
    assert redacted.value == f"{filler}mail me at <EMAIL> or call card <CARD>"
    assert redacted.kinds == {"EMAIL", "CARD"}


def test_redact_walks_json_values_and_keeps_keys():
    value = {"to": ["a@example.com", 3, None], "note": {"maria@example.com": "IBAN DE89370400440532013000"}}
    redacted = pii.redact(value)
    assert redacted.value == {"to": ["<EMAIL>", 3, None], "note": {"maria@example.com": "IBAN <IBAN>"}}
    assert redacted.kinds == {"EMAIL", "IBAN"}


def test_redact_only_the_kinds_asked_for():
    text = "card 4111 1111 1111 1111 for ops@example.com"
    assert pii.redact_text(text, only=pii.SECRET_KINDS).value == "card <CARD> for ops@example.com"
