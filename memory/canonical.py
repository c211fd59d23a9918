"""Info canonicalization (ARG §2.10.5.1): deterministic, template-bound, normalized — no LLM.

``canonicalize(text, info_type=…, synonyms=…)`` turns a PII-scrubbed fact into a ``Canonical``:

* **normalization** (§2.10.5.1.3) — Unicode NFKC, lowercase, contractions expanded ("isn't" → "is not"),
  number words as digits ("twelve" → "12"), numbers split from their units ("2gb" → "2 gb"), thousands
  separators dropped, non-significant punctuation removed (dots, dashes and colons *inside* a token
  stay: versions, identifiers, times), validated domain synonyms harmonized to their label's name;
* **canonical fields** (§2.10.5.1.1) — key/value slots per InfoType (Incident: module, symptom, impact,
  environment; ProductConfig: module, parameter, value, environment; UserPreference: object, value,
  context; …) plus the discriminating features the grey-zone comparator reads: numbers, versions,
  identifiers, negation cues, environment;
* **canonical text** (§2.10.5.1.2) — a strict template per InfoType, filled from the fields; the
  normalized statement is what gets embedded (``embedding_canonical_text``);
* **secondary signature** (§2.10.5.5) — a 64-bit SimHash of the statement (a recall index, never
  proof of identity);
* **digest** — sha256 of the statement: only the exact-duplicate guard *within* an InfoKey (the unique
  constraint that makes two concurrent identical writes one InfoUnit), never the primary key.

This module also holds the cheap online classifiers of §2.10.1–2.10.2: ``is_memorizable`` and
``classify_info_type``.
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


def words(text: str) -> tuple[str, ...]:
    """The whitespace-separated words of ``text`` (word lists written as paragraphs)."""
    return tuple(text.split())


class InfoType:
    """The nature of a fact (§2.10.2). ``Event`` is the catch-all for episodic facts of no other type."""

    USER_PROFILE = "UserProfile"
    USER_PREFERENCE = "UserPreference"
    INCIDENT = "Incident"
    PATTERN_USAGE = "PatternUsage"
    PRODUCT_CONFIG = "ProductConfig"
    EVENT = "Event"

    ALL = (USER_PROFILE, USER_PREFERENCE, INCIDENT, PATTERN_USAGE, PRODUCT_CONFIG, EVENT)


NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
}  # fmt: skip
SCALE_WORDS = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
ORDINAL_PREFIX = "ordinal_"
ORDINAL_WORDS = {
    "first": "1", "third": "3", "fourth": "4", "fifth": "5", "sixth": "6", "seventh": "7", "eighth": "8",
    "ninth": "9", "tenth": "10", "last": "last",
}  # fmt: skip
CONTRACTIONS = (
    (r"\bcan't\b", "can not"), (r"\bcannot\b", "can not"), (r"\bwon't\b", "will not"),
    (r"\bshan't\b", "shall not"), (r"n't\b", " not"), (r"'re\b", " are"), (r"'ve\b", " have"),
    (r"'ll\b", " will"), (r"'d\b", " would"), (r"\bi'm\b", "i am"), (r"'s\b", ""),
)  # fmt: skip
# Seconds per time unit, bytes per data unit: "2 weeks" and "14 days" are one quantity.
TIME_UNITS = {
    "ms": 0.001, "millisecond": 0.001, "milliseconds": 0.001, "s": 1, "sec": 1, "secs": 1, "second": 1,
    "seconds": 1, "min": 60, "mins": 60, "minute": 60, "minutes": 60, "h": 3600, "hr": 3600, "hrs": 3600,
    "hour": 3600, "hours": 3600, "day": 86400, "days": 86400, "week": 604800, "weeks": 604800,
    "month": 2629800, "months": 2629800, "year": 31557600, "years": 31557600, "fortnight": 1209600,
    "fortnights": 1209600, "decade": 315576000, "decades": 315576000,
}  # fmt: skip
DATA_UNITS = {
    "kb": 1e3, "kilobytes": 1e3, "mb": 1e6, "megabytes": 1e6, "gb": 1e9, "gigabytes": 1e9, "tb": 1e12,
    "terabytes": 1e12, "pb": 1e15,
}  # fmt: skip
OTHER_UNITS = {
    "%": "%", "percent": "%", "usd": "usd", "dollars": "usd", "dollar": "usd", "eur": "eur", "euros": "eur",
    "euro": "eur", "gbp": "gbp", "rpm": "rpm", "rps": "rps", "qps": "rps",
}  # fmt: skip
UNIT_WORDS = "|".join(sorted({*TIME_UNITS, *DATA_UNITS, *OTHER_UNITS} - {"%"}, key=len, reverse=True))
# "after an hour" → "after 1 hour" (a duration), but "$12 a month" stays a rate.
ARTICLE_DURATION_RE = re.compile(
    r"\b(after|for|within|took|takes|lasted|about|around|under|than|up to|for about|as much as|at most|"
    r"at least)\s+an?\s+(?:full\s+)?(second|minute|hour|day|week|fortnight|month|year|decade)\b"
)
# "a month ahead", "a day late": one unit before a word of timing
ARTICLE_OFFSET_RE = re.compile(
    r"\b(?:an?|one)\s+(second|minute|hour|day|week|fortnight|month|year|decade)\s+"
    r"(ahead|before|early|earlier|late|later|in advance)\b"
)
MONTH_NAMES = "january|february|march|april|month-may|june|july|august|september|october|november|december"
ENVIRONMENTS = {
    "production": "production", "prod": "production", "live": "production", "staging": "staging",
    "stage": "staging", "preprod": "staging", "development": "development", "dev": "development",
    "test": "test", "testing": "test", "qa": "test", "sandbox": "sandbox", "preview": "preview",
}  # fmt: skip
NEGATION_CUES = frozenset(
    {
        "not",
        "no",
        "never",
        "none",
        "nobody",
        "nothing",
        "neither",
        "nor",
        "without",
        "except",
        "rarely",
        "hardly",
    }
)
# Single-word antonyms: "not enabled" is read as "disabled" before polarity is compared.
ANTONYM_PAIRS: tuple[tuple[str, str], ...] = (
    ("enabled", "disabled"), ("enable", "disable"), ("allowed", "blocked"), ("allow", "block"),
    ("allows", "blocks"), ("accepted", "rejected"), ("accept", "reject"), ("increased", "decreased"),
    ("increase", "decrease"), ("rose", "fell"), ("higher", "lower"), ("more", "less"), ("before", "after"),
    ("open", "closed"), ("public", "private"), ("mandatory", "optional"), ("required", "optional"),
    ("succeeded", "failed"), ("succeeds", "fails"), ("success", "failure"), ("upgraded", "downgraded"),
    ("upgrade", "downgrade"), ("added", "removed"), ("include", "exclude"), ("included", "excluded"),
    ("minimum", "maximum"), ("always", "never"), ("often", "rarely"), ("doubles", "halves"),
    ("short", "long"), ("brief", "detailed"), ("dark", "light"), ("expired", "renewed"), ("kept", "stopped"),
    ("stayed", "dropped"), ("inside", "outside"), ("lost", "kept"), ("lock", "unlock"), ("am", "pm"),
    ("junior", "lead"), ("technical", "non-technical"), ("primary", "replica"), ("peaks", "drops"),
    ("spikes", "drops"), ("start", "end"), ("first", "last"), ("everyone", "nobody"),
    ("everything", "nothing"), ("all", "none"),
    # from the development negatives of v1–v4 (on stems, see comparator.discriminators._polarity_flips)
    ("over", "under"), ("above", "below"), ("automatically", "manually"), ("automatic", "manual"),
    ("inbound", "outbound"), ("weekday", "weekend"), ("hot", "cold"), ("soft", "hard"), ("early", "late"),
    ("helpful", "unhelpful"), ("active", "inactive"), ("shown", "hidden"), ("formal", "informal"),
    ("dedicated", "shared"), ("single", "separate"), ("precede", "follow"), ("morning", "evening"),
    ("start", "stop"), ("including", "excluding"),
)  # fmt: skip
ANTONYM_WORDS: dict[str, str] = {}
for _pos, _neg in ANTONYM_PAIRS:
    ANTONYM_WORDS.setdefault(_pos, _neg)
    ANTONYM_WORDS.setdefault(_neg, _pos)
ANTONYM_PHRASES = (
    ("turned on", "turned off"), ("switched on", "switched off"), ("scales up", "scales down"),
    ("scale up", "scale down"), ("went up", "went down"), ("go up", "go down"), ("goes up", "goes down"),
    ("opted in", "opted out"), ("during", "outside"), ("at least", "at most"), ("opt in", "opt out"),
    ("opts in", "opts out"),
)  # fmt: skip
STOPWORDS = frozenset(
    words(
        """
        a an the is are was were be been being to of in on at for by with from as and or but this
        that these those it its their there here our your my his her they them we you i he she has
        have had do does did will would shall should can could may might must so than then also just
        only very about into over under after before up down out any some each every all per via
        """
    )
)
TOKEN_RE = re.compile(r"<[a-z_]+>|[a-z0-9]+(?:[.:/_-][a-z0-9]+)*%?|%")
NUMBER_RE = re.compile(r"^\d+(?:\.\d+)?$")
CLOCK_RE = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")
VERSION_RE = re.compile(r"^v?\d+(?:\.\d+){1,3}$")
IDENTIFIER_RE = re.compile(
    r"^(?=.*\d)(?=.*[a-z])[a-z0-9]+(?:[.:/_-][a-z0-9]+)*$|^[a-z0-9]+(?:[./:][a-z0-9]+)+$"
)
ACRONYM_RE = re.compile(r"\b([A-Z]{2,}[0-9]*)\b")
CAPITALISED_WORD_RE = re.compile(r"(?<=[^.!?:;\s])(\s+)([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)*)\b")


CURRENCY_WORDS = {"dollar": "usd", "euro": "eur", "pound": "gbp"}
TZ_ALIASES = {"et": "eastern", "pt": "pacific", "ct": "central"}
FREQUENCY_UNITS = {"hour": "hour", "dai": "day", "week": "week", "month": "month", "year": "year"}


def _clock(match: re.Match[str]) -> str:
    hour = int(match[1]) % 12 + (12 if match[3] == "p" else 0)
    return f"{hour:02d}:{match[2] or '00'}"


def _number_words(text: str) -> str:
    """ "twenty five" → "25", "three hundred" → "300" (word by word, on a normalized statement)."""
    words = text.split(" ")
    out: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word in NUMBER_WORDS or (word in SCALE_WORDS and out and out[-1].isdigit()):
            value = NUMBER_WORDS.get(word, 0)
            j = i + 1
            if word in SCALE_WORDS:
                value = int(out.pop()) * SCALE_WORDS[word]
            while j < len(words):
                nxt = words[j]
                if nxt in NUMBER_WORDS and NUMBER_WORDS[nxt] < 10 and value % 10 == 0 and value >= 20:
                    value += NUMBER_WORDS[nxt]
                elif nxt in SCALE_WORDS:
                    value *= SCALE_WORDS[nxt]
                else:
                    break
                j += 1
            out.append(str(value))
            i = j
        else:
            out.append(word)
            i += 1
    return " ".join(out)


def normalize(text: str, synonyms: Mapping[str, str] | None = None) -> str:
    """The normalized statement of ``text`` (see the module doc); ``synonyms`` maps a normalized phrase
    to its canonical form (validated label synonyms → the label's name)."""
    text = unicodedata.normalize("NFKC", text).lower().replace("’", "'")
    for pattern, repl in CONTRACTIONS:
        text = re.sub(pattern, repl, text)
    text = re.sub(r"\bnot only\b", "also", text)
    text = re.sub(r"\btwice\b", "2 times", text)
    text = re.sub(r"\bhalf an hour\b|\bhalf hour\b", "30 minutes", text)
    text = re.sub(r"\bhalf a minute\b", "30 seconds", text)
    text = re.sub(r"\bhalf a day\b", "12 hours", text)
    text = re.sub(r"\ba year and a half\b|\beighteen months\b", "18 months", text)
    text = re.sub(r"\bevery other (day|week|month|year)\b", r"every 2 \1s", text)
    # "three-year", "30-day", "twenty-pound": a number and its unit written as one word
    text = re.sub(
        rf"\b(\d+|{'|'.join(NUMBER_WORDS)})-({UNIT_WORDS}|pound|pounds|euro|dollar)\b", r"\1 \2", text
    )
    text = re.sub(r"\b(?:a )?quarter of an hour\b|\bquarter hour\b", "15 minutes", text)
    text = re.sub(r"\b(\d{1,2})(?::(\d{2}))?\s*([ap])\.?m\.?(?![a-z])", _clock, text)  # 9 am → 09:00
    # "may" is a stopword (the verb) unless it names the month: "31 may", "may 31", "in may"
    text = re.sub(
        r"\b(\d{1,2}(?:st|nd|rd|th)?\s+)may\b|\bmay(?=\s+(?:\d{1,2}(?:st|nd|rd|th)?|\d{4})\b)",
        r"\1month-may",
        text,
    )
    text = re.sub(
        r"\b(in|during|since|until|till|by|from|of|early|late|mid|end of|last|next)\s+may\b",
        r"\1 month-may",
        text,
    )
    # bounds are not negations: "must not exceed 9", "no more than 3" say "at most"
    text = re.sub(
        r"\b(?:no|not) more than\b|\b(?:must|may|should|shall|can|will|does|do)\s+not exceed\b",
        "at most",
        text,
    )
    text = re.sub(r"\b(?:no|not) less than\b|\bno fewer than\b", "at least", text)
    text = re.sub(r"\b(can|could|will|would|may|might|should|must|to|does|did)\s+last\b", r"\1 lasting", text)
    # a day of the month as an ordinal: "october 4th", "the 4th of october" → "4 october"
    text = re.sub(rf"\b(?:the )?(\d{{1,2}})(?:st|nd|rd|th)(?: of)? ({MONTH_NAMES})\b", r"\1 \2", text)
    text = re.sub(rf"\b({MONTH_NAMES}) (\d{{1,2}})(?:st|nd|rd|th)\b", r"\2 \1", text)
    text = re.sub(rf"\b({MONTH_NAMES}) (\d{{1,2}})\b(?!:)", r"\2 \1", text)
    text = re.sub(r"\bnoon\b|\bmidday\b", "12:00", text)
    text = re.sub(r"\bmidnight\b", "00:00", text)
    text = re.sub(
        r"\b(?:once an?|every|each)\s+(second|minute|hour|day|week|month|year)\b", r"every 1 \1", text
    )
    text = re.sub(r"\b(hour|dai|week|month|year)ly\b", lambda m: "every 1 " + FREQUENCY_UNITS[m[1]], text)
    text = re.sub(r"\b(\d{1,2}(?:\s*[ap]m)?)\s+(et|pt|ct)\b", lambda m: f"{m[1]} {TZ_ALIASES[m[2]]}", text)
    text = re.sub(r",\s*not\b|\brather than\b", " instead of", text)  # contrast, not negation
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)  # 1,000 → 1000
    text = re.sub(
        r"([$€£]\s?)(\d+(?:\.\d+)?)k\b", lambda m: f"{m[1]}{round(float(m[2]) * 1000)}", text
    )  # $50k
    text = re.sub(r"\$\s?(\d+(?:\.\d+)?)", r"\1 usd", text)  # $49 → 49 usd
    text = re.sub(r"£\s?(\d+(?:\.\d+)?)", r"\1 gbp", text)
    text = re.sub(
        r"(\d) (dollars?|euros?|pounds?)\b", lambda m: f"{m[1]} {CURRENCY_WORDS[m[2].rstrip('s')]}", text
    )  # 49 dollars → 49 usd
    text = re.sub(r"€\s?(\d+(?:\.\d+)?)", r"\1 eur", text)
    text = re.sub(r"(\d)\s*%", r"\1 %", text)
    text = re.sub(rf"\b(\d+(?:\.\d+)?)({UNIT_WORDS})\b", r"\1 \2", text)  # 2gb → 2 gb
    text = _number_words(" ".join(TOKEN_RE.findall(text)))
    text = ARTICLE_DURATION_RE.sub(r"\1 1 \2", text)
    text = ARTICLE_OFFSET_RE.sub(r"1 \1 \2", text)
    if synonyms:
        text = _harmonized(text, synonyms)
    return re.sub(r"\s+", " ", text).strip()


