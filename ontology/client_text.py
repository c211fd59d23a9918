"""Does a node's client text read like instructions for staff?

A node's ``chunk`` is its *client text*: answers show it to the asker. Text written for the support
agent ("Ask which plan the customer wants…", "Check the customer's region…") belongs in the node's
``staff_notes``. ``staff_voice_sentences`` finds the sentences of a text that read like such
instructions, deterministically and without a model:

* a sentence is taken in its main clause — a leading "If …, " / "When …, " (and the like) clause is
  skipped — and is an *imperative* when that clause opens with a verb of ``IMPERATIVE_VERBS``
  (optionally after "please", "first", "then", "always", "never", "do not");
* a sentence that speaks to the reader ("you", "your") is addressed to the asker, so it is never
  flagged ("Ask your organization's Owner to invite you");
* an imperative is flagged when its verb only makes sense said to staff (``STAFF_VERBS``: "ask",
  "offer", "escalate", "determine", …) or when the sentence speaks of the asker in the third person
  ("the customer", "the user", "the requester", "their", …).

The result is a warning for curators, never a refusal: the heuristic can be wrong both ways.
"""

from __future__ import annotations

import re

IMPERATIVE_VERBS = frozenset(
    [
        "ask",
        "check",
        "confirm",
        "verify",
        "tell",
        "offer",
        "escalate",
        "collect",
        "gather",
        "look",
        "explain",
        "remind",
        "advise",
        "direct",
        "route",
        "refer",
        "open",
        "create",
        "send",
        "suggest",
        "point",
        "make",
        "ensure",
        "inform",
        "walk",
        "guide",
        "request",
        "record",
        "note",
        "log",
        "flag",
        "hand",
        "transfer",
        "determine",
        "decide",
        "treat",
        "use",
        "share",
        "read",
        "find",
        "get",
        "give",
        "let",
        "help",
        "reassure",
        "apologize",
        "apologise",
        "triage",
        "contain",
        "lock",
        "revoke",
        "investigate",
        "identify",
        "review",
        "search",
        "provide",
        "follow",
        "remove",
        "reset",
        "resend",
        "issue",
        "process",
        "approve",
        "deny",
        "refuse",
        "avoid",
        "try",
        "encourage",
        "instruct",
        "prompt",
        "clarify",
        "capture",
        "warn",
        "notify",
        "mention",
        "recommend",
        "propose",
        "say",
        "reply",
        "respond",
        "answer",
        "call",
        "contact",
        "email",
        "assign",
        "attach",
    ]
)
# verbs that, as an imperative not addressed to the reader, are said to the one answering
STAFF_VERBS = frozenset(
    [
        "ask",
        "offer",
        "escalate",
        "determine",
        "decide",
        "triage",
        "route",
        "reassure",
        "remind",
        "advise",
        "apologize",
        "apologise",
        "inform",
        "instruct",
        "encourage",
        "clarify",
        "reply",
        "respond",
        "answer",
        "assign",
    ]
)
_OPENERS = frozenset({"please", "first", "then", "always", "never", "also", "next", "finally", "just"})
_SUBORDINATORS = frozenset(
    {"if", "when", "whenever", "once", "unless", "after", "before", "where", "while", "for", "otherwise"}
)
_THIRD_PERSON = re.compile(
    r"\b(?:the|a|this|that) (?:customer|user|requester|caller|client|account holder|asker|member|person)s?\b"
    r"|\b(?:customer|user|requester|caller|client)'s\b|\b(?:they|them|their|theirs)\b",
    re.IGNORECASE,
)
_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|yourself)\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'“(A-Z0-9])")
_WORD = re.compile(r"[A-Za-z']+")


def _sentences(text: str) -> list[str]:
    parts: list[str] = []
    for block in text.split("\n"):
        parts += [p.strip() for p in _SENTENCE_END.split(block) if p.strip()]
    return parts


def _main_clause(sentence: str) -> str:
    """The sentence without a leading subordinate clause ("If the card expired, send…" → "send…")."""
    words = _WORD.findall(sentence[:20])
    if words and words[0].lower() in _SUBORDINATORS and "," in sentence:
        return sentence.split(",", 1)[1]
    return sentence


def _imperative_verb(clause: str) -> str | None:
    words = [w.lower() for w in _WORD.findall(clause)[:4]]
    while words and (words[0] in _OPENERS or words[0] in {"do", "don't", "not"}):
        words.pop(0)
    return words[0] if words and words[0] in IMPERATIVE_VERBS else None


def is_staff_voice(sentence: str) -> bool:
    """Whether one sentence reads like an instruction to staff (see the module doc)."""
    if _SECOND_PERSON.search(sentence):
        return False
    verb = _imperative_verb(_main_clause(sentence))
    if verb is None:
        return False
    return verb in STAFF_VERBS or bool(_THIRD_PERSON.search(sentence))


def staff_voice_sentences(text: str) -> list[str]:
    """The sentences of ``text`` that read like instructions to staff, in order."""
    return [s for s in _sentences(text or "") if is_staff_voice(s)]
