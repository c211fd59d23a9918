"""The changeset interpreter: the one piece of code that decides what a changeset does (ARG §3 C and E).

``changeset_apply(state, ops)`` applies a changeset's operations in order to a *knowledge state* — a
graph (nodes, edges, aliases) and the taxonomy documents (labels and the rest of a pack, as
``taxonomy.packs.pack_export`` writes them) — and returns the new state with the list of **effects**
it produced. Nothing is written. Every caller goes through it:

* replay freezes the new state of the active release into a shadow release (``review.loop.shadow``);
* application runs it twice — on the draft, whose effects ``review.loop.application`` writes through the
  ontology and taxonomy services (a dumb writer: one service call per effect, no decisions of its own),
  and on the active release, whose new state becomes the next release (parent + approved changesets);
* the proposal preview and the merge generator read the new state.

An *effect* is one primitive write (a label created, a node's fields changed, an edge put…), in the
order the operations produced it. An operation that finds its change already made produces no effect
(an edge with that weight, a status already reached, a child label with the same name under the same
parent, a node that exists with the same content), so a retried application writes nothing twice.
An operation that cannot apply raises ``ChangesetConflict``.

LabelIDs: a ``label_add`` gets the ID ``issued`` gives its ref, else one from ``issue_label_id`` (the
project's counter, when the result is written), else the next number above the state's labels (replay).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ontology.store.port import AliasData, EdgeData, GraphData, NodeData
from ontology.validator import STATUS_TRANSITIONS
from review.changeset import (
    NEW_LABEL_PREFIX,
    AliasSet,
    EdgeAdd,
    EdgeRemove,
    EdgeSetWeight,
    LabelAdd,
    LabelMove,
    LabelStatusSet,
    NodeAdd,
    NodeAttach,
    NodeContentSet,
    NodeDetach,
    NodeStatusSet,
    Op,
)

LABEL_TRANSITIONS: dict[str, frozenset[str]] = {
    "CANDIDATE": frozenset({"SHADOW", "ACTIVE", "DEPRECATED"}),
    "SHADOW": frozenset({"ACTIVE", "DEPRECATED", "CANDIDATE"}),
    "ACTIVE": frozenset({"DEPRECATED"}),
    "DEPRECATED": frozenset(),
}


class ChangesetConflict(Exception):
    """A changeset does not apply to the state it is applied to (stale or contradictory)."""


# --- effects ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LabelCreated:
    """A new label (created CANDIDATE, then moved to ``record["status"]``), as a pack label record."""

    record: dict[str, Any]


@dataclass(frozen=True)
class LabelStatusChanged:
    label_id: str
    status: str
    reason: str


@dataclass(frozen=True)
class LabelMoved:
    """A label re-attached under ``parent`` (or at the root of ``cluster``); ``subtree`` (the label and
    its descendants) now lives in ``cluster``."""

    label_id: str
    cluster: str
    parent: str | None
    subtree: tuple[str, ...]
    reason: str


@dataclass(frozen=True)
class NodeCreated:
    node: NodeData


@dataclass(frozen=True)
class NodeChanged:
    """Fields of an existing node overwritten (title, chunk, risk, preconditions, labels, clusters)."""

    node_id: str
    changes: dict[str, Any]


@dataclass(frozen=True)
class NodeStatusChanged:
    node_id: str
    status: str
    reason: str


@dataclass(frozen=True)
class EdgePut:
    """An edge added (``existed`` False) or its weight / semantics overwritten."""

    edge: EdgeData
    existed: bool


@dataclass(frozen=True)
class EdgeDeleted:
    key: tuple[str, str, str]
    reason: str


@dataclass(frozen=True)
class AliasPut:
    alias: AliasData


Effect = (
    LabelCreated
    | LabelStatusChanged
    | NodeCreated
    | NodeChanged
    | NodeStatusChanged
    | EdgePut
    | EdgeDeleted
    | AliasPut
    | LabelMoved
)


# --- state --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class KnowledgeState:
    """A project's knowledge as data: the graph and the pack documents (labels, clusters, policies…)."""

    graph: GraphData
    documents: dict[str, Any]