def _harmonized(text: str, synonyms: Mapping[str, str]) -> str:
    """Each validated synonym phrase replaced by its label's name, in one pass over the text: the longest
    phrase wins at each place, a name already in the text stays as it is (never rewritten through a
    synonym it contains: "sepa" in "bank transfer sepa"), and replaced text is not read again; then a
    name said twice in a row is said once ("sepa direct debit" → "bank transfer sepa", not the name
    three times over as phrase-by-phrase replacement gave)."""
    pattern, table = _synonym_pattern(tuple(sorted(synonyms.items())))
    text = pattern.sub(lambda m: table[m[1]], text)
    for name in set(table.values()):
        said = re.escape(name)
        text = re.sub(rf"(?<![\w-]){said}(?: {said})+(?![\w-])", name, text)
    return text


@functools.lru_cache(maxsize=256)
def _synonym_pattern(items: tuple[tuple[str, str], ...]) -> tuple[re.Pattern[str], dict[str, str]]:
    table = {phrase: name for phrase, name in items if phrase}
    for name in {name for _, name in items if name}:
        table.setdefault(name, name)
    alternatives = "|".join(re.escape(p) for p in sorted(table, key=lambda p: (-len(p), p)))
    return re.compile(rf"(?<![\w-])({alternatives})(?![\w-])"), table


