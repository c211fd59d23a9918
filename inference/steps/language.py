"""Languages: which languages a release covers, and the answer to a prompt in any other language.

* **Covered languages** of a release — the languages its label examples are written in
  (``example_languages``), computed at publication by ``release_languages_hook`` (a graph hook of
  ``ontology.releases``, so every release, draft or changeset, recomputes them) and frozen as the
  release document ``languages``; ``ontology.releases.release_store`` copies them onto
  ``Release.languages`` (the release page and the API's release representation show them). An
  example counts when it has at least ``MIN_EXAMPLE_WORDS`` words and its language is detected with
  confidence at least ``EXAMPLE_CONFIDENCE`` (two-word labels such as "invoice question" read as
  French); a language is covered when at least ``MIN_EXAMPLES_PER_LANGUAGE`` examples, and at least
  ``MIN_LANGUAGE_SHARE`` of the counted ones, are in it, and the most frequent language always is.
  A release without examples covers no language: the gate is off.
* **The language gate** (``uncovered_language``), run right after the Policy Manager's pre-check: a
  prompt *confidently* in a language the release does not cover — detected on the prompt's own text
  with confidence at least ``PROMPT_CONFIDENCE`` and at least ``MIN_PROMPT_WORDS`` words, or stated by
  the client (``context.language``) while the text is not confidently in a covered language — is
  answered with the caller's policy's *language message* (``language_outcome``): outcome REFOCUS and
  the flag ``language:<code>`` in the log, which the offline loop counts. It never reaches routing, so
  it can never land on an unrelated OutOfScope node. A short or ambiguous prompt ("facture",
  "access") is routed as before.
* **Language messages** — a policy's ``language_messages`` maps ISO 639-1 codes to texts, with the key
  ``default`` for any other language; ``{languages}`` in a text is replaced by the names of the
  release's covered languages ("English"). Without either, ``DEFAULT_LANGUAGE_MESSAGE``.

Detection is ``inference.steps.envelope.detect_language``: py3langid (BSD-3-Clause; a naive-Bayes model
shipped inside its PyPI wheel, no network), restricted to ``DETECTABLE_LANGUAGES``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from inference.contracts import Envelope, Outcome, OutcomeKind, PolicyDecision
from inference.steps.envelope import UNDETERMINED, detect_language, stated_language

EXAMPLE_CONFIDENCE = 0.8
MIN_EXAMPLE_WORDS = 3
MIN_EXAMPLES_PER_LANGUAGE = 3
MIN_LANGUAGE_SHARE = 0.02
PROMPT_CONFIDENCE = 0.8
MIN_PROMPT_WORDS = 2
LANGUAGES_DOCUMENT = "languages"
DEFAULT_MESSAGE_KEY = "default"
DEFAULT_LANGUAGE_MESSAGE = (
    "Sorry, I can only help in {languages} here. Please write your question in {languages}."
)
FLAG_PREFIX = "language:"

LANGUAGE_NAMES = {
    "ar": "Arabic", "cs": "Czech", "da": "Danish", "de": "German", "el": "Greek", "en": "English",
    "es": "Spanish", "fi": "Finnish", "fr": "French", "hu": "Hungarian", "it": "Italian",
    "ja": "Japanese", "ko": "Korean", "nl": "Dutch", "no": "Norwegian", "pl": "Polish",
    "pt": "Portuguese", "ro": "Romanian", "ru": "Russian", "sv": "Swedish", "tr": "Turkish",
    "uk": "Ukrainian", "zh": "Chinese",
}  # fmt: skip
_WORD_RE = re.compile(r"[^\W\d_]{2,}")


def example_languages(labels: Iterable[Mapping[str, Any]]) -> list[str]:
    """The languages the examples of the ACTIVE and SHADOW labels are written in, sorted by code."""
    counts: Counter[str] = Counter()
    for label in labels:
        if label.get("status") not in ("ACTIVE", "SHADOW"):
            continue
        for example in label.get("examples") or ():
            if len(_WORD_RE.findall(str(example))) < MIN_EXAMPLE_WORDS:
                continue
            language, confidence = detect_language(str(example))
            if language != UNDETERMINED and confidence >= EXAMPLE_CONFIDENCE:
                counts[language] += 1
    if not counts:
        return []
    most_frequent = counts.most_common(1)[0][0]
    floor = max(MIN_EXAMPLES_PER_LANGUAGE, MIN_LANGUAGE_SHARE * sum(counts.values()))
    return sorted(lang for lang, n in counts.items() if n >= floor or lang == most_frequent)


def release_languages_hook(arrays: Any, documents: dict[str, Any], encoder: Any) -> tuple[dict, dict]:
    """Publication step (``ontology.releases.GRAPH_HOOKS``): the release document ``languages``."""
    return {}, {LANGUAGES_DOCUMENT: example_languages(documents.get("labels") or [])}


def covered_languages(documents: Mapping[str, Any]) -> frozenset[str]:
    """A release's covered languages (empty for a release published before they were recorded)."""
    return frozenset(documents.get(LANGUAGES_DOCUMENT) or ())


def uncovered_language(envelope: Envelope, covered: frozenset[str]) -> str | None:
    """The language of the prompt when the release does not cover it and that is clear, else None."""
    if not covered:
        return None
    detected, confidence = detect_language(envelope.prompt)
    confident = (
        detected != UNDETERMINED
        and confidence >= PROMPT_CONFIDENCE
        and len(_WORD_RE.findall(envelope.prompt)) >= MIN_PROMPT_WORDS
    )
    if confident:
        return None if detected in covered else detected
    stated = stated_language(envelope.context.language) if envelope.context.language else None
    return stated if stated is not None and stated not in covered else None


def language_message(policy: Mapping[str, Any] | None, language: str, covered: Iterable[str]) -> str:
    """The policy's message for ``language`` (its ``default`` otherwise), ``{languages}`` filled in."""
    messages = (policy or {}).get("language_messages") or {}
    text = str(messages.get(language) or messages.get(DEFAULT_MESSAGE_KEY) or DEFAULT_LANGUAGE_MESSAGE)
    names = [LANGUAGE_NAMES.get(code, code) for code in sorted(covered)]
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
    return text.replace("{languages}", listed)


def language_outcome(
    language: str, *, decision: PolicyDecision, documents: Mapping[str, Any]
) -> tuple[Outcome, str, str]:
    """``(outcome, explanation, flag)`` for a prompt in ``language``, which the release does not cover."""
    policy = next((p for p in documents.get("policies") or () if p.get("key") == decision.policy_key), None)
    covered = covered_languages(documents)
    answer = language_message(policy, language, covered)
    name = LANGUAGE_NAMES.get(language, language)
    covered_names = ", ".join(LANGUAGE_NAMES.get(c, c) for c in sorted(covered))
    explanation = (
        f"Written in {name}; this release covers {covered_names}: answered with the language message."
    )
    return Outcome(kind=OutcomeKind.REFOCUS, answer=answer), explanation, f"{FLAG_PREFIX}{language}"