@dataclass
class Applied:
    """The state after a changeset and what the application did."""

    state: KnowledgeState
    effects: list[Effect] = field(default_factory=list)
    label_map: dict[str, str] = field(default_factory=dict)  # new:<ref> → LabelID
    skipped: int = 0

    @property
    def graph(self) -> GraphData:
        return self.state.graph

    @property
    def documents(self) -> dict[str, Any]:
        return self.state.documents

    @property
    def taxonomy_changed(self) -> bool:
        return any(isinstance(e, LabelCreated | LabelStatusChanged | LabelMoved) for e in self.effects)


def _unique(values: Any) -> tuple[str, ...]:
    return tuple(dict.fromkeys(values))


def label_record(
    *,
    label_id: str,
    name: str,
    cluster: str,
    parent: str | None,
    status: str,
    status_reason: str = "",
    description: str = "",
    synonyms: Any = (),
    examples: Any = (),
) -> dict[str, Any]:
    """A label as ``pack_export`` writes it (the same keys, in the same order)."""
    return {
        "id": label_id,
        "name": name,
        "cluster": cluster,
        "parent": parent or None,
        "status": status,
        **({"status_reason": status_reason} if status_reason else {}),
        "description": description,
        "synonyms": list(_unique(s for s in (str(x).strip() for x in synonyms) if s)),
        "examples": list(_unique(s for s in (str(x).strip() for x in examples) if s)),
    }