def tokens_of(statement: str) -> list[str]:
    return TOKEN_RE.findall(statement)


@dataclass(frozen=True)
class Features:
    """What the deterministic discriminators compare (computed once per fact).

    ``quantities`` are (value in base unit, dimension, number as written) with dimension ``time`` (seconds), ``data``
    (bytes), ``clock``, ``ordinal``, ``%``, a currency, or ``""`` for a bare number. ``tokens`` is the
    statement read for comparison: ordinals as ``ordinal_<n>``, "not enabled" as "disabled".
    """

    quantities: tuple[tuple[float, str, float], ...] = ()
    versions: tuple[str, ...] = ()
    identifiers: tuple[str, ...] = ()  # tokens mixing letters and digits, or dotted/slashed names
    names: tuple[str, ...] = ()  # proper names and acronyms of the original text, lowercased
    negated: tuple[str, ...] = ()  # the word each negation cue applies to
    negations: int = 0
    environment: str = ""
    tokens: tuple[str, ...] = ()

    @property
    def numbers(self) -> tuple[str, ...]:
        return tuple(f"{v:g} {d}".strip() for v, d, _ in self.quantities)


def features_of(statement: str, original: str = "") -> Features:
    tokens = tokens_of(statement)
    read: list[str] = []
    quantities: set[tuple[float, str, float]] = set()
    versions: set[str] = set()
    identifiers: set[str] = set()
    negated: list[str] = []
    negations = 0
    environment = ""
    i = 0
    while i < len(tokens):
        token = tokens[i]
        nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
        if token in NEGATION_CUES and token != "nor":
            target = next((t for t in tokens[i + 1 : i + 4] if t not in STOPWORDS), "")
            if token == "not" and target in ANTONYM_WORDS:  # "not enabled" → "disabled"
                read.append(ANTONYM_WORDS[target])
                i = tokens.index(target, i + 1) + 1
                continue
            negations += 1
            negated.append(token if token in {"nobody", "nothing", "none"} else target)
        if token in ENVIRONMENTS and not environment:
            environment = ENVIRONMENTS[token]
        ordinal = re.fullmatch(r"(\d+)(?:st|nd|rd|th)", token)
        if ordinal or token in ORDINAL_WORDS:  # a position, compared as a value ("1st" ≠ "15th")
            read.append(ORDINAL_PREFIX + (ordinal.group(1) if ordinal else ORDINAL_WORDS[token]))
            i += 1
            continue
        clock = CLOCK_RE.match(token)
        if clock:
            hours = int(clock.group(1)) + int(clock.group(2)) / 60
            quantities.add((hours, "clock", hours))
        elif VERSION_RE.match(token) and "." in token:
            versions.add(token.lstrip("v"))
        elif NUMBER_RE.match(token):
            value = float(token)
            if nxt in TIME_UNITS:
                quantities.add((round(value * TIME_UNITS[nxt], 3), "time", value))
            elif nxt in DATA_UNITS:
                quantities.add((value * DATA_UNITS[nxt], "data", value))
            elif nxt in OTHER_UNITS:
                quantities.add((value, OTHER_UNITS[nxt], value))
            else:
                quantities.add((value, "", value))
        elif IDENTIFIER_RE.match(token) and not token.startswith("<"):
            identifiers.add(token)
        read.append(token)
        i += 1
    names = {m.group(1).lower() for m in ACRONYM_RE.finditer(original)}
    names |= {m.group(2).lower() for m in CAPITALISED_WORD_RE.finditer(original)}
    return Features(
        quantities=tuple(sorted(quantities)),
        versions=tuple(sorted(versions)),
        identifiers=tuple(sorted(identifiers)),
        names=tuple(sorted(names - STOPWORDS)),
        negated=tuple(sorted(negated)),
        negations=negations,
        environment=environment,
        tokens=tuple(read),
    )


