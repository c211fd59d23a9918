"""Changesets: the typed operations a proposal applies to a project's knowledge (ARG §3 steps B and E).

A changeset is an ordered tuple of operations against the active release. Each operation is a frozen
dataclass with a stable ``op`` name; ``changeset_dump`` turns a changeset into the JSON list stored in
``Proposal.changeset`` and ``changeset_load`` reads it back, refusing unknown operations or malformed
fields with a ``RuleViolation`` (a reviewer's edit goes through the same door).

One interpreter decides what the operations do, ``review.changeset_apply``: replay applies them in
memory to the active release and freezes a shadow release (step C); approval applies them to the same
release and to the draft, writes the draft's effects through the ontology and taxonomy services, and
publishes the release built exactly as the shadow was (step E, ``review.loop.application``).

Operations (``op`` names in brackets):

``NodeAdd`` [node_add]
    Create an ACTIVE node with all its content (title, chunk, description, staff notes, attachments,
    Action fields). Split children, the merged node AB of a merge and semantic nodes promoted from
    memory are created this way, *before* anything is deprecated (children first). ``labels`` may name
    a label created earlier in the same changeset as ``new:<ref>``.
``NodeContentSet`` [node_content]
    Overwrite a node's title, chunk, risk or preconditions (``None`` keeps the field).
``NodeAttach`` / ``NodeDetach`` [node_attach / node_detach]
    Add or remove node ↔ label (LabelIDs or ``new:<ref>``) and node ↔ cluster attachments.
``NodeStatusSet`` [node_status]
    Move a node along the lifecycle ACTIVE → DEPRECATED → REMOVED (§3.5) with a reason; a split parent
    and a merged duplicate go to DEPRECATED and stay there for an observation window.
``EdgeAdd`` [edge_add]
    Add a typed directed edge (detour shortcut, co-activation, redistributed split/merge edge).
``EdgeSetWeight`` [edge_weight]
    Set an existing edge's weight (a weight learned from outcomes); a weight ≤ −0.01 makes it
    inhibitory — a hard veto in traversal. ``previous`` records the weight the proposal was computed on.
``EdgeRemove`` [edge_remove]
    Delete an edge.
``AliasSet`` [alias_set]
    Write the split/merge redirection (§3.5.5) that alias-safe MemoryRead follows: split A → {B, C};
    merge A → {AB} and B → {AB}.
``LabelAdd`` [label_add]
    Child-label-first taxonomy addition (§3.2.4.1): a new label under ``parent`` in ``cluster``. Its
    LabelID is issued only when it is applied (LabelIDs are never reused), so other operations of the
    changeset reference it as ``new:<ref>``. It is created CANDIDATE and moved to ``status`` (SHADOW by
    default: evaluated on live traffic without affecting routing).
``LabelStatusSet`` [label_status]
    Move an existing label along CANDIDATE → SHADOW → ACTIVE (a SHADOW → ACTIVE promotion after shadow
    evaluation) or to DEPRECATED.
``LabelMove`` [label_move]
    Re-attach an existing label (and its subtree) under another ``parent`` (a LabelID) or at the root of
    ``cluster`` (§3.2.4 "reattaching a label under the correct cluster parent"). A child lives in its
    parent's cluster, so ``cluster`` must be the parent's; LabelIDs never change, only paths.

``changeset_fingerprint`` hashes the proposal kind and the *structural identity* of each operation
(ids, types, attachments, statuses, the weight tier — not generated titles, chunks or reasons), so the
same structural change proposed on two nights has the same fingerprint and a rejected one is not
proposed again unchanged.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import MISSING, dataclass, fields
from typing import Any, ClassVar

from arg_platform.errors import RuleViolation, Violation
from arg_platform.storable_text import storable_text, unstorable_paths
from arg_platform.vocabulary import EDGE_TYPES, NODE_TYPES, NodeStatus, RiskLevel
from ontology.store.port import ParameterSpec, parameter_from_json

NEW_LABEL_PREFIX = "new:"
LABEL_STATUSES = ("CANDIDATE", "SHADOW", "ACTIVE", "DEPRECATED")
RISK_ORDER = {RiskLevel.LOW.value: 0, RiskLevel.MEDIUM.value: 1, RiskLevel.HIGH.value: 2}


def weight_tier(weight: float) -> str:
    """The tier of an edge weight: reflex ≥ 0.6, habitual 0.2–0.6, dormant < 0.2, inhibitory ≤ −0.01 (a hard veto)."""
    if weight <= -0.01:
        return "inhibitory"
    if weight >= 0.6:
        return "reflex"
    if weight >= 0.2:
        return "habitual"
    return "dormant"


def is_new_label(ref: str) -> bool:
    return ref.startswith(NEW_LABEL_PREFIX)


@dataclass(frozen=True)
class NodeAdd:
    """Create an ACTIVE node (children first for a split; the merged node AB; InfoUnit-first semantic
    node). ``chunk`` is the client text, ``description`` and ``staff_notes`` the curators' and staff's
    texts (``ontology.store.port.NodeData``)."""

    op: ClassVar[str] = "node_add"
    node_id: str
    type: str
    title: str
    chunk: str
    risk: str = RiskLevel.LOW.value
    labels: tuple[str, ...] = ()
    clusters: tuple[str, ...] = ()
    preconditions: tuple[str, ...] = ()
    parameters: tuple[ParameterSpec, ...] = ()
    handler: str = ""
    description: str = ""
    staff_notes: str = ""

    def identity(self) -> list[Any]:
        return [self.op, self.node_id, self.type, sorted(self.labels), sorted(self.clusters)]

    def nodes(self) -> set[str]:
        return {self.node_id}


@dataclass(frozen=True)
class NodeContentSet:
    """Overwrite a node's title / chunk / risk / preconditions (None keeps the current value)."""

    op: ClassVar[str] = "node_content"
    node_id: str
    title: str | None = None
    chunk: str | None = None
    risk: str | None = None
    preconditions: tuple[str, ...] | None = None

    def identity(self) -> list[Any]:
        pre = None if self.preconditions is None else sorted(self.preconditions)
        return [self.op, self.node_id, self.risk, pre]

    def nodes(self) -> set[str]:
        return {self.node_id}


