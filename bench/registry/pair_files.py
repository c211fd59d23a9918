"""Benchmark pair files built from hand-written *triples*, and frozen once written.

A triple is (label, InfoType, fact, true paraphrase, hard negative, kind of negative). Each gives one
true pair (fact, paraphrase) and one hard negative (fact, negative); the v1–v3 files also add one
``cross`` negative per triple (its fact against the next paraphrase of the same label). Every file is
shuffled with a fixed seed, so its source rebuilds it byte for byte (the tests check it).

The sources are JSON data, ``bench/registry/sources/pairs_v<N>.json``: a ``note`` (where the triples
come from) and ``files``, each pair file's name with its ``seed``, ``cross_pairs`` and ``triples`` (objects
with the fields of ``TRIPLE_FIELDS``, in file order). ``python -m bench.registry.pair_files`` checks that
every pair file is its source's output; ``--write`` also creates the files that do not exist yet. A file
that exists is never overwritten: a held-out file is frozen once written, and the development files are
what the comparator's weights record the sha256 of.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from memory.pairs import RESOURCES_DIR

Triple = tuple[str, str, str, str, str, str]
PairDict = dict[str, object]
TRIPLE_FIELDS = ("label", "info_type", "fact", "paraphrase", "negative", "kind")
HELDOUT_DIR = Path(__file__).resolve().parent / "pairs"
SOURCES_DIR = Path(__file__).resolve().parent / "sources"


def pair_path(file_name: str) -> Path:
    """Where the pair file ``file_name`` lives: a development file (the product's training data, in
    ``memory/resources/``) or a held-out file of this benchmark (``bench/registry/pairs/``)."""
    development = RESOURCES_DIR / file_name
    return development if development.exists() else HELDOUT_DIR / file_name


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


@dataclass(frozen=True)
class PairFileSource:
    """One pair file as its source describes it: the triples, in order, and how they become pairs."""

    name: str
    seed: str
    cross_pairs: bool
    triples: tuple[Triple, ...]

    def pairs(self) -> list[PairDict]:
        """The file's pairs: per triple a true pair and a hard negative (and the cross negatives when
        the file has them), shuffled with the file's seed."""
        pairs = fact_pairs(self.triples) + (cross_pairs(self.triples) if self.cross_pairs else [])
        return shuffled(pairs, self.seed)


def _triple(where: str, item: object) -> Triple:
    if not isinstance(item, dict) or tuple(item) != TRIPLE_FIELDS:
        raise ValueError(f"{where}: a triple is an object with the fields {', '.join(TRIPLE_FIELDS)}")
    values = tuple(item.values())
    if not all(isinstance(value, str) and value for value in values):
        raise ValueError(f"{where}: every field of a triple is a non-empty string")
    label, info_type, fact, paraphrase, negative, kind = values
    return label, info_type, fact, paraphrase, negative, kind


def pair_file_sources(sources_dir: Path = SOURCES_DIR) -> list[PairFileSource]:
    """Every pair file described by the JSON sources in ``sources_dir``, in source order."""
    out: list[PairFileSource] = []
    for path in sorted(sources_dir.glob("pairs_v*.json")):
        source = json.loads(path.read_text(encoding="utf-8"))
        for name, spec in source["files"].items():
            if any(known.name == name for known in out):
                raise ValueError(f"{path.name}: {name} is described by another source too")
            triples = tuple(
                _triple(f"{path.name}: {name}: triple {i}", t) for i, t in enumerate(spec["triples"])
            )
            out.append(PairFileSource(name, str(spec["seed"]), bool(spec["cross_pairs"]), triples))
    return out


def pair_files_check(*, write: bool = False, sources_dir: Path = SOURCES_DIR) -> list[str]:
    """Rebuild every pair file from its source and compare it with the file on disk; with ``write``,
    create the files that do not exist yet. Returns one line per file; raises ``SystemExit`` listing
    the files that are missing (without ``write``) or differ from their source (never overwritten)."""
    report: list[str] = []
    problems: list[str] = []
    for source in pair_file_sources(sources_dir):
        pairs = source.pairs()
        text = pairs_json(pairs)
        target = pair_path(source.name)
        if not target.exists():
            if write:
                target.write_text(text, encoding="utf-8")
                report.append(f"{source.name}: {len(pairs)} pairs, written")
            else:
                problems.append(f"{source.name}: missing (--write creates it)")
        elif target.read_text(encoding="utf-8") == text:
            report.append(f"{source.name}: {len(pairs)} pairs, rebuilt byte for byte")
        else:
            problems.append(f"{source.name}: differs from its source; the file is frozen and not overwritten")
    if problems:
        raise SystemExit("\n".join(report + problems))
    return report


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.registry.pair_files",
        description="Check that every pair file is rebuilt byte for byte from its JSON source.",
    )
    parser.add_argument("--write", action="store_true", help="also create the pair files that do not exist")
    args = parser.parse_args(argv)
    print("\n".join(pair_files_check(write=args.write)))


if __name__ == "__main__":
    main()
