"""The graph store port: what every backend offers, with frozen dataclasses at its edges.

The vocabulary follows the knowledge pack format (``docs/knowledge-pack-format.md``, sections
``nodes``, ``edges`` and ``aliases``) and ARG §0.1 / §3.5:

* ``NodeData`` — an ontology node, the terminal operational unit that carries operational truth.
  ``node_id`` is stable (``[A-Za-z0-9_.:-]``) and is what every other structure references.
  ``labels`` / ``clusters`` are the node ↔ label (stable LabelIDs) and node ↔ cluster (cluster keys)
  attachments. ``preconditions``, ``parameters`` and ``handler`` describe Actions.
* ``EdgeData`` — a typed, directed edge of the "movement grammar", unique per (source, target, type).
* ``AliasData`` — one row of the split redirection table A → {B, C} (a merge is A → {AB}); MemoryRead
  follows it so that a memory pointing at a split or merged node is never orphaned.
* ``GraphData`` — a project's whole graph, as imported from or exported to a knowledge pack.

Backends never return driver records or ORM rows: only these dataclasses.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypedDict, TypeGuard

from arg_platform.vocabulary import NodeStatus, RiskLevel

Direction = Literal["out", "in", "both"]
DIRECTIONS: frozenset[str] = frozenset({"out", "in", "both"})


def is_direction(value: str) -> TypeGuard[Direction]:
    return value in DIRECTIONS


@dataclass(frozen=True)
class StoreHealth:
    backend: str
    ok: bool
    detail: str
    info: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class ParameterSpec:
    """One parameter an Action needs before it can execute (clarified from the user when missing).

    ``type`` is one of ``PARAMETER_TYPES``. ``pattern`` (an ``identifier``'s regular expression, also
    allowed on ``string``) is what a value must match in full; ``values`` are an ``enum``'s accepted
    values and ``synonyms`` other words for them (``(value, (word, …))`` pairs). ``source`` says where
    the value comes from: ``prompt`` — the caller's parameters or the user's words (taken from the
    prompt when found, asked for when missing); ``context`` — the calling application only (its
    parameters or the request context), never asked from the user in words.
    """

    name: str
    type: str = "string"
    required: bool = True
    description: str = ""
    pattern: str = ""
    values: tuple[str, ...] = ()
    synonyms: tuple[tuple[str, tuple[str, ...]], ...] = ()
    source: str = "prompt"


def parameter_as_json(spec: ParameterSpec) -> dict[str, object]:
    """A parameter in the knowledge-pack shape: the four base keys, the others only when set."""
    out: dict[str, object] = {
        "name": spec.name,
        "type": spec.type,
        "required": spec.required,
        "description": spec.description,
    }
    if spec.pattern:
        out["pattern"] = spec.pattern
    if spec.values:
        out["values"] = list(spec.values)
    if spec.synonyms:
        out["synonyms"] = {value: list(words) for value, words in spec.synonyms}
    if spec.source != "prompt":
        out["source"] = spec.source
    return out


def parameter_from_json(raw: Mapping[str, object], *, required: bool = True) -> ParameterSpec:
    """A ``ParameterSpec`` from its knowledge-pack shape (``required`` when the key is absent).

    Values are taken as given (strings where text is expected); the validator reports what does not
    fit (``graph.action_fields``)."""
    values = raw.get("values") or ()
    synonyms = raw.get("synonyms") or {}
    return ParameterSpec(
        name=str(raw.get("name", "")),
        type=str(raw.get("type") or "string"),
        required=bool(raw.get("required", required)),
        description=str(raw.get("description") or ""),
        pattern=str(raw.get("pattern") or ""),
        values=tuple(str(v) for v in values) if isinstance(values, list | tuple) else (str(values),),
        synonyms=tuple(
            (str(value), tuple(str(w) for w in words) if isinstance(words, list | tuple) else (str(words),))
            for value, words in (synonyms.items() if isinstance(synonyms, Mapping) else ())
        ),
        source=str(raw.get("source") or "prompt"),
    )


@dataclass(frozen=True)
class NodeData:
    """An ontology node (ARG §0.1): a leaf carrying operational truth, attached to labels and clusters.

    A node has three texts with three readers: ``chunk`` is the *client text* — what an answer may show
    the asker, the only text the online path ever returns or cites; ``staff_notes`` are instructions for
    the people who curate or hand over the case (never shown to a client); ``description`` says what the
    node is or does, for curators (never shown to a client).
    """

    node_id: str
    type: str
    title: str
    chunk: str
    risk: str = RiskLevel.LOW.value
    status: str = NodeStatus.ACTIVE.value
    labels: tuple[str, ...] = ()
    clusters: tuple[str, ...] = ()
    preconditions: tuple[str, ...] = ()
    parameters: tuple[ParameterSpec, ...] = ()
    handler: str = ""
    status_reason: str = ""
    embedding: tuple[float, ...] | None = None
    staff_notes: str = ""
    description: str = ""
    products: tuple[str, ...] = ()  # product keys the node is specific to; empty: every product


@dataclass(frozen=True)
class EdgeData:
    """A typed directed edge: ``weight`` in [-1, 1] (negative = inhibitory), ``semantics`` free text."""

    source: str
    target: str
    type: str
    weight: float = 1.0
    semantics: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.source, self.target, self.type)


@dataclass(frozen=True)
class AliasData:
    """A row of the split redirection table: ``source`` now lives on in ``targets`` (A → {B, C})."""

    source: str
    targets: tuple[str, ...]
    reason: str = ""


class GraphCounts(TypedDict):
    """What ``GraphStore.counts`` answers: totals, and the nodes per type and per status."""

    nodes: int
    edges: int
    aliases: int
    nodes_by_type: dict[str, int]
    nodes_by_status: dict[str, int]


@dataclass(frozen=True)
class GraphData:
    """A project's graph: nodes, edges and aliases (export order: by node_id, edge key, alias source)."""

    nodes: tuple[NodeData, ...] = ()
    edges: tuple[EdgeData, ...] = ()
    aliases: tuple[AliasData, ...] = ()


