"""The *mood* of a request: does the user ask the assistant to **act**, or **ask** for information?

A request's mood is read from English grammar alone — closed classes of function words (pronouns,
determiners, auxiliaries, interrogatives) and word order — never from the topic's vocabulary, so it
needs no list of the pack's verbs and works on any domain:

* **act** — a clause is an imperative (its first word is an open-class word, not ``-ed``/``-ing``,
  followed by an object: a determiner, a pronoun, a number or a capitalized name — "scale my app …",
  "make Sarah an admin", "…, lock it"), or a request to act: "please <verb>", "can/could/would/will
  you <verb>" (but not "… you tell/explain …"), "I want/need/would like to <verb>" (but not
  "… to know/understand …"), "let's <verb>", "go ahead and <verb>";
* **ask** — a clause opens with an interrogative word ("how much …", "what's …", "why …") or is a
  yes/no question (an auxiliary first, with or without a question mark: "is my site down", "do you
  accept paypal"), or the user wants to know ("I want to know …", "can you explain …");
* a question about the user's own doing — "how do I …", "where can we …", "how to …" — may be
  answered by the action itself or by how-to information, so it gives no mood, nor does
  "can/could/may I/we …", which is either a permission question or a polite request ("can I extend my
  trial?");
* neither, or both (a mixed request) → no mood (``None``): nothing is preferred.

The landing step (``inference.steps.landing``) uses the mood as a *preference* among the nodes it is
already allowed to land on: it never admits a node the policy, the taxonomy or the high-risk rules
exclude.
"""

from __future__ import annotations

import enum
import functools
import re

from arg_platform.vocabulary import NodeType


class Mood(enum.StrEnum):
    """What a request asks for: an action performed, or information given."""

    ACT = "act"
    ASK = "ask"


def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


# closed classes of English function words (not topic words)
_INTERROGATIVES = _word_set(
    "how what why when where which who whom whose how's what's why's when's where's who's"
)
_AUXILIARIES = _word_set(
    """am is are was were be do does did have has had can could may might must shall should will would
    isn aren wasn weren don doesn didn haven hasn hadn can't cannot couldn shouldn won wouldn"""
)
_SUBJECT_PRONOUNS = _word_set("i we you he she they it there this that")
_DETERMINERS = _word_set(
    """a an the my our your his her their its this that these those all every each some any no both
    another one two three four five six seven eight nine ten"""
)
_OBJECT_PRONOUNS = _word_set("me us you him her them it everyone everybody everything")
_OPENERS = _word_set("please pls kindly just hey hi hello ok okay so now then also and but")
_CLOSED = (
    _INTERROGATIVES
    | _AUXILIARIES
    | _SUBJECT_PRONOUNS
    | _DETERMINERS
    | _OBJECT_PRONOUNS
    | _word_set(
        """to of in on at by for with from into about over under after before as if because since until
        while not no yes or nor than my our your his her their its mine ours yours theirs i'm i've i'd
        we're we've it's there's that's what's how's let's"""
    )
)
# verbs of getting information: "can you explain …", "I want to know …" ask rather than act
_KNOWING = _word_set("tell explain describe know understand learn clarify")
_WANTING = _word_set("want need like wish")

_CLAUSE_SPLIT_RE = re.compile(r"[,;:!?.\n]+|\s(?:and|but|then|so)\s")
_WORD_RE = re.compile(r"[^\s@]+@\S+|[A-Za-z][A-Za-z']*|\d+")


def _words(clause: str) -> list[str]:
    return _WORD_RE.findall(clause)


def _is_open_verb_candidate(word: str) -> bool:
    lower = word.lower()
    if lower in _CLOSED or not lower.isalpha():
        return False
    return not (len(lower) > 4 and lower.endswith("ed")) and not (len(lower) > 5 and lower.endswith("ing"))


def _is_object_start(word: str) -> bool:
    lower = word.lower()
    return (
        lower in _DETERMINERS
        or lower in _OBJECT_PRONOUNS
        or word.isdigit()
        or "@" in word
        or (word[:1].isupper() and lower not in _CLOSED)
    )


def _clause_mood(words: list[str]) -> Mood | None:
    lower = [w.lower() for w in words]
    while lower and lower[0] in _OPENERS:
        if lower[0] in ("please", "pls", "kindly") and len(lower) > 1 and _is_open_verb_candidate(words[1]):
            return Mood.ACT  # "please reset …"
        words, lower = words[1:], lower[1:]
    if not lower:
        return None
    first = lower[0]
    if first in _INTERROGATIVES:
        if lower[1:2] == ["to"] or (len(lower) > 2 and lower[1] in _AUXILIARIES and lower[2] in ("i", "we")):
            return None  # "how do I invite …", "where can I get …": the user wants to do it themselves
        return Mood.ASK
    if first in ("can", "could", "would", "will") and len(lower) > 2 and lower[1] == "you":
        verb = lower[3] if lower[2] == "please" and len(lower) > 3 else lower[2]
        return Mood.ASK if verb in _KNOWING else Mood.ACT
    if first in ("let's", "lets"):
        return Mood.ACT
    if first == "go" and lower[1:3] == ["ahead", "and"]:
        return Mood.ACT
    if first in ("i", "we") and len(lower) > 2:
        rest = lower[1:]
        if rest[0] == "would":
            rest = rest[1:]
        if rest and rest[0] in _WANTING:
            after = rest[1:]
            if after[:1] == ["you"]:
                after = after[1:]
            if after[:1] == ["to"] and len(after) > 1:
                return Mood.ASK if after[1] in _KNOWING else Mood.ACT
    if first.startswith(("i'd", "we'd")) and len(lower) > 2 and lower[1] == "like" and lower[2] == "to":
        return Mood.ASK if len(lower) > 3 and lower[3] in _KNOWING else Mood.ACT
    if first in ("do", "don't") and (lower[1:2] == ["not"] or first == "don't"):
        return Mood.ACT  # a negative imperative: "don't charge me again"
    if first in ("can", "could", "may") and lower[1:2] in (["i"], ["we"]):
        return None  # "can I extend my trial?": a permission question or a polite request
    if first in _AUXILIARIES:
        return Mood.ASK  # a yes/no question, with or without its question mark: "is my site down"
    if len(words) > 1 and _is_open_verb_candidate(words[0]) and _is_object_start(words[1]):
        return Mood.ASK if first in _KNOWING else Mood.ACT  # "scale my app …", "tell me why …"
    return None


# the node types each mood prefers at the landing (``inference.steps.landing``)
MOOD_NODE_TYPES: dict[Mood, frozenset[str]] = {
    Mood.ACT: frozenset({NodeType.ACTION, NodeType.DIRECT_ACTION}),
    # answers, not a Shortcut: a shortcut passes through to its target, which may be an action
    Mood.ASK: frozenset({NodeType.INFO, NodeType.INFO_STABLE, NodeType.FAQ}),
}


@functools.lru_cache(maxsize=2048)
def request_mood(prompt: str) -> Mood | None:
    """The mood of a (normalized) prompt: ``Mood.ACT``, ``Mood.ASK``, or ``None`` when it has no clear
    mood or both (see the module docstring)."""
    prompt = prompt.replace("\u2019", "'")
    moods: set[Mood] = set()
    for clause in _CLAUSE_SPLIT_RE.split(prompt):
        mood = _clause_mood(_words(clause))
        if mood is not None:
            moods.add(mood)
    return moods.pop() if len(moods) == 1 else None
