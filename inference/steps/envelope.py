"""Step 1 of the online loop (ARG §2.1.1): deterministic normalization, language detection and the
request envelope every later step reads.

Normalization is two-level:

* ``normalize_prompt`` — what the envelope keeps as ``prompt``: Unicode NFKC, control and zero-width
  (format) characters removed, every run of whitespace collapsed to one space, case kept;
* ``normalized_for_matching`` — what the Policy Manager and the lexical step match against: the
  prompt form, case-folded, accents folded (``é`` → ``e``), typographic quotes and dashes made ASCII.
  ``matching_tokens`` splits it into content tokens (stop words dropped, plurals folded).

Language detection uses py3langid (a naive-Bayes model shipped inside the PyPI wheel; no network),
restricted to ``DETECTABLE_LANGUAGES``: on short support prompts the restriction cuts the confusions
with rare languages (Pidgin, Latin, Walloon…) that the full 97-language model makes. A detection
weaker than ``LANGUAGE_MIN_CONFIDENCE``, a text with fewer than ``LANGUAGE_MIN_LETTERS`` letters, or
no linguistic content gives ``"und"`` with confidence 0. A language the client states in the context
is used as is (confidence 1.0) when the full model knows it, and refused otherwise.

Bad input raises ``RuleViolation`` (the API answers 400) naming one rule per problem:

==============================  ================================================================
``request.prompt_type``         the prompt is not text
``request.prompt_binary``       NUL bytes, lone surrogates or mostly control characters
``request.prompt_size``         longer than ``MAX_PROMPT_CHARS`` as sent or after normalization
``request.prompt_empty``        nothing left after normalization
``request.role_unknown``        the role is not one of the release's roles
``request.role_forbidden``      the context names another role than the caller's own, or any role
                                when the caller's role is fixed and it has none
``request.role_required``       the release defines roles and the request resolves none
``request.typology_unknown``    the typology hint is not one of the release's typologies
``request.typology_forbidden``  the typology's access constraints exclude the role or the channel
``request.language_unknown``    the stated language is not a language code the detector knows
``request.product_unknown``     the release declares products (``inference.steps.products``) and
                                ``context.product`` is not one of them
==============================  ================================================================
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING

from arg_platform.errors import ViolationCollector
from inference.contracts import Envelope, RequestContext
from inference.steps.mood import request_mood

if TYPE_CHECKING:
    from py3langid.langid import LanguageIdentifier

    from inference.runtime import ReleaseRuntime

# The one prompt length limit, in characters, of the API schema, the request serializer
# (``inference.request_body``), this envelope and the browser's "Try a request" form: checked on the
# prompt as sent (before normalization, which bounds the work done on hostile input) and again after it
# (NFKC can lengthen a text: "ﬁ" → "fi").
MAX_PROMPT_CHARS = 4000
MAX_RAW_PROMPT_CHARS = MAX_PROMPT_CHARS
BINARY_CONTROL_RATIO = 0.1

DETECTABLE_LANGUAGES: tuple[str, ...] = (
    "ar", "cs", "da", "de", "el", "en", "es", "fi", "fr", "hu", "it", "ja", "ko",
    "nl", "no", "pl", "pt", "ro", "ru", "sv", "tr", "uk", "zh",
)  # fmt: skip
LANGUAGE_MIN_CONFIDENCE = 0.5
LANGUAGE_MIN_LETTERS = 3
UNDETERMINED = "und"
MOOD_LANGUAGES = frozenset({"en", UNDETERMINED})  # languages whose grammar ``request_mood`` reads

# --- normalization ---------------------------------------------------------------------------------

_ASCII_CONTROL_RE = re.compile(r"[\x00-\x08\x0e-\x1b\x7f]")
_TYPOGRAPHIC = str.maketrans(
    {
        "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u02bc": "'", "\u2032": "'",
        "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
        "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2212": "-",
    }
)  # fmt: skip


def _strip_invisible(text: str) -> str:
    """Drop control characters (whitespace controls become spaces) and format characters (Cf:
    zero-width space/joiners, BOM, soft hyphen, bidi controls) — the usual way to hide a word."""
    if text.isascii():
        return _ASCII_CONTROL_RE.sub("", text)
    out = []
    for ch in text:
        if ch.isspace():
            out.append(" ")
        elif unicodedata.category(ch) not in ("Cc", "Cf"):
            out.append(ch)
    return "".join(out)


def normalize_prompt(text: str) -> str:
    """NFKC, invisible characters removed, whitespace collapsed and trimmed; case is kept."""
    # invisible characters go first so that NFKC can compose what they separated
    return " ".join(unicodedata.normalize("NFKC", _strip_invisible(text)).split())


@functools.lru_cache(maxsize=2048)
def normalized_for_matching(text: str) -> str:
    """The form policy rules and the lexical index match against: ``normalize_prompt`` + case fold
    + accents folded + typographic quotes/dashes as ASCII. Idempotent."""
    text = normalize_prompt(text).casefold()
    if not text.isascii():
        text = text.translate(_TYPOGRAPHIC)
        decomposed = unicodedata.normalize("NFD", text)
        text = unicodedata.normalize(
            "NFC", "".join(ch for ch in decomposed if unicodedata.category(ch) != "Mn")
        )
    return text


STOP_WORDS = frozenset(
    """
    a about above after against all am an and any are aren as at be because been before being below
    between both but by can cannot could couldn did didn do does doesn doing don during each few for
    from further had hadn has hasn have haven having he her here hers herself him himself his how i if
    in into is isn it its itself just let ll me more most my myself no nor not now of on once only or
    other our ours ourselves own re same she should shouldn so some such than that the their theirs them
    themselves then there these they this those through to too until ve very was wasn we were weren what
    when where which while who whom why will with won would wouldn you your yours yourself yourselves
    also anyone anything hello hi hey ok okay please pls thank thanks get got need needs want wants
    wanted like would could tell know help make made way thing things something still de la le les des
    du et un une est pour der die das und ist ein eine el los las en y por para
    """.split()  # noqa: SIM905 - a word list reads better as text
)
_TOKEN_RE = re.compile(r"[^\W_]+")


def _fold_plural(token: str) -> str:
    if len(token) > 4 and token.endswith("ies"):
        return token[:-3] + "y"
    if token.endswith("sses"):
        return token[:-2]
    if len(token) > 3 and token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    return token


@functools.lru_cache(maxsize=2048)
def matching_tokens(text: str) -> tuple[str, ...]:
    """Content tokens of a text for lexical matching: normalized for matching, split on anything
    that is not a letter or digit, one-character tokens and stop words dropped, plurals folded."""
    return tuple(
        _fold_plural(token)
        for token in _TOKEN_RE.findall(normalized_for_matching(text))
        if len(token) > 1 and token not in STOP_WORDS
    )


def is_binary(text: str) -> bool:
    """NUL characters, lone surrogates, or more than 10 % control characters other than whitespace."""
    if "\x00" in text:
        return True
    controls = 0
    for ch in text:
        category = unicodedata.category(ch)
        if category == "Cs":
            return True
        if category == "Cc" and not ch.isspace():
            controls += 1
    return controls > BINARY_CONTROL_RATIO * len(text)


# --- language --------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _Detector:
    identifier: LanguageIdentifier
    known: frozenset[str]  # every language of the full model (what a client may state)


@functools.cache
def _detector() -> _Detector:
    """Load the model shipped in the py3langid wheel once per process (~1.5 s)."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    known = frozenset(identifier.labels) - {"zxx"}  # zxx = "no linguistic content"
    identifier.set_languages(list(DETECTABLE_LANGUAGES))
    return _Detector(identifier, known)