class _Interpreter:
    """One application of a changeset: the mutable copy of the state and the effects so far."""

    def __init__(
        self,
        state: KnowledgeState,
        *,
        reason: str,
        issued: Mapping[str, str],
        issue_label_id: Callable[[], str] | None,
    ) -> None:
        self.nodes: dict[str, NodeData] = {n.node_id: n for n in state.graph.nodes}
        self.edges: dict[tuple[str, str, str], EdgeData] = {e.key: e for e in state.graph.edges}
        self.aliases: dict[str, AliasData] = {a.source: a for a in state.graph.aliases}
        self.labels: list[dict[str, Any]] = [dict(label) for label in state.documents.get("labels", [])]
        self.by_id = {label["id"]: label for label in self.labels}
        self.documents = state.documents
        self.reason = reason
        self.issued = issued
        self.issue_label_id = issue_label_id
        self.out = Applied(state=state)
        self.handlers: dict[type, Callable[[Any], bool]] = {
            LabelAdd: self.label_add,
            LabelStatusSet: self.label_status,
            NodeAdd: self.node_add,
            NodeContentSet: self.node_content,
            NodeAttach: self.node_attach,
            NodeDetach: self.node_detach,
            NodeStatusSet: self.node_status,
            EdgeAdd: self.edge_add,
            EdgeSetWeight: self.edge_weight,
            EdgeRemove: self.edge_remove,
            AliasSet: self.alias_set,
            LabelMove: self.label_move,
        }

    # helpers

    def resolve(self, label: str) -> str:
        if label.startswith(NEW_LABEL_PREFIX):
            if label not in self.out.label_map:
                raise ChangesetConflict(f"{label} is used before its label_add")
            return self.out.label_map[label]
        return label

    def node(self, node_id: str) -> NodeData:
        if node_id not in self.nodes:
            raise ChangesetConflict(f"node {node_id} does not exist")
        return self.nodes[node_id]

    def emit(self, effect: Effect) -> bool:
        self.out.effects.append(effect)
        return True

    def change_node(self, current: NodeData, **changes: Any) -> bool:
        changes = {k: v for k, v in changes.items() if getattr(current, k) != v}
        if not changes:
            return False
        self.nodes[current.node_id] = replace(current, **changes)
        return self.emit(NodeChanged(current.node_id, changes))

    def next_label_id(self, ref: str) -> str:
        if ref in self.issued:
            return self.issued[ref]
        if self.issue_label_id is not None:
            return self.issue_label_id()
        numbers = [int(label["id"][1:]) for label in self.labels if label["id"][1:].isdigit()]
        return f"L{(max(numbers, default=0) + 1):05d}"

    # operations: each returns whether it changed anything

    def label_add(self, op: LabelAdd) -> bool:
        ref = NEW_LABEL_PREFIX + op.ref
        twin = next(
            (
                lab
                for lab in self.labels
                if op.parent
                and lab.get("parent") == op.parent
                and lab["cluster"] == op.cluster
                and lab["name"].strip().lower() == op.name.strip().lower()
                and lab["status"] != "DEPRECATED"
            ),
            None,
        )
        if twin is not None:  # the same child already exists (applied before): reuse it
            self.out.label_map[ref] = twin["id"]
            return False
        label_id = self.next_label_id(ref)
        if label_id in self.by_id:
            raise ChangesetConflict(f"LabelID {label_id} for {ref} is already taken")
        record = label_record(
            label_id=label_id,
            name=op.name.strip(),
            cluster=op.cluster,
            parent=op.parent,
            status=op.status,
            status_reason=self.reason[:500],
            description=op.description,
            synonyms=op.synonyms,
            examples=op.examples,
        )
        self.labels.append(record)
        self.by_id[label_id] = record
        self.out.label_map[ref] = label_id
        return self.emit(LabelCreated(record))

    def label_status(self, op: LabelStatusSet) -> bool:
        label = self.by_id.get(op.label_id)
        if label is None:
            raise ChangesetConflict(f"label {op.label_id} does not exist")
        if label["status"] == op.status:
            return False
        if op.status not in LABEL_TRANSITIONS.get(label["status"], frozenset()):
            raise ChangesetConflict(f"{op.label_id} cannot go from {label['status']} to {op.status}")
        reason = (op.reason or self.reason)[:500]
        updated = label_record(
            label_id=label["id"],
            name=label["name"],
            cluster=label["cluster"],
            parent=label.get("parent"),
            status=op.status,
            status_reason=reason,
            description=label.get("description", ""),
            synonyms=label.get("synonyms", ()),
            examples=label.get("examples", ()),
        )
        label.clear()
        label.update(updated)
        return self.emit(LabelStatusChanged(op.label_id, op.status, reason))

    def node_add(self, op: NodeAdd) -> bool:
        new = NodeData(
            node_id=op.node_id,
            type=op.type,
            title=op.title,
            chunk=op.chunk,
            risk=op.risk,
            labels=_unique(self.resolve(x) for x in op.labels),
            clusters=_unique(op.clusters),
            preconditions=op.preconditions,
            parameters=op.parameters,
            handler=op.handler,
            description=op.description,
            staff_notes=op.staff_notes,
        )
        current = self.nodes.get(op.node_id)
        if current is not None:
            if replace(current, embedding=None, status_reason="") != new:
                raise ChangesetConflict(f"node {op.node_id} already exists with other content")
            return False
        self.nodes[op.node_id] = new
        return self.emit(NodeCreated(new))

    def node_content(self, op: NodeContentSet) -> bool:
        current = self.node(op.node_id)
        given = {"title": op.title, "chunk": op.chunk, "risk": op.risk, "preconditions": op.preconditions}
        return self.change_node(current, **{k: v for k, v in given.items() if v is not None})

    def node_attach(self, op: NodeAttach) -> bool:
        current = self.node(op.node_id)
        return self.change_node(
            current,
            labels=_unique([*current.labels, *(self.resolve(x) for x in op.labels)]),
            clusters=_unique([*current.clusters, *op.clusters]),
        )

    def node_detach(self, op: NodeDetach) -> bool:
        current = self.node(op.node_id)
        dropped = {self.resolve(x) for x in op.labels}
        return self.change_node(
            current,
            labels=tuple(x for x in current.labels if x not in dropped),
            clusters=tuple(x for x in current.clusters if x not in set(op.clusters)),
        )

    def node_status(self, op: NodeStatusSet) -> bool:
        current = self.node(op.node_id)
        if current.status == op.status:
            return False
        if op.status not in STATUS_TRANSITIONS.get(current.status, frozenset()):
            raise ChangesetConflict(f"node {op.node_id} cannot go from {current.status} to {op.status}")
        self.nodes[op.node_id] = replace(current, status=op.status, status_reason=op.reason)
        return self.emit(NodeStatusChanged(op.node_id, op.status, op.reason))

    def edge_add(self, op: EdgeAdd) -> bool:
        self.node(op.source)
        self.node(op.target)
        new = EdgeData(op.source, op.target, op.type, op.weight, op.semantics)
        current = self.edges.get(op.key)
        if current == new:
            return False
        self.edges[op.key] = new
        return self.emit(EdgePut(new, existed=current is not None))

    def edge_weight(self, op: EdgeSetWeight) -> bool:
        current = self.edges.get(op.key)
        if current is None:
            raise ChangesetConflict(f"edge {'|'.join(op.key)} does not exist")
        if abs(current.weight - op.weight) <= 1e-9:
            return False
        self.edges[op.key] = replace(current, weight=op.weight)
        return self.emit(EdgePut(self.edges[op.key], existed=True))

    def edge_remove(self, op: EdgeRemove) -> bool:
        if self.edges.pop(op.key, None) is None:
            return False
        return self.emit(EdgeDeleted(op.key, (op.reason or self.reason)[:500]))

    def alias_set(self, op: AliasSet) -> bool:
        for target in op.targets:
            self.node(target)
        current = self.aliases.get(op.source)
        if current is not None and tuple(current.targets) == tuple(op.targets):
            return False
        self.aliases[op.source] = AliasData(op.source, tuple(op.targets), op.reason)
        return self.emit(AliasPut(self.aliases[op.source]))

    def label_move(self, op: LabelMove) -> bool:
        """Re-attach a label under ``op.parent`` (or at the root of ``op.cluster``); its subtree follows it
        into the cluster (``taxonomy.services.label_move`` writes the same)."""
        label = self.by_id.get(op.label_id)
        if label is None:
            raise ChangesetConflict(f"label {op.label_id} does not exist")
        parent = op.parent or None
        if parent is not None:
            record = self.by_id.get(parent)
            if record is None:
                raise ChangesetConflict(f"parent label {parent} does not exist")
            if record["cluster"] != op.cluster:
                raise ChangesetConflict(f"{parent} lives in {record['cluster']}, not in {op.cluster}")
        if label["cluster"] == op.cluster and (label.get("parent") or None) == parent:
            return False
        subtree, frontier = [op.label_id], [op.label_id]
        while frontier:
            children = [
                x["id"] for x in self.labels if x.get("parent") in frontier and x["id"] not in subtree
            ]
            subtree += children
            frontier = children
        if parent in subtree:
            raise ChangesetConflict(f"{op.label_id} cannot move under its own descendant {parent}")
        for label_id in subtree:
            self.by_id[label_id]["cluster"] = op.cluster
        label["parent"] = parent
        reason = (op.reason or self.reason)[:500]
        return self.emit(LabelMoved(op.label_id, op.cluster, parent, tuple(subtree), reason))

    def run(self, ops: tuple[Op, ...] | list[Op]) -> Applied:
        for op in ops:
            if not self.handlers[type(op)](op):
                self.out.skipped += 1
        graph = GraphData(
            nodes=tuple(sorted(self.nodes.values(), key=lambda n: n.node_id)),
            edges=tuple(sorted(self.edges.values(), key=lambda e: e.key)),
            aliases=tuple(sorted(self.aliases.values(), key=lambda a: a.source)),
        )
        labels = sorted(self.labels, key=lambda label: label["id"])
        self.out.state = KnowledgeState(graph=graph, documents={**self.documents, "labels": labels})
        return self.out


def changeset_apply(
    state: KnowledgeState,
    ops: tuple[Op, ...] | list[Op],
    *,
    reason: str = "",
    issued: Mapping[str, str] | None = None,
    issue_label_id: Callable[[], str] | None = None,
) -> Applied:
    """Apply ``ops`` in order to a copy of ``state``; raises ``ChangesetConflict`` when one cannot apply.

    ``reason`` is what the draft's audit trail and the labels' ``status_reason`` record for the change
    (the proposal's title), so the state in memory is the state the stores end up in.
    """
    return _Interpreter(state, reason=reason, issued=issued or {}, issue_label_id=issue_label_id).run(ops)