@dataclass(frozen=True)
class NodeAttach:
    """Add node ↔ label and node ↔ cluster attachments."""

    op: ClassVar[str] = "node_attach"
    node_id: str
    labels: tuple[str, ...] = ()
    clusters: tuple[str, ...] = ()

    def identity(self) -> list[Any]:
        return [self.op, self.node_id, sorted(self.labels), sorted(self.clusters)]

    def nodes(self) -> set[str]:
        return {self.node_id}


@dataclass(frozen=True)
class NodeDetach:
    """Remove node ↔ label and node ↔ cluster attachments."""

    op: ClassVar[str] = "node_detach"
    node_id: str
    labels: tuple[str, ...] = ()
    clusters: tuple[str, ...] = ()

    def identity(self) -> list[Any]:
        return [self.op, self.node_id, sorted(self.labels), sorted(self.clusters)]

    def nodes(self) -> set[str]:
        return {self.node_id}


@dataclass(frozen=True)
class NodeStatusSet:
    """Move a node along ACTIVE → DEPRECATED → REMOVED with a reason."""

    op: ClassVar[str] = "node_status"
    node_id: str
    status: str
    reason: str

    def identity(self) -> list[Any]:
        return [self.op, self.node_id, self.status]

    def nodes(self) -> set[str]:
        return {self.node_id}


@dataclass(frozen=True)
class EdgeAdd:
    """Add a typed directed edge."""

    op: ClassVar[str] = "edge_add"
    source: str
    target: str
    type: str
    weight: float = 1.0
    semantics: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.source, self.target, self.type)

    def identity(self) -> list[Any]:
        return [self.op, self.source, self.target, self.type, weight_tier(self.weight)]

    def nodes(self) -> set[str]:
        return {self.source, self.target}