def language_detector_warm_up() -> None:
    """Load the language model now (process start, runtime build) rather than on a request."""
    _detector()


def detect_language(text: str) -> tuple[str, float]:
    """``(ISO 639-1 code, confidence)``, or ``("und", 0.0)`` when too short or undetermined."""
    if sum(1 for ch in text if ch.isalpha()) < LANGUAGE_MIN_LETTERS:
        return UNDETERMINED, 0.0
    language, confidence = _detector().identifier.classify(text)
    if confidence < LANGUAGE_MIN_CONFIDENCE:
        return UNDETERMINED, 0.0
    return str(language), round(float(confidence), 4)


_LANGUAGE_TAG_RE = re.compile(r"^([A-Za-z]{2,3})(?:[-_][A-Za-z0-9]{1,8})*$")


def stated_language(tag: str) -> str | None:
    """The primary language of a client-stated tag (``"fr-CA"`` → ``"fr"``), or None if unknown."""
    match = _LANGUAGE_TAG_RE.match(tag.strip())
    if match is None:
        return None
    primary = match.group(1).lower()
    return primary if primary in _detector().known else None


# --- the envelope ----------------------------------------------------------------------------------


def build_envelope(
    *,
    request_id: str,
    project_id: int,
    prompt: str,
    context: RequestContext,
    default_role: str | None,
    default_typology: str | None,
    runtime: ReleaseRuntime,
    role_fixed: bool = False,
) -> Envelope:
    """Validate and normalize one request into its envelope (every broken rule reported at once).

    ``default_role`` is the caller's own role (the API token's). A role named in the context must be
    that role when the caller has one — a client cannot pick a more permissive policy. A caller
    without a role may name any of the release's roles unless its role is *fixed* (``role_fixed``:
    a client token, or a person who may not curate the project's policies), in which case it may name
    none. The typology is the context's hint when given
    (checked against the release and the typology's access constraints), else ``default_typology``,
    else the role's default typology, else the release's default typology, when the release has it.
    """
    errors = ViolationCollector()
    normalized = ""
    if not isinstance(prompt, str):
        errors.add("request.prompt_type", "the prompt must be text", "prompt")
    elif is_binary(prompt):
        errors.add(
            "request.prompt_binary", "the prompt contains binary data (NUL or control bytes)", "prompt"
        )
    elif len(prompt) > MAX_RAW_PROMPT_CHARS:
        errors.add(
            "request.prompt_size",
            f"the prompt is {len(prompt)} characters long; at most {MAX_PROMPT_CHARS} are accepted",
            "prompt",
        )
    else:
        normalized = normalize_prompt(prompt)
        if not normalized:
            errors.add("request.prompt_empty", "the prompt is empty", "prompt")
        elif len(normalized) > MAX_PROMPT_CHARS:
            errors.add(
                "request.prompt_size",
                f"the prompt is {len(normalized)} characters long; at most {MAX_PROMPT_CHARS} are accepted",
                "prompt",
            )
    role_key = _resolve_role(errors, context, default_role, runtime, role_fixed=role_fixed)
    typology_key = _resolve_typology(errors, context, role_key, default_typology, runtime)
    if context.product and runtime.products and context.product not in runtime.products:
        errors.add(
            "request.product_unknown",
            f"unknown product {context.product!r}; this release knows {', '.join(sorted(runtime.products))}",
            "product",
        )
    language, confidence = UNDETERMINED, 0.0
    if context.language:
        stated = stated_language(context.language)
        if stated is None:
            errors.add("request.language_unknown", f"unknown language {context.language!r}", "language")
        else:
            language, confidence = stated, 1.0
    errors.raise_if_any()
    if not context.language:
        language, confidence = detect_language(normalized)
    # the mood is read from English grammar; a prompt in another language has none
    mood = request_mood(normalized) if language in MOOD_LANGUAGES else None
    return Envelope(
        request_id=request_id,
        project_id=project_id,
        prompt_raw=prompt,
        prompt=normalized,
        language=language,
        language_confidence=confidence,
        context=context,
        role_key=role_key,
        typology_key=typology_key,
        mood=mood,
    )