# --- canonical form --------------------------------------------------------------------------------

TEMPLATE_SLOTS: dict[str, tuple[str, ...]] = {
    InfoType.INCIDENT: ("module", "symptom", "impact", "environment"),
    InfoType.PRODUCT_CONFIG: ("module", "parameter", "value", "environment"),
    InfoType.USER_PREFERENCE: ("object", "value", "context"),
    InfoType.USER_PROFILE: ("attribute", "value"),
    InfoType.PATTERN_USAGE: ("activity", "frequency"),
    InfoType.EVENT: ("statement",),
}
CONFIG_RE = re.compile(
    r"^(?:the\s+)?(?P<parameter>[a-z0-9 ._-]{2,60}?)\s+(?:is set to|are set to|set to|is|are|=|:)\s+"
    r"(?P<value>[a-z0-9 .%:/_-]{1,60}?)(?:\s+(?:in|on|for)\s+(?P<context>[a-z0-9 ._-]{1,40}))?$"
)
PREFERENCE_RE = re.compile(
    r"(?:prefers?|wants?|likes?|would like)\s+(?:to\s+)?(?P<value>[a-z0-9 ._-]{1,60}?)"
    r"(?:\s+(?:for|in|on|when|over|rather than|instead of)\s+(?P<context>[a-z0-9 ._-]{1,60}))?$"
)
FREQUENCY_RE = re.compile(
    r"\b(?:every|each|daily|weekly|monthly|yearly|nightly|hourly|always|usually|often|rarely|never|"
    r"\d+ times? (?:a|per) \w+)\b[a-z0-9 ]{0,30}"
)
IMPACT_RE = re.compile(
    r"\b(?:all|some|only|most|many|few)\s+(?:\w+\s+){0,2}(?:customers|users|members|requests)\b"
)


