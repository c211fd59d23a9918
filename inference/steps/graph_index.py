"""The graph index: the per-snapshot arrays that landing, expansion, scoring and traversal read.

A ``GraphRuntime`` is built once from a frozen ``GraphSnapshot`` (``GraphRuntime.build``) and shared
by every request served from that snapshot (``graph_runtime_for`` caches it per snapshot object, i.e.
per loaded release). Like the snapshot it is read-only. It turns the release's documents into arrays
so that per-request work is a few numpy operations over *candidate rows only*, never a Python loop
over every node:

* **label and cluster codes** — every LabelID / cluster key gets an integer code; node ↔ label and
  node ↔ cluster attachments become CSR arrays, so "does this node carry an admitted label?" is a
  segment reduction over the candidates' attachment rows;
* **the label tree** — parent, cluster and depth of each label code, children (for subtrees) and
  explicit incompatibilities;
* **structural signals** — the release's Jaccard (Node Similarity) and SimRank top-k lists decoded to
  CSR rows over snapshot positions (partners sorted by position), Louvain communities, degree and the
  hub threshold;
* **typologies** — each context typology as a ``TypologyProfile``;
* **OutOfScope nodes** and **cluster centroids** (for abstention and cold-start landing).

``NodeGate`` is the per-request side: the hard gates of §2.5.3 (status, policy node types and labels,
taxonomy coherence, the cold-start risk rule) evaluated vectorized over candidate positions.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from arg_platform.vocabulary import NodeStatus, NodeType, RiskLevel
from inference.contracts import PolicyConstraints
from inference.steps.products import excluded_by_product
from ontology.graph_arrays import NODE_TYPE_CODE, NODE_TYPE_NAMES, RISK_CODE, STATUS_CODE
from ontology.graph_snapshot import GraphSnapshot

# Where traversal stops (§2.7): a node that answers, acts, remembers, asks or refuses.
TERMINAL_TYPES: frozenset[str] = frozenset(
    {
        NodeType.INFO,
        NodeType.INFO_STABLE,
        NodeType.FAQ,
        NodeType.ACTION,
        NodeType.DIRECT_ACTION,
        NodeType.MEMORY_READ,
        NodeType.MEMORY_WRITE,
        NodeType.OUT_OF_SCOPE,
        NodeType.CLARIFY,
    }
)
# Nodes traversal passes through: they route, they do not answer.
PASS_THROUGH_TYPES: frozenset[str] = frozenset({NodeType.DECISION, NodeType.SHORTCUT})
# Stable shortcut types the fast path may resolve to (§2.6).
FAST_PATH_TYPES: frozenset[str] = frozenset(
    {NodeType.SHORTCUT, NodeType.FAQ, NodeType.DIRECT_ACTION, NodeType.INFO_STABLE}
)
ACTION_TYPES: frozenset[str] = frozenset({NodeType.ACTION, NodeType.DIRECT_ACTION})

# Weights of the composite score when a typology is missing or leaves one out.
DEFAULT_WEIGHTS: Mapping[str, float] = MappingProxyType(
    {"alpha": 0.3, "beta": 0.3, "gamma": 0.2, "delta": 0.1, "epsilon": 0.1}
)
DEFAULT_BEAM_WIDTH = 3
DEFAULT_COMPLEXITY_BUDGET = 4

# A node is a hub when its degree (in + out) reaches the 99th percentile of the graph and at least 30
# (the lower bound of the anti-hub K): structural similarity to a hub carries little information.
HUB_PERCENTILE = 99.0
HUB_MIN_DEGREE = 30

GRAPH_RUNTIME_CACHE_SIZE = 32


def type_mask(names: Iterable[str]) -> np.ndarray:
    """A boolean table over node type codes: ``mask[snapshot.node_type[i]]`` is True for ``names``."""
    mask = np.zeros(len(NODE_TYPE_NAMES), dtype=bool)
    for name in names:
        if name in NODE_TYPE_CODE:
            mask[NODE_TYPE_CODE[name]] = True
    return mask


TERMINAL_MASK = type_mask(TERMINAL_TYPES)
PASS_THROUGH_MASK = type_mask(PASS_THROUGH_TYPES)
FAST_PATH_MASK = type_mask(FAST_PATH_TYPES)
ACTION_MASK = type_mask(ACTION_TYPES)
OUT_OF_SCOPE_CODE = NODE_TYPE_CODE[NodeType.OUT_OF_SCOPE]
SHORTCUT_CODE = NODE_TYPE_CODE[NodeType.SHORTCUT]
for _mask in (TERMINAL_MASK, PASS_THROUGH_MASK, FAST_PATH_MASK, ACTION_MASK):
    _mask.setflags(write=False)


@dataclass(frozen=True)
class TypologyProfile:
    """A context typology (§2.3, pack shape) as the traversal reads it; missing values get defaults."""

    key: str | None
    max_hops: int | None
    max_depth: int | None
    beam_width: int
    complexity_budget: int
    preferred_node_types: tuple[str, ...]
    fast_path_eligible: bool
    weights: tuple[float, float, float, float, float]  # alpha, beta, gamma, delta, epsilon

    @classmethod
    def from_document(cls, typology: Mapping[str, Any] | None) -> TypologyProfile:
        doc = typology or {}
        raw_weights = {**DEFAULT_WEIGHTS, **(doc.get("weights") or {})}
        weights = tuple(float(raw_weights[k]) for k in ("alpha", "beta", "gamma", "delta", "epsilon"))
        return cls(
            key=doc.get("key"),
            max_hops=_positive_or_none(doc.get("max_hops")),
            max_depth=_positive_or_none(doc.get("max_depth")),
            beam_width=max(1, int(doc.get("beam_width") or DEFAULT_BEAM_WIDTH)),
            complexity_budget=max(1, int(doc.get("complexity_budget") or DEFAULT_COMPLEXITY_BUDGET)),
            preferred_node_types=tuple(doc.get("preferred_node_types") or ()),
            fast_path_eligible=bool(doc.get("fast_path_eligible", False)),
            weights=weights,  # type: ignore[arg-type]
        )


def _positive_or_none(value: Any) -> int | None:
    return None if value is None else max(0, int(value))


@dataclass(frozen=True, eq=False)
class SimilarityRows:
    """Top-k structural partners per node (Jaccard or SimRank) as CSR over snapshot positions; the
    partners of a row are sorted by position so a lookup is one ``searchsorted``."""

    indptr: np.ndarray
    partners: np.ndarray
    scores: np.ndarray

    def row(self, position: int) -> tuple[np.ndarray, np.ndarray]:
        start, end = self.indptr[position], self.indptr[position + 1]
        return self.partners[start:end], self.scores[start:end]

    def lookup(self, position: int, candidates: np.ndarray) -> np.ndarray:
        """The score of each candidate in ``position``'s row (0 when it is not a top-k partner)."""
        partners, scores = self.row(position)
        if partners.size == 0 or candidates.size == 0:
            return np.zeros(candidates.shape[0], dtype=np.float64)
        k = np.minimum(np.searchsorted(partners, candidates), partners.size - 1)
        return np.where(partners[k] == candidates, scores[k].astype(np.float64), 0.0)

    @staticmethod
    def empty(n: int) -> SimilarityRows:
        return SimilarityRows(np.zeros(n + 1, dtype=np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32))