def _resolve_role(
    errors: ViolationCollector,
    context: RequestContext,
    default_role: str | None,
    runtime: ReleaseRuntime,
    *,
    role_fixed: bool,
) -> str | None:
    if default_role and context.role and context.role != default_role:
        errors.add(
            "request.role_forbidden",
            f"this client runs as role {default_role!r} and cannot act as {context.role!r}",
            "role",
        )
        return None
    if role_fixed and not default_role and context.role:
        errors.add(
            "request.role_forbidden",
            f"this client's token carries no role, so it cannot act as {context.role!r}; "
            "an admin gives a token its role when creating it",
            "role",
        )
        return None
    role_key = context.role or default_role
    if role_key is None:
        if runtime.roles:
            errors.add(
                "request.role_required", "a role is required: the release governs requests by role", "role"
            )
        return None
    if role_key not in runtime.roles:
        errors.add("request.role_unknown", f"unknown role {role_key!r}", "role")
        return None
    return role_key


def _resolve_typology(
    errors: ViolationCollector,
    context: RequestContext,
    role_key: str | None,
    default_typology: str | None,
    runtime: ReleaseRuntime,
) -> str | None:
    if context.typology:
        typology = runtime.typologies.get(context.typology)
        if typology is None:
            errors.add("request.typology_unknown", f"unknown typology {context.typology!r}", "typology")
            return None
        access = typology.get("access_constraints") or {}
        roles, channels = access.get("roles") or [], access.get("channels") or []
        if role_key is not None and roles and role_key not in roles:
            errors.add(
                "request.typology_forbidden",
                f"typology {context.typology!r} is not available to role {role_key!r}",
                "typology",
            )
        if context.channel and channels and context.channel not in channels:
            errors.add(
                "request.typology_forbidden",
                f"typology {context.typology!r} is not available on channel {context.channel!r}",
                "typology",
            )
        return context.typology
    role = runtime.roles.get(role_key) if role_key else None
    for candidate in (default_typology, role.default_typology if role else None, runtime.default_typology):
        if candidate and candidate in runtime.typologies:
            return candidate
    return None
