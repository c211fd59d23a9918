"""Canonicalization (ARG §2.10.5.1): deterministic normal form, fields, template, SimHash, and the
online detect/classify steps (§2.10.1–2.10.2)."""

from __future__ import annotations

import pytest

from memory.canonical import (
    InfoType,
    canonicalize,
    classify_info_type,
    hamming64,
    is_memorizable,
    normalize,
    simhash64,
)
from memory.comparator.discriminators import _unmatched


def test_normalize_lowercases_expands_and_writes_numbers_as_digits():
    assert normalize("The DB isn't   ready; it takes twenty five minutes (2GB)!") == (
        "the db is not ready it takes 25 minutes 2 gb"
    )
    assert normalize("We pay $1,000 a month, 50% up front") == "we pay 1000 usd a month 50 % up front"


def test_normalize_harmonizes_validated_synonyms_to_the_label_name():
    assert normalize("Where is my bill?", {"bill": "invoices"}) == "where is my invoices"
    assert normalize("billing settings", {"bill": "invoices"}) == "billing settings"  # whole words only


def test_synonyms_are_harmonized_in_one_pass_and_a_name_is_said_once():
    """The demo's "Bank transfer & SEPA" label has the synonyms "sepa", "direct debit", "wire transfer":
    replacing phrase by phrase rewrote the name through the synonym inside it, three names over."""
    sepa = {
        "sepa": "bank transfer sepa",
        "direct debit": "bank transfer sepa",
        "wire transfer": "bank transfer sepa",
    }
    assert normalize("We pay by SEPA direct debit", sepa) == "we pay by bank transfer sepa"
    assert normalize("We pay by bank transfer (SEPA)", sepa) == "we pay by bank transfer sepa"
    assert (
        normalize("a wire transfer or a direct debit", sepa) == "a bank transfer sepa or a bank transfer sepa"
    )
    # the longest phrase wins where two overlap
    assert normalize(
        "resend invoice now", {"invoice": "bill", "resend invoice": "invoice email delivery"}
    ) == ("invoice email delivery now")


def test_durations_in_different_units_are_one_quantity():
    two_weeks = canonicalize("Backups are kept for two weeks.", info_type=InfoType.PRODUCT_CONFIG)
    fourteen_days = canonicalize("Backups are retained 14 days.", info_type=InfoType.PRODUCT_CONFIG)
    a_year = canonicalize("Audit logs stay for 12 months.", info_type=InfoType.PRODUCT_CONFIG)

    assert two_weeks.features.quantities == ((1209600.0, "time", 2.0),)
    assert fourteen_days.features.quantities == ((1209600.0, "time", 14.0),)
    assert a_year.features.quantities == ((31557600.0, "time", 12.0),)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("X-rays are stored for ten years.", "X-ray images are kept for a decade."),
        (
            "Classes can be booked up to 7 days in advance.",
            "Classes can be reserved as much as a week ahead.",
        ),
        (
            "Subprocessors are announced 30 days before they start.",
            "Subprocessors are notified a month ahead.",
        ),
        ("The renewal runs for 3 years.", "They signed a three-year renewal."),
        ("A deposit of £20 is taken.", "A twenty-pound deposit is required."),
        ("The timeout is 30 seconds.", "The timeout is half a minute."),
        ("The red ages 18 months in oak.", "The red spends a year and a half in oak."),
        ("Milk is collected every 2 days.", "Milk gets picked up every other day."),
        ("Static assets are cached for 24 hours.", "Static assets are cached for a full day."),
    ],
)
def test_amounts_in_words_read_as_the_same_quantity(a, b):
    qa = canonicalize(a, info_type=InfoType.PRODUCT_CONFIG).features.quantities
    qb = canonicalize(b, info_type=InfoType.PRODUCT_CONFIG).features.quantities
    # equal as the comparator compares amounts (durations within 3 %: "30 days" is "a month")
    assert qa and not _unmatched(qa, qb) and not _unmatched(qb, qa), (qa, qb)


def test_a_day_of_the_month_reads_the_same_in_every_order():
    forms = {
        normalize(text)
        for text in ("The alarm went off on 4 October.", "The alarm went off on October 4th.",
                     "The alarm went off on the 4th of October.", "The alarm went off on October 4.")
    }  # fmt: skip
    assert forms == {"the alarm went off on 4 october"}
    assert normalize("Payments failed on 31 May.") == normalize("Payments failed on May 31st.")
    assert "2024 march" not in normalize("In March 2024 the plan changed.")  # a year stays after the month


def test_not_plus_an_antonym_reads_as_the_antonym():
    canonical = canonicalize("Password login is not enabled.", info_type=InfoType.PRODUCT_CONFIG)

    assert canonical.features.tokens == ("password", "login", "is", "disabled")
    assert canonical.features.negations == 0


def test_canonical_form_of_a_product_config():
    canonical = canonicalize(
        "Max connections is set to 200 in production.", info_type=InfoType.PRODUCT_CONFIG, module="Databases"
    )

    assert canonical.statement == "max connections is set to 200 in production"
    assert canonical.fields == {
        "module": "Databases",
        "environment": "production",
        "parameter": "max connections",
        "value": "200",
        "numbers": ["200"],
    }
    assert canonical.text == (
        "productconfig | module: Databases | parameter: max connections | value: 200 | "
        "environment: production | statement: max connections is set to 200 in production"
    )
    assert len(canonical.digest) == 64


def test_simhash_is_close_for_near_duplicates_and_far_otherwise():
    a = simhash64("invoices are emailed to the billing contact every month")
    b = simhash64("invoices are emailed to the billing contact each month")
    c = simhash64("the deploy failed because the build ran out of memory")

    assert -(2**63) <= a < 2**63
    assert hamming64(a, b) < hamming64(a, c)
    assert hamming64(a, a) == 0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Remember that I prefer email.", (True, "explicit")),
        ("The deploy failed at noon.", (True, "statement")),
        ("What is my plan?", (False, "question")),
        ("how do I reset my password", (False, "question")),
        ("ok thanks", (False, "too_short")),
    ],
)
def test_is_memorizable(text, expected):
    assert is_memorizable(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I prefer to be contacted by email", InfoType.USER_PREFERENCE),
        ("The API returned 502 errors and the deploy failed", InfoType.INCIDENT),
        ("Max connections is set to 200, retention is 14 days", InfoType.PRODUCT_CONFIG),
        ("Our company has 300 employees", InfoType.USER_PROFILE),
        ("Traffic spikes every weekday morning", InfoType.PATTERN_USAGE),
        ("Hello there friend", InfoType.EVENT),
    ],
)
def test_classify_info_type(text, expected):
    assert classify_info_type(text) == expected