def _csr(lists: list[list[int]], dtype: Any = np.int32) -> tuple[np.ndarray, np.ndarray]:
    counts = np.fromiter((len(items) for items in lists), dtype=np.int64, count=len(lists))
    indptr = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    flat = np.fromiter((v for items in lists for v in items), dtype=dtype, count=int(indptr[-1]))
    return indptr, flat


def _frozen(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def segment_reduce(
    indptr: np.ndarray, indices: np.ndarray, table: np.ndarray, positions: np.ndarray
) -> np.ndarray:
    """For each position, the max of ``table[code]`` over its CSR row (0 / False for an empty row).

    Vectorized: the rows of all positions are gathered into one flat array, then reduced per owner.
    """
    starts = indptr[positions]
    lens = indptr[positions + 1] - starts
    total = int(lens.sum())
    out = np.zeros(positions.shape[0], dtype=table.dtype)
    if total == 0:
        return out
    owner = np.repeat(np.arange(positions.shape[0]), lens)
    offsets = np.arange(total) - np.repeat(np.cumsum(lens) - lens, lens)
    values = table[indices[np.repeat(starts, lens) + offsets]]
    np.maximum.at(out, owner, values)
    return out


@dataclass(frozen=True, eq=False)
class GraphRuntime:
    """Steps 4–7's precomputed, read-only view of one snapshot (see the module docstring)."""

    project_id: int
    release_id: int | None
    checksum: str
    node_count: int
    node_type: np.ndarray  # the snapshot's int8 type codes
    id_rank: np.ndarray  # rank of each node_id in string order: the deterministic tie-break
    routable: np.ndarray  # bool per node: ACTIVE (DEPRECATED and REMOVED nodes are never routed to)
    high_risk_action: np.ndarray  # bool per node: an Action / DirectAction of high risk
    # taxonomy
    label_ids: tuple[str, ...]
    label_code: Mapping[str, int]
    label_cluster: np.ndarray  # cluster code per label code (-1: unknown)
    label_parent: np.ndarray  # parent label code (-1: root / unknown)
    label_depth: np.ndarray  # 0 for a root
    label_children: Mapping[int, tuple[int, ...]]
    incompatible: Mapping[int, frozenset[int]]
    cluster_keys: tuple[str, ...]
    cluster_code: Mapping[str, int]
    node_label_ptr: np.ndarray
    node_label_idx: np.ndarray
    node_cluster_ptr: np.ndarray
    node_cluster_idx: np.ndarray
    # structure
    degree: np.ndarray
    hub_threshold: int
    community: np.ndarray | None
    jaccard: SimilarityRows
    simrank: SimilarityRows
    # landing helpers
    out_of_scope: np.ndarray  # positions of ACTIVE OutOfScope nodes
    cluster_centroids: np.ndarray | None  # one unit row per cluster code (zeros for an empty cluster)
    typologies: Mapping[str, TypologyProfile]
    default_typology: str | None
    # per declared product, the nodes it excludes (``inference.steps.products``)
    product_excluded: Mapping[str, np.ndarray] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def build(cls, snapshot: GraphSnapshot) -> GraphRuntime:
        """Precompute everything from the snapshot (no database, no network)."""
        n = snapshot.node_count
        documents = snapshot.documents
        label_docs = {label["id"]: label for label in documents.get("labels", [])}
        label_ids = tuple(
            sorted(
                set(label_docs)
                | set(snapshot.label_nodes)
                | {lid for ls in snapshot.node_labels for lid in ls}
            )
        )
        label_code = {lid: i for i, lid in enumerate(label_ids)}
        cluster_keys = tuple(
            sorted(
                {c["key"] for c in documents.get("clusters", [])}
                | set(snapshot.cluster_nodes)
                | {label["cluster"] for label in label_docs.values() if label.get("cluster")}
                | {key for cs in snapshot.node_clusters for key in cs}
            )
        )
        cluster_code = {key: i for i, key in enumerate(cluster_keys)}

        label_cluster = np.full(len(label_ids), -1, dtype=np.int32)
        label_parent = np.full(len(label_ids), -1, dtype=np.int32)
        children: dict[int, list[int]] = {}
        for lid, label in label_docs.items():
            code = label_code[lid]
            label_cluster[code] = cluster_code.get(label.get("cluster") or "", -1)
            parent = label.get("parent")
            if parent in label_code:
                label_parent[code] = label_code[parent]
                children.setdefault(label_code[parent], []).append(code)
        label_depth = np.zeros(len(label_ids), dtype=np.int16)
        for code in range(len(label_ids)):
            depth, current, seen = 0, int(label_parent[code]), {code}
            while current >= 0 and current not in seen:
                seen.add(current)
                depth += 1
                current = int(label_parent[current])
            label_depth[code] = depth
        incompatible: dict[int, set[int]] = {}
        for pair in documents.get("incompatibilities", []):
            a, b = (pair.get("labels") or [None, None])[:2]
            if a in label_code and b in label_code:
                incompatible.setdefault(label_code[a], set()).add(label_code[b])
                incompatible.setdefault(label_code[b], set()).add(label_code[a])

        node_label_ptr, node_label_idx = _csr(
            [[label_code[lid] for lid in ls] for ls in snapshot.node_labels]
        )
        node_cluster_ptr, node_cluster_idx = _csr(
            [[cluster_code[key] for key in cs] for cs in snapshot.node_clusters]
        )

        routable = snapshot.status == STATUS_CODE[NodeStatus.ACTIVE]
        high_risk_action = ACTION_MASK[snapshot.node_type] & (snapshot.risk == RISK_CODE[RiskLevel.HIGH])
        degree = (snapshot.out_edges.degree() + snapshot.in_edges.degree()).astype(np.int32)
        hub_threshold = (
            max(HUB_MIN_DEGREE, int(np.percentile(degree, HUB_PERCENTILE))) if n else HUB_MIN_DEGREE
        )
        signals = documents.get("signals") or {}
        jaccard = _similarity_rows(snapshot, signals, "jaccard")
        simrank = _similarity_rows(snapshot, signals, "simrank")
        out_of_scope = np.flatnonzero(routable & (snapshot.node_type == OUT_OF_SCOPE_CODE)).astype(np.int32)
        typologies = {
            t["key"]: TypologyProfile.from_document(t) for t in documents.get("typologies", []) if "key" in t
        }
        default_typology = next(
            (
                t["key"]
                for t in sorted(documents.get("typologies", []), key=lambda t: t.get("key", ""))
                if t.get("is_default")
            ),
            None,
        )
        return cls(
            project_id=snapshot.project_id,
            release_id=snapshot.release_id,
            checksum=snapshot.checksum,
            node_count=n,
            node_type=snapshot.node_type,
            id_rank=_frozen(_id_rank(snapshot.node_ids)),
            routable=_frozen(routable),
            high_risk_action=_frozen(high_risk_action),
            label_ids=label_ids,
            label_code=MappingProxyType(label_code),
            label_cluster=_frozen(label_cluster),
            label_parent=_frozen(label_parent),
            label_depth=_frozen(label_depth),
            label_children=MappingProxyType({k: tuple(sorted(v)) for k, v in children.items()}),
            incompatible=MappingProxyType({k: frozenset(v) for k, v in incompatible.items()}),
            cluster_keys=cluster_keys,
            cluster_code=MappingProxyType(cluster_code),
            node_label_ptr=_frozen(node_label_ptr),
            node_label_idx=_frozen(node_label_idx),
            node_cluster_ptr=_frozen(node_cluster_ptr),
            node_cluster_idx=_frozen(node_cluster_idx),
            degree=_frozen(degree),
            hub_threshold=hub_threshold,
            community=snapshot.community,
            jaccard=jaccard,
            simrank=simrank,
            out_of_scope=_frozen(out_of_scope),
            cluster_centroids=_cluster_centroids(snapshot, cluster_code, routable),
            typologies=MappingProxyType(typologies),
            default_typology=default_typology,
            product_excluded=MappingProxyType(excluded_by_product(snapshot.extras)),
        )

    # --- taxonomy helpers (per request, bounded by the size of the labels involved) ---

    def ancestors(self, code: int) -> list[int]:
        """Parent, grandparent, … of a label code (cycle-safe)."""
        chain: list[int] = []
        current = int(self.label_parent[code])
        while current >= 0 and current not in chain and current != code:
            chain.append(current)
            current = int(self.label_parent[current])
        return chain

    def descendants(self, code: int) -> list[int]:
        """Every label below ``code`` (not ``code`` itself)."""
        out: list[int] = []
        seen = {code}
        stack = list(self.label_children.get(code, ()))
        while stack:
            current = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            out.append(current)
            stack.extend(self.label_children.get(current, ()))
        return out

    def label_cluster_key(self, code: int) -> str | None:
        cluster = int(self.label_cluster[code])
        return self.cluster_keys[cluster] if cluster >= 0 else None

    def typology(self, typology: Mapping[str, Any] | str | None) -> TypologyProfile:
        """A typology profile from its pack-shape document, its key, or the release default."""
        if isinstance(typology, Mapping):
            return TypologyProfile.from_document(typology)
        key = typology or self.default_typology
        if key and key in self.typologies:
            return self.typologies[key]
        return TypologyProfile.from_document(None)

    def is_hub(self, positions: np.ndarray) -> np.ndarray:
        return self.degree[positions] >= self.hub_threshold


def _id_rank(node_ids: tuple[str, ...]) -> np.ndarray:
    if all(a < b for a, b in zip(node_ids, node_ids[1:], strict=False)):
        return np.arange(len(node_ids), dtype=np.int64)  # releases store nodes in node_id order
    rank = np.empty(len(node_ids), dtype=np.int64)
    rank[np.argsort(np.array(node_ids, dtype=object), kind="stable")] = np.arange(len(node_ids))
    return rank


def _similarity_rows(snapshot: GraphSnapshot, signals: Mapping[str, Any], key: str) -> SimilarityRows:
    rows = signals.get(key)
    nodes = signals.get("nodes")
    n = snapshot.node_count
    if not rows or not nodes:
        return SimilarityRows.empty(n)
    to_position = np.array([snapshot.position.get(node_id, -1) for node_id in nodes], dtype=np.int64)
    per_node: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    for k, flat in enumerate(rows):
        owner = int(to_position[k])
        if owner < 0 or not flat:
            continue
        partners = to_position[np.asarray(flat[0::2], dtype=np.int64)]
        scores = flat[1::2]
        per_node[owner] = sorted((int(p), float(s)) for p, s in zip(partners, scores, strict=True) if p >= 0)
    indptr, partners = _csr([[p for p, _ in row] for row in per_node])
    scores = np.fromiter((s for row in per_node for _, s in row), dtype=np.float32, count=int(indptr[-1]))
    return SimilarityRows(_frozen(indptr), _frozen(partners), _frozen(scores))


def _cluster_centroids(
    snapshot: GraphSnapshot, cluster_code: Mapping[str, int], routable: np.ndarray
) -> np.ndarray | None:
    if snapshot.embeddings is None or not cluster_code:
        return None
    centroids = np.zeros((len(cluster_code), snapshot.embeddings.shape[1]), dtype=np.float32)
    for key, positions in snapshot.cluster_nodes.items():
        members = positions[routable[positions]]
        if members.size:
            mean = snapshot.embeddings[members].mean(axis=0)
            norm = float(np.linalg.norm(mean))
            if norm > 0:
                centroids[cluster_code[key]] = mean / norm
    return _frozen(centroids)


_cache: weakref.WeakKeyDictionary[GraphSnapshot, GraphRuntime] = weakref.WeakKeyDictionary()
_cache_lock = threading.Lock()


def graph_runtime_for(snapshot: GraphSnapshot) -> GraphRuntime:
    """The runtime of a snapshot, built once per snapshot object (one per loaded release) and dropped
    with it. Keyed by the object rather than the release id alone, so two snapshots that happen to share
    an id (synthetic graphs in tests and benchmarks) never share a runtime."""
    runtime = _cache.get(snapshot)
    if runtime is not None:
        return runtime
    with _cache_lock:
        runtime = _cache.get(snapshot)
        if runtime is None:
            runtime = GraphRuntime.build(snapshot)
            _cache[snapshot] = runtime
        return runtime


# --- the hard gates of one request --------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class NodeGate:
    """The hard gates of one request (§2.5.3), applied before any scoring.

    A node passes when it is ACTIVE, its type is admitted by the policy, it is not a high-risk
    Action / DirectAction on a cold-start route, and — for its labels — it carries at least one label
    that the policy admits *and* that is taxonomy-coherent with the request's scope (in one of the scope
    clusters, not incompatible with a label of ``L_final``). A node with no label attachment at all (a
    global node such as an OutOfScope node) passes the label gate when it has no cluster attachment or
    one in the scope. A node attached to a forbidden label but also to an admitted, coherent one passes:
    attachments are many-to-many and the admitted branch legitimately reaches it. When the request
    names a product the release declares (``PolicyConstraints.product``), a node tagged with other
    products only does not pass (``inference.steps.products``).
    """

    type_ok: np.ndarray  # bool per node type code
    label_ok: np.ndarray  # bool per label code (+1 sentinel): admitted and coherent
    cluster_ok: np.ndarray | None  # bool per cluster code (+1 sentinel); None: no taxonomy scope
    block_high_risk_actions: bool
    product_excluded: np.ndarray | None = None  # bool per node: tagged with other products than the request's

    @classmethod
    def build(
        cls,
        runtime: GraphRuntime,
        constraints: PolicyConstraints,
        *,
        scope_labels: Iterable[str] = (),
        scope_clusters: Iterable[str] = (),
        block_high_risk_actions: bool = False,
    ) -> NodeGate:
        type_ok = np.fromiter(
            (constraints.admits_node_type(name) for name in NODE_TYPE_NAMES),
            dtype=bool,
            count=len(NODE_TYPE_NAMES),
        )
        n_labels = len(runtime.label_ids)
        if constraints.allowed_labels is None:
            label_ok = np.ones(n_labels + 1, dtype=bool)
        else:
            label_ok = np.zeros(n_labels + 1, dtype=bool)
            allowed = [
                runtime.label_code[lid] for lid in constraints.allowed_labels if lid in runtime.label_code
            ]
            label_ok[allowed] = True
        forbidden = [
            runtime.label_code[lid] for lid in constraints.forbidden_labels if lid in runtime.label_code
        ]
        label_ok[forbidden] = False
        label_ok[n_labels] = False
        clusters = [runtime.cluster_code[key] for key in scope_clusters if key in runtime.cluster_code]
        cluster_ok = None
        if clusters:
            cluster_ok = np.zeros(len(runtime.cluster_keys) + 1, dtype=bool)
            cluster_ok[clusters] = True
            # label_cluster == -1 indexes the trailing False sentinel
            coherent = np.append(cluster_ok[runtime.label_cluster], False)
            for lid in scope_labels:
                code = runtime.label_code.get(lid)
                if code is not None:
                    coherent[list(runtime.incompatible.get(code, ()))] = False
            label_ok &= coherent
        product_excluded = runtime.product_excluded.get(constraints.product) if constraints.product else None
        return cls(type_ok, label_ok, cluster_ok, block_high_risk_actions, product_excluded)

    def admit(self, runtime: GraphRuntime, positions: np.ndarray) -> np.ndarray:
        """A boolean mask over ``positions``: which candidates pass every gate."""
        positions = np.asarray(positions, dtype=np.int64)
        ok = runtime.routable[positions] & self.type_ok[runtime.node_type[positions]]
        if self.block_high_risk_actions:
            ok &= ~runtime.high_risk_action[positions]
        if self.product_excluded is not None:
            ok &= ~self.product_excluded[positions]
        if not ok.any():
            return ok
        labelled = runtime.node_label_ptr[positions + 1] > runtime.node_label_ptr[positions]
        label_pass = segment_reduce(runtime.node_label_ptr, runtime.node_label_idx, self.label_ok, positions)
        if self.cluster_ok is None:
            unlabelled_pass = np.ones(positions.shape[0], dtype=bool)
        else:
            clustered = runtime.node_cluster_ptr[positions + 1] > runtime.node_cluster_ptr[positions]
            in_scope = segment_reduce(
                runtime.node_cluster_ptr, runtime.node_cluster_idx, self.cluster_ok, positions
            )
            unlabelled_pass = ~clustered | in_scope
        return ok & np.where(labelled, label_pass, unlabelled_pass)


def matvec(rows: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``rows @ vector`` without BLAS. A multi-threaded BLAS gemv on a few thousand rows (OpenBLAS
    switches to its thread pool there) measured 10–30× slower than this single-threaded loop on a busy
    2-core machine, and its spinning threads slow everything around it."""
    return np.einsum("ij,j->i", rows, vector)


def cosines(snapshot: GraphSnapshot, positions: np.ndarray, prompt_vec: np.ndarray | None) -> np.ndarray:
    """cos(prompt, node) for the candidate rows only (embeddings and prompt are unit vectors)."""
    if snapshot.embeddings is None or prompt_vec is None or positions.size == 0:
        return np.zeros(positions.shape[0], dtype=np.float64)
    rows = snapshot.embeddings[positions]
    return matvec(rows, np.asarray(prompt_vec, dtype=np.float32)).astype(np.float64)


def rank_desc(runtime: GraphRuntime, scores: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Indices ordering candidates by score descending, ties by node_id."""
    return np.lexsort((runtime.id_rank[positions], -scores))