@dataclass(frozen=True)
class EdgeSetWeight:
    """Set an existing edge's weight; ≤ −0.01 is inhibitory (hard veto). ``previous`` is informative."""

    op: ClassVar[str] = "edge_weight"
    source: str
    target: str
    type: str
    weight: float
    previous: float | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.source, self.target, self.type)

    def identity(self) -> list[Any]:
        return [self.op, self.source, self.target, self.type, weight_tier(self.weight)]

    def nodes(self) -> set[str]:
        return {self.source, self.target}


@dataclass(frozen=True)
class EdgeRemove:
    """Delete an edge."""

    op: ClassVar[str] = "edge_remove"
    source: str
    target: str
    type: str
    reason: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.source, self.target, self.type)

    def identity(self) -> list[Any]:
        return [self.op, self.source, self.target, self.type]

    def nodes(self) -> set[str]:
        return {self.source, self.target}


@dataclass(frozen=True)
class AliasSet:
    """Write the redirection ``source`` → ``targets`` (split A → {B, C}; merge A → {AB}, B → {AB})."""

    op: ClassVar[str] = "alias_set"
    source: str
    targets: tuple[str, ...]
    reason: str = ""

    def identity(self) -> list[Any]:
        return [self.op, self.source, list(self.targets)]

    def nodes(self) -> set[str]:
        return {self.source, *self.targets}


@dataclass(frozen=True)
class LabelAdd:
    """A new child label (created CANDIDATE, then moved to ``status``); referenced as ``new:<ref>``."""

    op: ClassVar[str] = "label_add"
    ref: str
    name: str
    cluster: str
    parent: str | None
    description: str = ""
    synonyms: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()
    status: str = "SHADOW"

    def identity(self) -> list[Any]:
        return [
            self.op,
            self.ref,
            self.cluster,
            self.parent,
            " ".join(self.name.lower().split()),
            self.status,
        ]

    def nodes(self) -> set[str]:
        return set()


@dataclass(frozen=True)
class LabelStatusSet:
    """Move an existing label along its lifecycle (SHADOW → ACTIVE promotion, or DEPRECATED)."""

    op: ClassVar[str] = "label_status"
    label_id: str
    status: str
    reason: str = ""

    def identity(self) -> list[Any]:
        return [self.op, self.label_id, self.status]

    def nodes(self) -> set[str]:
        return set()


@dataclass(frozen=True)
class LabelMove:
    """Re-attach an existing label (with its subtree) under ``parent``, or at the root of ``cluster``."""

    op: ClassVar[str] = "label_move"
    label_id: str
    cluster: str
    parent: str | None = None
    reason: str = ""

    def identity(self) -> list[Any]:
        return [self.op, self.label_id, self.cluster, self.parent]

    def nodes(self) -> set[str]:
        return set()


Op = (
    NodeAdd
    | NodeContentSet
    | NodeAttach
    | NodeDetach
    | NodeStatusSet
    | EdgeAdd
    | EdgeSetWeight
    | EdgeRemove
    | AliasSet
    | LabelAdd
    | LabelStatusSet
    | LabelMove
)
OP_TYPES: dict[str, type] = {
    cls.op: cls
    for cls in (
        NodeAdd,
        NodeContentSet,
        NodeAttach,
        NodeDetach,
        NodeStatusSet,
        EdgeAdd,
        EdgeSetWeight,
        EdgeRemove,
        AliasSet,
        LabelAdd,
        LabelStatusSet,
        LabelMove,
    )
}
Changeset = tuple[Op, ...]

_TUPLE_FIELDS = {"labels", "clusters", "preconditions", "targets", "synonyms", "examples"}
_FLOAT_FIELDS = {"weight", "previous"}


# --- JSON ---------------------------------------------------------------------------------------------


def op_dump(op: Op) -> dict[str, Any]:
    """One operation as JSON: ``{"op": name, field: value, …}`` (tuples become lists)."""
    out: dict[str, Any] = {"op": op.op}
    for f in fields(op):
        value = getattr(op, f.name)
        if f.name == "parameters":
            value = [
                {"name": p.name, "type": p.type, "required": p.required, "description": p.description}
                for p in value
            ]
        elif isinstance(value, tuple):
            value = list(value)
        out[f.name] = value
    return out


