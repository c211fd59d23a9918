"""Evidence close to identity: what the Info Registry needs before it merges two facts on its own.

Cosine and the discriminators tell a changed number, a swap or an antonym from a rewording; they do
not tell a sentence that *adds, drops or changes* a fact while sharing most of its words and meaning
with the other ("… as of Monday" / "… as of Monday, after the board's vote"). Until a model that reads
both statements decides (the LLM compare), an automatic merge needs the two wordings to be nearly the
same words:

* a content word (``wording._wording``: stemmed, stopwords and fillers dropped) of one side is
  *explained* when the other side has a word of its family (``_same_stem``), a WordNet synonym of it
  (``memory.lexicon``, when the lexicon is on), or when it is a *generic* word (how a statement is
  phrased, not what it states: ``wording.GENERIC_STEMS``);
* the *identity gap* of a pair is the content words of either side left unexplained;
* ``RegistryParams.identity_slack`` is how many such words an automatic merge tolerates (two by
  default: one word replaced by another, or two words on one side only).

A pair over the slack that the rules would merge is staged (UNSURE) for a reviewer instead.
"""

from __future__ import annotations

from ..canonical import Canonical
from .discriminators import _lexicon
from .params import RegistryParams
from .wording import GENERIC_STEMS, _originals, _same_stem, _wording


def identity_gap(a: Canonical, b: Canonical, params: RegistryParams) -> tuple[list[str], list[str]]:
    """(words of ``a`` unexplained by ``b``, words of ``b`` unexplained by ``a``), as written."""
    tokens_a, tokens_b = a.features.tokens, b.features.tokens
    stems_a, stems_b = _wording(tokens_a), _wording(tokens_b)
    words_a, words_b = _originals(tokens_a), _originals(tokens_b)
    lex = _lexicon(params)

    def unexplained(mine: list[str], theirs: list[str], mine_words: dict, their_words: dict) -> list[str]:
        out = []
        for stem in mine:
            if stem in GENERIC_STEMS or any(_same_stem(stem, other) for other in theirs):
                continue
            word = mine_words.get(stem, stem)
            if lex is not None and any(lex.synonyms(word, their_words.get(o, o)) for o in theirs):
                continue
            out.append(word)
        return out

    return (
        unexplained(stems_a, stems_b, words_a, words_b),
        unexplained(stems_b, stems_a, words_b, words_a),
    )


def close_to_identity(a: Canonical, b: Canonical, params: RegistryParams) -> tuple[bool, str]:
    """(whether the pair is within ``identity_slack``, the reason to stage it otherwise)."""
    only_a, only_b = identity_gap(a, b, params)
    if len(only_a) + len(only_b) <= params.identity_slack:
        return True, ""
    said = " ".join([*(f"-{w}" for w in only_a), *(f"+{w}" for w in only_b)])
    return False, f"not_identical: {said}"
