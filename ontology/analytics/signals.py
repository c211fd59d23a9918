"""The structural signals of a release and their compact, deterministic JSON form.

Terms (computed over the ACTIVE nodes' undirected projection, see ``projection``):

* **community** — a group of nodes more densely tied to each other than to the rest, found by Louvain
  (greedy modularity maximization). Communities are numbered 0, 1, … in the order of their smallest
  node_id, so the numbering does not depend on the algorithm's internal order.
* **modularity** — how much denser the ties inside communities are than chance (−0.5 … 1).
* **Node Similarity** (``jaccard``) — Jaccard similarity of two nodes' neighbour sets; each node keeps
  its top-k most similar nodes.
* **SimRank** (``simrank``) — "two nodes are similar when their neighbours are similar", computed per
  community, top-k per node (see ``ontology.analytics.simrank`` for exactly what is computed).
* **degree** — the number of distinct neighbours; **pagerank** — weighted PageRank over the directed
  edges (optional).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SIGNALS_FORMAT = "arg-structural-signals/1"

Ranked = tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class StructuralSignals:
    """Communities, modularity, Node Similarity, SimRank, degree and PageRank of one graph.

    Every ACTIVE node is a key of ``communities``, ``degree``, ``jaccard`` and ``simrank`` (an empty
    tuple when it has no partner). ``jaccard`` / ``simrank`` list (node_id, score) by score descending,
    then node_id. ``computed_with`` names the backend ("networkx", "gds", or
    "gds+sparse-jaccard" when Node Similarity was the sparse product), ``seconds`` the wall time,
    ``timings`` the seconds of each stage, ``parameters`` what the computation was asked for.
    """

    communities: Mapping[str, int]
    modularity: float
    jaccard: Mapping[str, Ranked]
    simrank: Mapping[str, Ranked]
    degree: Mapping[str, int]
    pagerank: Mapping[str, float] | None
    computed_with: str
    seconds: float
    timings: Mapping[str, float] = field(default_factory=dict)
    parameters: Mapping[str, Any] = field(default_factory=dict)

    @property
    def community_count(self) -> int:
        return len(set(self.communities.values()))

    def community_members(self, community: int) -> tuple[str, ...]:
        return tuple(sorted(node_id for node_id, c in self.communities.items() if c == community))


def _flat(ranked: Ranked, index: Mapping[str, int]) -> list[int | float]:
    out: list[int | float] = []
    for node_id, score in ranked:
        out += [index[node_id], score]
    return out


def _unflat(flat: list[Any], node_ids: list[str]) -> Ranked:
    return tuple((node_ids[int(flat[i])], float(flat[i + 1])) for i in range(0, len(flat), 2))


def signals_to_json(signals: StructuralSignals) -> str:
    """Compact deterministic JSON: node ids listed once (sorted), per-node arrays aligned with them,
    partners as indices into that list (``[i1, s1, i2, s2, …]``); keys sorted, no spaces."""
    node_ids = sorted(signals.communities)
    index = {node_id: i for i, node_id in enumerate(node_ids)}
    payload = {
        "format": SIGNALS_FORMAT,
        "computed_with": signals.computed_with,
        "seconds": signals.seconds,
        "timings": dict(sorted(signals.timings.items())),
        "parameters": dict(sorted(signals.parameters.items())),
        "modularity": signals.modularity,
        "nodes": node_ids,
        "communities": [signals.communities[n] for n in node_ids],
        "degree": [signals.degree[n] for n in node_ids],
        "pagerank": None if signals.pagerank is None else [signals.pagerank[n] for n in node_ids],
        "jaccard": [_flat(signals.jaccard.get(n, ()), index) for n in node_ids],
        "simrank": [_flat(signals.simrank.get(n, ()), index) for n in node_ids],
    }
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def signals_from_json(text: str | bytes) -> StructuralSignals:
    """Inverse of ``signals_to_json`` (``signals_from_json(signals_to_json(s)) == s``)."""
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("format") != SIGNALS_FORMAT:
        raise ValueError(f"not a {SIGNALS_FORMAT} document")
    node_ids: list[str] = list(data["nodes"])
    pagerank = data["pagerank"]
    return StructuralSignals(
        communities={n: int(c) for n, c in zip(node_ids, data["communities"], strict=True)},
        modularity=float(data["modularity"]),
        jaccard={n: _unflat(flat, node_ids) for n, flat in zip(node_ids, data["jaccard"], strict=True)},
        simrank={n: _unflat(flat, node_ids) for n, flat in zip(node_ids, data["simrank"], strict=True)},
        degree={n: int(d) for n, d in zip(node_ids, data["degree"], strict=True)},
        pagerank=None if pagerank is None else {n: float(p) for n, p in zip(node_ids, pagerank, strict=True)},
        computed_with=str(data["computed_with"]),
        seconds=float(data["seconds"]),
        timings={k: float(v) for k, v in data["timings"].items()},
        parameters=dict(data["parameters"]),
    )