def canonical_fields_for(
    statement: str, info_type: str, features: Features, module: str = ""
) -> dict[str, Any]:
    """Key/value slots of the InfoType's template, where a deterministic pattern finds them."""
    fields: dict[str, Any] = {}
    if module:
        fields["module"] = module
    if features.environment:
        fields["environment"] = features.environment
    if info_type == InfoType.PRODUCT_CONFIG:
        m = CONFIG_RE.match(statement)
        if m:
            fields["parameter"] = m.group("parameter").strip()
            fields["value"] = m.group("value").strip()
    elif info_type == InfoType.USER_PREFERENCE:
        m = PREFERENCE_RE.search(statement)
        if m:
            fields["value"] = m.group("value").strip()
            if m.group("context"):
                fields["context"] = m.group("context").strip()
    elif info_type == InfoType.INCIDENT:
        fields["symptom"] = statement
        m = IMPACT_RE.search(statement)
        if m:
            fields["impact"] = m.group().strip()
    elif info_type == InfoType.PATTERN_USAGE:
        m = FREQUENCY_RE.search(statement)
        if m:
            fields["frequency"] = m.group().strip()
    if features.numbers:
        fields["numbers"] = list(features.numbers)
    if features.versions:
        fields["versions"] = list(features.versions)
    if features.identifiers:
        fields["identifiers"] = list(features.identifiers)
    if features.negations:
        fields["negated"] = list(features.negated)
    return fields