def resolve_alias_chain(aliases: Mapping[str, tuple[str, ...]], node_id: str) -> tuple[str, ...]:
    """Follow the redirection table from ``node_id`` to the nodes it lives on in.

    A node without an alias resolves to itself. Chains are followed (A → B, B → {C, D} gives (C, D)),
    depth first in the order of each alias's targets, without duplicates. Cycle-safe: a node already
    visited is never expanded again, and a node whose every target was already visited (it closes a
    cycle) stands for itself, so the answer always names at least one node.
    """
    out: list[str] = []
    visited: set[str] = set()

    def walk(current: str) -> None:
        visited.add(current)
        fresh = [t for t in aliases.get(current, ()) if t not in visited]
        if not fresh:
            if current not in out:
                out.append(current)
            return
        for target in fresh:
            if target not in visited:
                walk(target)

    walk(node_id)
    return tuple(out)


class GraphStore(Protocol):
    """The port every graph backend implements; ``project_id`` scopes every call (projects are isolated).

    Writes validate their input with the graph rules (``ontology.validator``) and raise
    ``arg_platform.errors.RuleViolation`` writing nothing; a missing node raises ``NotFound``.
    """

    backend: str

    def health(self) -> StoreHealth:
        """Cheap liveness check of the store (never raises)."""
        ...

    @property
    def in_unit_of_work(self) -> bool:
        """Whether this thread's store calls run inside an open unit of work."""
        ...

    def unit_of_work(self) -> AbstractContextManager[None]:
        """The store's part of ``ontology.store.unit_of_work.graph_atomic`` (use that, not this)."""
        ...

    def savepoint(self, project_id: int) -> AbstractContextManager[None]:
        """The store's part of ``ontology.store.unit_of_work.graph_savepoint`` (use that, not this)."""
        ...

    def replace_graph(self, project_id: int, graph: GraphData) -> None:
        """Validate ``graph`` whole, then atomically replace the project's graph with it."""
        ...

    def export_graph(self, project_id: int) -> GraphData:
        """The project's graph in deterministic order."""
        ...

    def upsert_node(self, project_id: int, node: NodeData) -> None:
        """Create the node or overwrite every field of it (attachments included)."""
        ...

    def set_node_status(self, project_id: int, node_id: str, status: str, reason: str) -> None:
        """Move a node along ACTIVE → DEPRECATED → REMOVED, recording the reason and the date."""
        ...

    def add_edge(self, project_id: int, edge: EdgeData) -> None:
        """Add a new edge between two existing, non-REMOVED nodes."""
        ...

    def remove_edge(self, project_id: int, source: str, target: str, type: str) -> None:
        """Delete one edge (``NotFound`` when there is none)."""
        ...

    def get_node(self, project_id: int, node_id: str) -> NodeData | None: ...

    def list_nodes(
        self,
        project_id: int,
        *,
        type: str | None = None,
        status: str | None = None,
        label: str | None = None,
        search: str | None = None,
        offset: int = 0,
        limit: int = 50,
    ) -> tuple[list[NodeData], int]:
        """One page of nodes by node_id (filters: type, status, attached LabelID, text in id or title)
        and the total number matching."""
        ...

    def neighbours(
        self,
        project_id: int,
        node_id: str,
        direction: Direction = "out",
        edge_types: tuple[str, ...] | None = None,
    ) -> list[EdgeData]:
        """Edges leaving (``out``), entering (``in``) or touching (``both``) a node, by edge key."""
        ...

    def add_alias(self, project_id: int, alias: AliasData) -> None:
        """Set the redirection of ``alias.source`` (replaces an earlier alias of the same source)."""
        ...

    def resolve_alias(self, project_id: int, node_id: str) -> tuple[str, ...]:
        """Where a (possibly split or merged) node lives on now; see ``resolve_alias_chain``."""
        ...

    def counts(self, project_id: int) -> GraphCounts:
        """``{"nodes": n, "edges": n, "aliases": n, "nodes_by_type": {...}, "nodes_by_status": {...}}``."""
        ...