def changeset_dump(ops: Iterable[Op]) -> list[dict[str, Any]]:
    return [op_dump(op) for op in ops]


def _bad(index: int, message: str, field: str = "changeset") -> Violation:
    return Violation("review.changeset", f"operation {index}: {message}", field, f"changeset[{index}]")


PARAMETER_KEYS = frozenset(
    {"name", "type", "required", "description", "pattern", "values", "synonyms", "source"}
)


def _coerce(index: int, name: str, value: Any, violations: list[Violation]) -> Any:
    if name == "parameters":
        if not isinstance(value, list):
            violations.append(_bad(index, "parameters must be a list"))
            return ()
        unknown = [sorted(set(p) - PARAMETER_KEYS) for p in value if isinstance(p, dict)]
        if not all(isinstance(p, dict) and "name" in p for p in value) or any(unknown):
            violations.append(_bad(index, f"bad parameter: keys are {', '.join(sorted(PARAMETER_KEYS))}"))
            return ()
        return tuple(parameter_from_json(p) for p in value)
    if name in _TUPLE_FIELDS:
        if value is None and name == "preconditions":
            return None
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            violations.append(_bad(index, f"{name} must be a list of strings"))
            return ()
        return tuple(value)
    if name in _FLOAT_FIELDS:
        if value is None and name == "previous":
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            violations.append(_bad(index, f"{name} must be a number"))
            return 0.0
        return float(value)
    if value is not None and not isinstance(value, str):
        violations.append(_bad(index, f"{name} must be a string"))
        return ""
    return value


def _check_values(index: int, op: Op, violations: list[Violation]) -> None:
    if isinstance(op, NodeAdd) and op.type not in NODE_TYPES:
        violations.append(_bad(index, f"unknown node type {op.type!r}"))
    if isinstance(op, NodeAdd | NodeContentSet) and op.risk is not None and op.risk not in RISK_ORDER:
        violations.append(_bad(index, f"unknown risk {op.risk!r}"))
    if isinstance(op, EdgeAdd | EdgeSetWeight | EdgeRemove):
        if op.type not in EDGE_TYPES:
            violations.append(_bad(index, f"unknown edge type {op.type!r}"))
        if op.source == op.target:
            violations.append(_bad(index, "an edge cannot join a node to itself"))
    if isinstance(op, EdgeAdd | EdgeSetWeight) and not -1.0 <= op.weight <= 1.0:
        violations.append(_bad(index, "a weight lies in [-1, 1]"))
    if isinstance(op, NodeStatusSet):
        if op.status not in {s.value for s in NodeStatus}:
            violations.append(_bad(index, f"unknown node status {op.status!r}"))
        if op.status != NodeStatus.ACTIVE and not op.reason.strip():
            violations.append(_bad(index, "a lifecycle move needs a reason"))
    if isinstance(op, LabelAdd | LabelStatusSet) and op.status not in LABEL_STATUSES:
        violations.append(_bad(index, f"unknown label status {op.status!r}"))
    if isinstance(op, LabelAdd) and not op.name.strip():
        violations.append(_bad(index, "a label needs a name"))
    if isinstance(op, LabelMove):
        if not op.label_id.strip() or not op.cluster.strip():
            violations.append(_bad(index, "a label move names the label and its new cluster"))
        if op.parent == op.label_id:
            violations.append(_bad(index, "a label cannot be its own parent"))
    if isinstance(op, AliasSet) and (not op.targets or op.source in op.targets):
        violations.append(_bad(index, "an alias names at least one target other than its source"))