def canonical_text_for(info_type: str, statement: str, fields: Mapping[str, Any]) -> str:
    """The strict template: ``<type> | slot: value | … | statement: <normalized statement>``."""
    parts = [info_type.lower()]
    for slot in TEMPLATE_SLOTS.get(info_type, ()):
        value = fields.get(slot)
        if value and slot != "symptom" and slot != "statement":
            parts.append(f"{slot}: {value}")
    parts.append(f"statement: {statement}")
    return " | ".join(parts)


def simhash64(statement: str) -> int:
    """64-bit SimHash over word unigrams and bigrams, as a signed integer (it fits a BigIntegerField)."""
    tokens = tokens_of(statement)
    features = tokens + [f"{a} {b}" for a, b in zip(tokens, tokens[1:], strict=False)]
    if not features:
        return 0
    weights = [0] * 64
    for feature in features:
        h = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "big")
        for bit in range(64):
            weights[bit] += 1 if h >> bit & 1 else -1
    value = sum(1 << bit for bit in range(64) if weights[bit] > 0)
    return value - (1 << 64) if value >= 1 << 63 else value


def hamming64(a: int, b: int) -> int:
    return ((a ^ b) & ((1 << 64) - 1)).bit_count()


@dataclass(frozen=True)
class Canonical:
    """A fact in canonical form: what the Info Registry stores, embeds, filters and compares."""

    info_type: str
    statement: str  # normalized statement (embedded: ``embedding_canonical_text``)
    text: str  # template-bound canonical_text (PII-free: built from the scrubbed fact)
    fields: dict[str, Any] = field(default_factory=dict)
    features: Features = field(default_factory=Features)
    simhash: int = 0
    digest: str = ""


