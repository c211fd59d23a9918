"""A seeded synthetic ontology graph generator for tests and benchmarks (issue 4).

``generate_graph(nodes=..., seed=...)`` builds, with vectorized numpy, a graph that looks like a real
project's ontology at any size (a 100k-node / 500k-edge graph takes a few seconds):

* **Taxonomy** — ``clusters`` top-level domains (keys ``c000``…) and a forest of labels per cluster
  (LabelIDs ``L00001``…, in the knowledge-pack label shape) whose trees are at least three levels
  deep: label ``j`` of a cluster with ``r`` roots hangs under label ``(j - r) // 3`` (a ternary forest).
  Each cluster owns a small vocabulary of made-up words; a label is named by two of them and carries a
  few example utterances built from them.
* **Nodes** — ids ``N000000``… (fixed width, so string order = numeric order), typed with realistic
  proportions (mostly Info / FAQ / InfoStable / Action; some Decision, Clarify, Shortcut, DirectAction,
  MemoryRead, MemoryWrite; exactly one OutOfScope; every one of the 11 types occurs). Each node is
  attached to a primary label, sometimes to a second label of the same cluster, and to that cluster.
  Title and chunk are drawn from the label's words, the cluster's vocabulary and a few common words,
  so lexical (BM25) and embedding retrieval both have signal. Actions carry a handler, a parameter and
  a precondition, so the graph passes the graph validator and imports through the real pack importer.
* **Edges** — ≈ ``edges_per_node`` out-edges per node (Poisson out-degrees; exactly
  ``round(nodes * edges_per_node)`` edges when enough distinct pairs exist): mostly to a node of the
  same primary label (the communities analytics should find), then of the same cluster, some across
  clusters, and a share aimed at **hubs** (``hub_fraction`` of the nodes, which therefore collect many
  in-edges — the anti-hub pruning case). At most one edge per ordered pair, hence no duplicate
  (source, target, type); no self loops; types follow the target (CLARIFIES into Clarify,
  READS_MEMORY / WRITES_MEMORY into memory nodes, SHORTCUT_TO into Shortcut) or are drawn from the
  other edge types; weights in [0.05, 1] (edges inside a label in [0.5, 1]).
* **Embeddings** (optional, ``embedding_dim``) — NOT computed with the real sentence embedder (far too
  slow for 100k nodes): a seeded random unit centroid per cluster + an offset per label + per-node
  noise, L2-normalized, float32. Row ``i`` belongs to ``graph.nodes[i]``. Nodes of one label are close,
  of one cluster fairly close, of different clusters near-orthogonal — the geometry retrieval needs.

The same arguments always give an identical ``GraphData`` (and identical embeddings).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from arg_platform.vocabulary import EdgeType, NodeStatus, NodeType, RiskLevel
from ontology.store.port import EdgeData, GraphData, NodeData, ParameterSpec

# Share of each node type (OutOfScope is placed once, by hand).
TYPE_SHARES: tuple[tuple[NodeType, float], ...] = (
    (NodeType.INFO, 0.30),
    (NodeType.FAQ, 0.16),
    (NodeType.INFO_STABLE, 0.13),
    (NodeType.ACTION, 0.14),
    (NodeType.DECISION, 0.07),
    (NodeType.CLARIFY, 0.05),
    (NodeType.SHORTCUT, 0.04),
    (NodeType.DIRECT_ACTION, 0.04),
    (NodeType.MEMORY_READ, 0.035),
    (NodeType.MEMORY_WRITE, 0.035),
)
TYPES: tuple[NodeType, ...] = (*(t for t, _ in TYPE_SHARES), NodeType.OUT_OF_SCOPE)
TITLE_PREFIX: dict[NodeType, str] = {
    NodeType.INFO: "About",
    NodeType.FAQ: "FAQ:",
    NodeType.INFO_STABLE: "Reference:",
    NodeType.ACTION: "Run",
    NodeType.DECISION: "Choose",
    NodeType.CLARIFY: "Which",
    NodeType.SHORTCUT: "Quick",
    NodeType.DIRECT_ACTION: "Instantly",
    NodeType.MEMORY_READ: "Recall",
    NodeType.MEMORY_WRITE: "Remember",
    NodeType.OUT_OF_SCOPE: "Out of scope:",
}
# Where an edge goes: same primary label, same cluster, any node, a hub (shares sum to 1).
TARGET_SHARES = (0.52, 0.28, 0.08, 0.12)
# Edge types of an edge whose target does not fix its type.
FREE_EDGE_TYPES: tuple[tuple[EdgeType, float], ...] = (
    (EdgeType.LEADS_TO, 0.34),
    (EdgeType.ELABORATES, 0.2),
    (EdgeType.RELATED_TO, 0.16),
    (EdgeType.REQUIRES, 0.12),
    (EdgeType.ALTERNATIVE_TO, 0.1),
    (EdgeType.ESCALATES_TO, 0.08),
)
TARGET_EDGE_TYPE: dict[NodeType, EdgeType] = {
    NodeType.CLARIFY: EdgeType.CLARIFIES,
    NodeType.MEMORY_READ: EdgeType.READS_MEMORY,
    NodeType.MEMORY_WRITE: EdgeType.WRITES_MEMORY,
    NodeType.SHORTCUT: EdgeType.SHORTCUT_TO,
}
EDGE_TYPE_ORDER: tuple[EdgeType, ...] = tuple(EdgeType)
_COMMON_TEXT = (
    "how do i my the to can where is not working what why change find help "
    "need a for with account request update status issue cancel check set up get error new"
)
COMMON_WORDS: tuple[str, ...] = tuple(_COMMON_TEXT.split())
WORDS_PER_CLUSTER = 40
CHUNK_WORDS = (18, 34)
NODES_PER_LABEL = 20
_CONSONANTS = "bcdfghklmnprstvz"
_VOWELS = "aeiou"


@dataclass(frozen=True)
class SyntheticGraph:
    """A generated graph and the taxonomy it implies.

    ``clusters`` are (key, name) pairs; ``labels`` are knowledge-pack label mappings (id, name,
    cluster, parent, status, description, synonyms, examples); ``hubs`` are the node ids chosen as hubs;
    ``embeddings`` (optional) is a float32 unit-norm matrix whose row ``i`` is ``graph.nodes[i]``.
    """

    graph: GraphData
    clusters: tuple[tuple[str, str], ...]
    labels: tuple[dict[str, Any], ...]
    hubs: tuple[str, ...]
    seed: int
    embeddings: np.ndarray | None = field(default=None, compare=False, repr=False)


def _pseudo_words(rng: np.random.Generator, count: int, taken: set[str]) -> list[str]:
    """``count`` new made-up words (2–3 syllables), none of them in ``taken`` (which is updated)."""
    out: list[str] = []
    while len(out) < count:
        syllables = int(rng.integers(2, 4))
        cons = rng.integers(0, len(_CONSONANTS), size=syllables)
        vows = rng.integers(0, len(_VOWELS), size=syllables)
        word = "".join(_CONSONANTS[c] + _VOWELS[v] for c, v in zip(cons, vows, strict=True))
        if word not in taken:
            taken.add(word)
            out.append(word)
    return out


def _default_clusters(nodes: int) -> int:
    return max(2, round(nodes**0.5 / 4))


def _taxonomy(
    rng: np.random.Generator, clusters: int, labels_per_cluster: np.ndarray
) -> tuple[list[tuple[str, str]], list[dict[str, Any]], list[list[str]], np.ndarray, np.ndarray]:
    """Clusters, labels, per-cluster vocabularies, each label's cluster and its two word indices."""
    taken = set(COMMON_WORDS)
    vocab = [_pseudo_words(rng, WORDS_PER_CLUSTER, taken) for _ in range(clusters)]
    cluster_rows = [(f"c{c:03d}", f"{vocab[c][0].title()} {vocab[c][1]}") for c in range(clusters)]
    labels: list[dict[str, Any]] = []
    label_cluster: list[int] = []
    label_words: list[tuple[int, int]] = []
    for c in range(clusters):
        count = int(labels_per_cluster[c])
        roots = max(1, min(4, count // 13))
        first = len(labels)
        used: set[tuple[str | None, str]] = set()
        pairs = rng.integers(0, WORDS_PER_CLUSTER, size=(count, 2))
        pairs[:, 1] = (pairs[:, 0] + 1 + pairs[:, 1] % (WORDS_PER_CLUSTER - 1)) % WORDS_PER_CLUSTER
        for j in range(count):
            parent = None if j < roots else labels[first + (j - roots) // 3]["id"]
            a, b = int(pairs[j, 0]), int(pairs[j, 1])
            name = f"{vocab[c][a].title()} {vocab[c][b]}"
            if (parent, name.casefold()) in used:
                name = f"{name} {j}"
            used.add((parent, name.casefold()))
            wa, wb = vocab[c][a], vocab[c][b]
            labels.append(
                {
                    "id": f"L{len(labels) + 1:05d}",
                    "name": name,
                    "cluster": cluster_rows[c][0],
                    "parent": parent,
                    "status": "ACTIVE",
                    "description": f"Synthetic label about {wa} {wb}.",
                    "synonyms": [f"{wb} {wa}"],
                    "examples": [
                        f"how do i {wa} my {wb}",
                        f"{wb} {wa} not working",
                        f"where can i find {wa} {wb}",
                    ],
                }
            )
            label_cluster.append(c)
            label_words.append((c * WORDS_PER_CLUSTER + a, c * WORDS_PER_CLUSTER + b))
    return (
        cluster_rows,
        labels,
        vocab,
        np.asarray(label_cluster, dtype=np.int64),
        np.asarray(label_words, dtype=np.int64),
    )


def _node_types(rng: np.random.Generator, nodes: int) -> np.ndarray:
    """Indices into ``TYPES``: drawn by share, then one node of each type placed (one OutOfScope)."""
    shares = np.array([s for _, s in TYPE_SHARES])
    types = rng.choice(len(TYPE_SHARES), size=nodes, p=shares / shares.sum())
    placed = rng.choice(nodes, size=len(TYPES), replace=False)
    types[placed] = np.arange(len(TYPES))
    return types


def _grouped(keys: np.ndarray, groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Members of each group contiguous: (order, start, size) so group g is order[start[g]:start[g]+size[g]]."""
    order = np.argsort(keys, kind="stable")
    size = np.bincount(keys, minlength=groups)
    start = np.concatenate(([0], np.cumsum(size)[:-1]))
    return order, start, size


def _draw_edges(
    rng: np.random.Generator,
    mean_out: float,
    *,
    primary: np.ndarray,
    node_cluster: np.ndarray,
    groups: tuple[tuple[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]],
    hubs: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Candidate (source, target, kind) edges, Poisson(``mean_out``) per node, self loops dropped."""
    nodes = primary.size
    source = np.repeat(np.arange(nodes, dtype=np.int64), rng.poisson(mean_out, size=nodes))
    total = source.size
    kind = rng.choice(4, size=total, p=np.asarray(TARGET_SHARES))
    pick = rng.random(total)
    target = (pick * nodes).astype(np.int64)  # kind 2: any node
    for k, keys, (order, start, size) in ((0, primary, groups[0]), (1, node_cluster, groups[1])):
        g = keys[source]
        target_k = order[np.minimum(start[g] + (pick * size[g]).astype(np.int64), nodes - 1)]
        target = np.where(kind == k, target_k, target)
    # Hubs are not equally popular: a Zipf-like preference (weight 1/rank^0.7) over the hubs.
    hub_p = 1.0 / np.arange(1, hubs.size + 1) ** 0.7
    target = np.where(kind == 3, hubs[rng.choice(hubs.size, size=total, p=hub_p / hub_p.sum())], target)
    keep = source != target
    return source[keep], target[keep], kind[keep]


def _edges(
    rng: np.random.Generator,
    *,
    nodes: int,
    edges_per_node: float,
    primary: np.ndarray,
    node_cluster: np.ndarray,
    labels: int,
    clusters: int,
    hubs: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(source, target, kind) arrays, sorted by (source, target); kind 0 label, 1 cluster, 2 any, 3 hub.

    Candidates are drawn in rounds (the first 15 % over the target, later ones sized by what is still
    missing) and deduplicated by ordered pair, keeping the first drawn, until there are enough."""
    wanted = round(nodes * edges_per_node)
    groups = (_grouped(primary, labels), _grouped(node_cluster, clusters))
    source = target = kind = np.zeros(0, dtype=np.int64)
    mean_out = edges_per_node * 1.15
    for _ in range(6):
        more = _draw_edges(
            rng, mean_out, primary=primary, node_cluster=node_cluster, groups=groups, hubs=hubs
        )
        source, target, kind = (
            np.concatenate(pair) for pair in zip((source, target, kind), more, strict=True)
        )
        _, first = np.unique(source * nodes + target, return_index=True)  # one edge per ordered pair
        first.sort()
        source, target, kind = source[first], target[first], kind[first]
        if source.size >= wanted:
            break
        mean_out = 2.0 * (wanted - source.size) / nodes + 0.1
    if source.size > wanted:
        chosen = np.sort(rng.choice(source.size, size=wanted, replace=False))
        source, target, kind = source[chosen], target[chosen], kind[chosen]
    order = np.lexsort((target, source))
    return source[order], target[order], kind[order]


def _edge_types(rng: np.random.Generator, target_type: np.ndarray, kind: np.ndarray) -> np.ndarray:
    """Indices into ``EDGE_TYPE_ORDER`` for each edge."""
    free = np.array([EDGE_TYPE_ORDER.index(t) for t, _ in FREE_EDGE_TYPES])
    shares = np.array([s for _, s in FREE_EDGE_TYPES])
    out = free[rng.choice(free.size, size=target_type.size, p=shares / shares.sum())]
    out = np.where(kind == 3, EDGE_TYPE_ORDER.index(EdgeType.RELATED_TO), out)
    for node_type, edge_type in TARGET_EDGE_TYPE.items():
        out = np.where(target_type == TYPES.index(node_type), EDGE_TYPE_ORDER.index(edge_type), out)
    return out


def _texts(
    rng: np.random.Generator,
    *,
    types: np.ndarray,
    primary: np.ndarray,
    node_cluster: np.ndarray,
    label_words: np.ndarray,
    vocab: list[list[str]],
) -> tuple[list[str], list[str]]:
    """Titles and chunks: label words, the cluster's vocabulary and a few common words."""
    words = np.array([w for cluster_words in vocab for w in cluster_words] + list(COMMON_WORDS), dtype=object)
    common0 = len(words) - len(COMMON_WORDS)
    n = types.size
    width = CHUNK_WORDS[1]
    source = rng.choice(3, size=(n, width), p=[0.3, 0.55, 0.15])
    label_pick = label_words[primary[:, None], rng.integers(0, 2, size=(n, width))]
    cluster_pick = node_cluster[:, None] * WORDS_PER_CLUSTER + rng.integers(0, WORDS_PER_CLUSTER, (n, width))
    common_pick = common0 + rng.integers(0, len(COMMON_WORDS), size=(n, width))
    index = np.where(source == 0, label_pick, np.where(source == 1, cluster_pick, common_pick))
    lengths = rng.integers(CHUNK_WORDS[0], CHUNK_WORDS[1] + 1, size=n)
    tokens = words[index]
    extra = words[node_cluster * WORDS_PER_CLUSTER + rng.integers(0, WORDS_PER_CLUSTER, size=n)]
    firsts, seconds = words[label_words[primary, 0]], words[label_words[primary, 1]]
    prefixes = [TITLE_PREFIX[t] for t in TYPES]
    titles = [
        f"{prefixes[t]} {a} {b} {x}"
        for t, a, b, x in zip(types.tolist(), firsts.tolist(), seconds.tolist(), extra.tolist(), strict=True)
    ]
    chunks = [
        " ".join(row[:length]).capitalize() + "."
        for row, length in zip(tokens, lengths.tolist(), strict=True)
    ]
    return titles, chunks


def _embeddings(
    rng: np.random.Generator, dim: int, *, primary: np.ndarray, label_cluster: np.ndarray, clusters: int
) -> np.ndarray:
    """Cluster centroid + label offset + node noise, unit-normalized, float32 (not the real embedder)."""

    def unit(rows: int, scale: float) -> np.ndarray:
        m = rng.standard_normal((rows, dim)).astype(np.float32)
        return m * (scale / np.linalg.norm(m, axis=1, keepdims=True))

    centroid = unit(clusters, 1.0)
    offset = unit(label_cluster.size, 0.6)
    noise = unit(primary.size, 0.45)
    vectors = centroid[label_cluster[primary]] + offset[primary] + noise
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors.astype(np.float32, copy=False)


def generate_graph(
    *,
    nodes: int,
    seed: int,
    clusters: int | None = None,
    edges_per_node: float = 5.0,
    hub_fraction: float = 0.01,
    embedding_dim: int | None = None,
) -> SyntheticGraph:
    """A deterministic synthetic graph of ``nodes`` nodes (see the module docstring for its shape)."""
    if nodes < len(TYPES):
        raise ValueError(f"a synthetic graph needs at least {len(TYPES)} nodes (one of each type)")
    if edges_per_node < 0 or not 0.0 <= hub_fraction <= 1.0:
        raise ValueError("edges_per_node must be ≥ 0 and hub_fraction in [0, 1]")
    rng = np.random.default_rng(seed)
    n_clusters = clusters if clusters is not None else _default_clusters(nodes)
    if n_clusters < 1:
        raise ValueError("clusters must be ≥ 1")
    cluster_weight = rng.dirichlet(np.full(n_clusters, 8.0))
    node_cluster = rng.choice(n_clusters, size=nodes, p=cluster_weight)
    cluster_size = np.bincount(node_cluster, minlength=n_clusters)
    labels_per_cluster = np.maximum(7, np.round(cluster_size / NODES_PER_LABEL)).astype(np.int64)
    cluster_rows, labels, vocab, label_cluster, label_words = _taxonomy(rng, n_clusters, labels_per_cluster)
    label_first = np.concatenate(([0], np.cumsum(labels_per_cluster)[:-1]))
    primary = label_first[node_cluster] + (rng.random(nodes) * labels_per_cluster[node_cluster]).astype(
        np.int64
    )
    offset = 1 + (rng.random(nodes) * (labels_per_cluster[node_cluster] - 1)).astype(np.int64)
    secondary = (
        label_first[node_cluster]
        + (primary - label_first[node_cluster] + offset) % labels_per_cluster[node_cluster]
    )
    has_secondary = rng.random(nodes) < 0.3
    types = _node_types(rng, nodes)
    hubs = np.sort(rng.choice(nodes, size=max(1, round(nodes * hub_fraction)), replace=False))
    source, target, kind = _edges(
        rng,
        nodes=nodes,
        edges_per_node=edges_per_node,
        primary=primary,
        node_cluster=node_cluster,
        labels=len(labels),
        clusters=n_clusters,
        hubs=hubs,
    )
    edge_type = _edge_types(rng, types[target], kind)
    low = np.where(kind == 0, 0.5, 0.05)
    weight = np.round(low + rng.random(source.size) * (1.0 - low), 3)
    titles, chunks = _texts(
        rng, types=types, primary=primary, node_cluster=node_cluster, label_words=label_words, vocab=vocab
    )
    risk = rng.choice(3, size=nodes, p=[0.5, 0.35, 0.15])
    embeddings = (
        _embeddings(rng, embedding_dim, primary=primary, label_cluster=label_cluster, clusters=n_clusters)
        if embedding_dim
        else None
    )
    width = max(6, len(str(nodes - 1)))
    ids = [f"N{i:0{width}d}" for i in range(nodes)]
    label_ids = [label["id"] for label in labels]
    cluster_keys = [key for key, _ in cluster_rows]
    attached = [
        (label_ids[p], label_ids[s]) if two else (label_ids[p],)
        for p, s, two in zip(primary.tolist(), secondary.tolist(), has_secondary.tolist(), strict=True)
    ]
    type_of, cluster_of, risk_of = types.tolist(), node_cluster.tolist(), risk.tolist()
    node_rows = [
        _node(
            ids[i],
            TYPES[type_of[i]],
            titles[i],
            chunks[i],
            attached[i],
            cluster_keys[cluster_of[i]],
            risk_of[i],
        )
        for i in range(nodes)
    ]
    type_names = [t.value for t in EDGE_TYPE_ORDER]
    edge_rows = tuple(
        EdgeData(ids[s], ids[t], type_names[e], w)
        for s, t, e, w in zip(
            source.tolist(), target.tolist(), edge_type.tolist(), weight.tolist(), strict=True
        )
    )
    return SyntheticGraph(
        graph=GraphData(nodes=tuple(node_rows), edges=edge_rows),
        clusters=tuple(cluster_rows),
        labels=tuple(labels),
        hubs=tuple(ids[h] for h in hubs.tolist()),
        seed=seed,
        embeddings=embeddings,
    )


_RISKS = (RiskLevel.LOW.value, RiskLevel.MEDIUM.value, RiskLevel.HIGH.value)
_ACTION_PARAMETERS = (ParameterSpec("account_id", "string", True, "the customer's account"),)


def _node(
    node_id: str,
    node_type: NodeType,
    title: str,
    chunk: str,
    labels: tuple[str, ...],
    cluster: str,
    risk: int,
) -> NodeData:
    is_action = node_type in (NodeType.ACTION, NodeType.DIRECT_ACTION)
    return NodeData(
        node_id=node_id,
        type=node_type.value,
        title=title,
        chunk=chunk,
        risk=_RISKS[risk] if is_action or node_type == NodeType.MEMORY_WRITE else RiskLevel.LOW.value,
        status=NodeStatus.ACTIVE.value,
        labels=labels,
        clusters=(cluster,),
        preconditions=("customer is verified",) if is_action else (),
        parameters=_ACTION_PARAMETERS if node_type == NodeType.ACTION else (),
        handler=f"python:synthetic.{cluster}.{node_type.value.lower()}" if is_action else "",
    )


def synthetic_pack(
    *,
    nodes: int,
    seed: int,
    clusters: int | None = None,
    edges_per_node: float = 5.0,
    hub_fraction: float = 0.01,
    slug: str = "synthetic",
    name: str = "Synthetic project",
) -> dict[str, Any]:
    """A knowledge pack (``arg-pack/1``) of a generated graph, ready for the real importer:
    ``pack_import(PackDocument(data=synthetic_pack(...), source="synthetic"))``."""
    from ontology.pack_graph import edge_to_pack, node_to_pack

    generated = generate_graph(
        nodes=nodes, seed=seed, clusters=clusters, edges_per_node=edges_per_node, hub_fraction=hub_fraction
    )
    return {
        "format": "arg-pack/1",
        "project": {"slug": slug, "name": name, "description": f"generated with seed {seed}"},
        "clusters": [
            {"key": key, "name": cluster_name, "description": "synthetic cluster"}
            for key, cluster_name in generated.clusters
        ],
        "labels": [dict(label) for label in generated.labels],
        "typologies": [
            {"key": "default", "name": "Default", "is_default": True, "preferred_node_types": ["Info", "FAQ"]}
        ],
        "nodes": [node_to_pack(node) for node in generated.graph.nodes],
        "edges": [edge_to_pack(edge) for edge in generated.graph.edges],
        "aliases": [],
    }