def changeset_load(data: Any) -> Changeset:
    """Read a stored changeset; ``RuleViolation`` (nothing partial) on any malformed operation."""
    if not isinstance(data, list):
        raise RuleViolation(Violation("review.changeset", "a changeset is a list of operations", "changeset"))
    violations: list[Violation] = []
    ops: list[Op] = []
    positions: list[int] = []
    refs: set[str] = set()
    for index, item in enumerate(data):
        if not isinstance(item, Mapping) or item.get("op") not in OP_TYPES:
            name = item.get("op") if isinstance(item, Mapping) else None
            violations.append(_bad(index, f"unknown operation {name!r}"))
            continue
        unstorable = list(unstorable_paths(item))
        if unstorable:  # no database stores them (PostgreSQL's jsonb refuses NUL)
            where = storable_text(", ".join(unstorable))  # the message must not carry them either
            violations.append(_bad(index, f"NUL or lone surrogate character in {where}"))
            continue
        cls = OP_TYPES[item["op"]]
        known = {f.name: f for f in fields(cls)}
        extra = set(item) - set(known) - {"op"}
        if extra:
            violations.append(_bad(index, f"unknown field(s) {', '.join(sorted(extra))}"))
            continue
        kwargs: dict[str, Any] = {}
        missing = []
        for name, f in known.items():
            if name in item:
                kwargs[name] = _coerce(index, name, item[name], violations)
            elif f.default is MISSING and f.default_factory is MISSING:
                missing.append(name)
        if missing:
            violations.append(_bad(index, f"missing field(s) {', '.join(missing)}"))
            continue
        op = cls(**kwargs)
        _check_values(index, op, violations)
        if isinstance(op, LabelAdd):
            if op.ref in refs:
                violations.append(_bad(index, f"label ref {op.ref!r} is used twice"))
            refs.add(op.ref)
        ops.append(op)
        positions.append(index)
    for index, op in zip(positions, ops, strict=True):
        labels = getattr(op, "labels", ()) or ()
        for label in labels:
            if is_new_label(label) and label.removeprefix(NEW_LABEL_PREFIX) not in refs:
                violations.append(_bad(index, f"{label} names no label_add of this changeset"))
    if violations:
        raise RuleViolation(violations)
    return tuple(ops)


# --- derived values -----------------------------------------------------------------------------------


def changeset_fingerprint(kind: str, ops: Sequence[Op]) -> str:
    """sha256 of the kind and the sorted structural identities of the operations (see module doc)."""
    identities = sorted(json.dumps(op.identity(), sort_keys=True) for op in ops)
    payload = json.dumps([kind, identities], separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def changeset_targets(ops: Sequence[Op]) -> list[str]:
    """Node ids and LabelIDs the changeset touches (``new:`` refs excluded), sorted."""
    keys: set[str] = set()
    for op in ops:
        keys |= op.nodes()
        if isinstance(op, LabelStatusSet | LabelMove):
            keys.add(op.label_id)
        if isinstance(op, LabelMove) and op.parent:
            keys.add(op.parent)
        if isinstance(op, LabelAdd) and op.parent:
            keys.add(op.parent)
        for label in getattr(op, "labels", ()) or ():
            if not is_new_label(label):
                keys.add(label)
    return sorted(keys)


def changeset_edit_cost(ops: Sequence[Op]) -> float:
    """The edit-path cost of a changeset (geDIG ΔEPC before normalisation).

    Unit costs: creating or lifecycle-moving a node 1, a label 1 (created, moved or re-attached), an edge
    add/remove 1, an alias 0.5, each attachment change 0.25, a content rewrite 0.5, a weight change |Δw| (at least 0.1).
    """
    cost = 0.0
    for op in ops:
        if isinstance(
            op, NodeAdd | NodeStatusSet | LabelAdd | LabelStatusSet | LabelMove | EdgeAdd | EdgeRemove
        ):
            cost += 1.0
        elif isinstance(op, AliasSet):
            cost += 0.5
        elif isinstance(op, NodeAttach | NodeDetach):
            cost += 0.25 * (len(op.labels) + len(op.clusters))
        elif isinstance(op, NodeContentSet):
            cost += 0.5
        elif isinstance(op, EdgeSetWeight):
            cost += max(0.1, abs(op.weight - (op.previous if op.previous is not None else 0.0)))
    return cost