def canonicalize(
    text: str, *, info_type: str, synonyms: Mapping[str, str] | None = None, module: str = ""
) -> Canonical:
    """The canonical form of a (PII-scrubbed) fact; ``module`` is the primary label's name."""
    statement = normalize(text, synonyms)
    features = features_of(statement, original=text)
    fields = canonical_fields_for(statement, info_type, features, module=module)
    return Canonical(
        info_type=info_type,
        statement=statement,
        text=canonical_text_for(info_type, statement, fields),
        fields=fields,
        features=features,
        simhash=simhash64(statement),
        digest=hashlib.sha256(statement.encode("utf-8")).hexdigest(),
    )


# --- §2.10.1–2.10.2: detect and classify ----------------------------------------------------------

QUESTION_START_RE = re.compile(
    r"^(?:what|which|who|whom|whose|when|where|why|how|is|are|am|was|were|do|does|did|can|could|will|"
    r"would|should|shall|may|might|have|has)\b",
    re.IGNORECASE,
)
REMEMBER_RE = re.compile(
    r"\b(?:remember|note that|keep in mind|for the record|save that|memori[sz]e)\b", re.I
)
TYPE_CUES: dict[str, re.Pattern[str]] = {
    InfoType.USER_PREFERENCE: re.compile(
        r"\b(?:prefers?|preferred|preference|likes?|wants?|would like|rather|opt(?:ed)?[- ]out|language|"
        r"timezone|time zone|notify|notifications?|contact(?:ed)? (?:me|by|via)|reply|send me|dark mode)\b"
    ),
    InfoType.INCIDENT: re.compile(
        r"\b(?:error|errors|outage|down|failed|fails|failing|failure|crash(?:ed|es)?|broken|bug|incident|"
        r"timeout|timed out|latency|5\d\d|4\d\d|killed|leak|lag|stuck|expired|lost|sev\d)\b"
    ),
    InfoType.PRODUCT_CONFIG: re.compile(
        r"\b(?:set to|configured|config|setting|enabled|disabled|turned (?:on|off)|version|plan|seats?|"
        r"limit|retention|retained|kept for|runs|runtime|region|domain|ttl|pinned|allowed|required)\b"
    ),
    InfoType.USER_PROFILE: re.compile(
        r"\b(?:my name|i am|i'm|i work|we are|our company|company|employees|role|team is|based in|"
        r"customer since|nonprofit|reseller|developer|manager|owner|admin of)\b"
    ),
    InfoType.PATTERN_USAGE: re.compile(
        r"\b(?:every|each|daily|weekly|monthly|nightly|usually|often|mostly|always|typically|peaks?|"
        r"spikes?|times a (?:day|week|month))\b"
    ),
}


def is_memorizable(text: str) -> tuple[bool, str]:
    """§2.10.1 — is there a fact to retain? (False, reason) for questions, fragments and empty text."""
    stripped = text.strip()
    words = re.findall(r"\w+", stripped)
    if len(words) < 3:
        return False, "too_short"
    if REMEMBER_RE.search(stripped):
        return True, "explicit"
    if stripped.endswith("?") or QUESTION_START_RE.match(stripped):
        return False, "question"
    return True, "statement"


def classify_info_type(text: str, default: str = InfoType.EVENT) -> str:
    """§2.10.2 — the InfoType with the most cue matches (ties in ``InfoType.ALL`` order), else ``default``."""
    lowered = text.lower()
    best, best_count = default, 0
    for info_type, cue in TYPE_CUES.items():
        count = len(cue.findall(lowered))
        if count > best_count:
            best, best_count = info_type, count
    return best
