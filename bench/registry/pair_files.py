"""Benchmark pair files built from hand-written *triples*, and frozen once written.

A triple is (label, InfoType, fact, true paraphrase, hard negative, kind of negative). Each gives one
true pair (fact, paraphrase) and one hard negative (fact, negative); the v1–v3 files also add one
``cross`` negative per triple (its fact against the next paraphrase of the same label). Every file is
shuffled with a fixed seed, so a source rebuilds its file byte for byte (the tests check it).
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from memory.pairs import RESOURCES_DIR

Triple = tuple[str, str, str, str, str, str]
HELDOUT_DIR = Path(__file__).resolve().parent / "pairs"


def pair_path(file_name: str) -> Path:
    """Where the pair file ``file_name`` lives: a development file (the product's training data, in
    ``memory/resources/``) or a held-out file of this benchmark (``bench/registry/pairs/``)."""
    development = RESOURCES_DIR / file_name
    return development if development.exists() else HELDOUT_DIR / file_name
PairDict = dict[str, object]


def fact_pairs(triples: Sequence[Triple]) -> list[PairDict]:
    """One true pair and one hard negative per triple, in triple order."""
    out: list[PairDict] = []
    for label, info_type, fact, paraphrase, negative, kind in triples:
        common = {"label": label, "info_type": info_type, "scope": "USER"}
        out.append({"a": fact, "b": paraphrase, "same": True, "kind": "paraphrase", **common})
        out.append({"a": fact, "b": negative, "same": False, "kind": kind, **common})
    return out


def cross_pairs(triples: Sequence[Triple]) -> list[PairDict]:
    """One ``cross`` negative per triple: its fact against the next paraphrase of its label (labels in
    sorted order; a label with a single triple gives none)."""
    by_label: dict[str, list[Triple]] = {}
    for triple in triples:
        by_label.setdefault(triple[0], []).append(triple)
    out: list[PairDict] = []
    for label, group in sorted(by_label.items()):
        for i, triple in enumerate(group):
            other = group[(i + 1) % len(group)]
            if other is not triple:
                out.append(
                    {
                        "a": triple[2],
                        "b": other[3],
                        "same": False,
                        "kind": "cross",
                        "label": label,
                        "info_type": triple[1],
                        "scope": "USER",
                    }
                )
    return out


def shuffled(pairs: list[PairDict], seed: str) -> list[PairDict]:
    random.Random(seed).shuffle(pairs)
    return pairs


def pairs_json(pairs: Sequence[PairDict]) -> str:
    """The text of a pair file."""
    return json.dumps(list(pairs), indent=1, ensure_ascii=False) + "\n"


def frozen_main(build: Callable[[], list[PairDict]], file_name: str) -> None:
    """Entry point of a held-out source: print the JSON, or with ``--write`` create the file — only
    when it does not exist yet (a held-out file is frozen once written)."""
    pairs = build()
    target = pair_path(file_name)
    if "--write" in sys.argv[1:]:
        if target.exists():
            raise SystemExit(f"{target.name} exists and is frozen; not overwritten")
        target.write_text(pairs_json(pairs), encoding="utf-8")
        print(f"{target.name}: {len(pairs)} pairs")
    else:
        sys.stdout.write(pairs_json(pairs))
