"""What a proposal would change, computed without writing anything: the reviewer's "what" and "risks".

The changeset is applied in memory by the changeset interpreter (``review.changeset_apply``, the code
approval applies with) to the project's **draft** — the graph and taxonomy that approval writes to —
and the two states are compared: nodes added, moved along the lifecycle, rewritten or re-attached;
edges added, removed or reweighted; labels added or moved; redirections written. The risks are the
graph and taxonomy validators' findings on the result, the integrity test of ``review.integrity``
(no shortcut around a required check, no lost requirement, no lowered risk…), the Action nodes that
new paths reach, and the aliases and memories that point at the nodes the change touches.

A changeset that no longer applies to the draft (stale, or edited into a contradiction) is reported as
a *conflict*; ``ChangesetPreview.problems`` collects every refusal so that an edit or an approval can be
refused with all of them at once.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from arg_platform.errors import RuleViolation, Violation
from ontology.graph_arrays import arrays_to_graph, bundle_load
from ontology.models import ReleaseBundle
from ontology.releases import draft_state
from ontology.store.port import EdgeData, GraphData, NodeData
from projects.models import Project
from review.changeset import (
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
    changeset_load,
)
from review.changeset_apply import ChangesetConflict, KnowledgeState, changeset_apply
from review.integrity import ACTION_TYPES, CHECK_TYPES, integrity_violations
from review.loop.shadow import shadow_violations

PATH_HOPS = 3  # how far downstream of the changed nodes new paths are followed to Action nodes
MAX_PIVOTS = 3  # neighbourhood pictures per side


@dataclass(frozen=True)
class NodeChange:
    node_id: str
    title: str
    type: str
    change: str  # added | status | content | attachments
    before: dict[str, Any]
    after: dict[str, Any]


@dataclass(frozen=True)
class EdgeChange:
    source: str
    target: str
    type: str
    change: str  # added | removed | reweighted
    weight_before: float | None
    weight_after: float | None
    semantics: str = ""


@dataclass(frozen=True)
class LabelChange:
    label_id: str  # the issued LabelID (in the preview: the next free one) or the existing one
    name: str
    cluster: str
    parent: str | None
    parent_name: str
    status_before: str | None  # None: the label is new
    status_after: str


@dataclass(frozen=True)
class ActionOnPath:
    node_id: str
    title: str
    type: str
    risk: str
    guarded_by_check: bool  # a Clarify node sits on every new path to it


@dataclass
class ChangesetPreview:
    """The draft before and after the changeset, and everything the proposal page shows about it."""

    ops: tuple[Op, ...] = ()
    before: GraphData = field(default_factory=GraphData)
    after: GraphData = field(default_factory=GraphData)
    documents: dict[str, Any] = field(default_factory=dict)
    label_names: dict[str, str] = field(default_factory=dict)
    label_map: dict[str, str] = field(default_factory=dict)
    load_error: RuleViolation | None = None
    conflict: str = ""
    validator_findings: list[Violation] = field(default_factory=list)
    integrity_findings: list[Violation] = field(default_factory=list)
    node_changes: list[NodeChange] = field(default_factory=list)
    edge_changes: list[EdgeChange] = field(default_factory=list)
    label_changes: list[LabelChange] = field(default_factory=list)
    aliases: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    actions_on_new_paths: list[ActionOnPath] = field(default_factory=list)
    before_pivots: list[str] = field(default_factory=list)
    after_pivots: list[str] = field(default_factory=list)

    @property
    def applies(self) -> bool:
        return self.load_error is None and not self.conflict

    @property
    def problems(self) -> list[Violation]:
        """Why the changeset cannot be approved as it stands (empty: it can)."""
        if self.load_error is not None:
            return list(self.load_error.violations)
        if self.conflict:
            return [Violation("review.apply_conflict", self.conflict, "changeset")]
        return [*self.validator_findings, *self.integrity_findings]

    def raise_if_problems(self) -> None:
        problems = self.problems
        if problems:
            raise RuleViolation(problems)

    @property
    def added_nodes(self) -> set[str]:
        return {c.node_id for c in self.node_changes if c.change == "added"}

    @property
    def added_edges(self) -> set[tuple[str, str, str]]:
        return {(c.source, c.target, c.type) for c in self.edge_changes if c.change == "added"}

    @property
    def removed_edges(self) -> set[tuple[str, str, str]]:
        return {(c.source, c.target, c.type) for c in self.edge_changes if c.change == "removed"}

    def before_node_type(self, node_id: str) -> str:
        node = next((n for n in self.before.nodes if n.node_id == node_id), None)
        return node.type if node is not None else ""

    @property
    def touched_nodes(self) -> list[str]:
        seen: dict[str, None] = {}
        for op in self.ops:
            for node_id in sorted(op.nodes()):
                seen.setdefault(node_id, None)
        return list(seen)


def _node_fields(node: NodeData) -> dict[str, Any]:
    return {
        "title": node.title,
        "chunk": node.chunk,
        "description": node.description,
        "staff_notes": node.staff_notes,
        "risk": node.risk,
        "status": node.status,
        "labels": list(node.labels),
        "clusters": list(node.clusters),
        "preconditions": list(node.preconditions),
    }


def _node_changes(
    before: dict[str, NodeData], after: dict[str, NodeData], order: list[str]
) -> list[NodeChange]:
    rows: list[NodeChange] = []
    for node_id in order:
        old, new = before.get(node_id), after.get(node_id)
        if new is None:
            continue
        if old is None:
            shown = {k: v for k, v in _node_fields(new).items() if v not in ("", [], None)}
            rows.append(NodeChange(node_id, new.title, new.type, "added", {}, shown))
            continue
        a, b = _node_fields(old), _node_fields(new)
        groups = (
            ("status", ("status",)),
            ("content", ("title", "chunk", "description", "staff_notes", "risk", "preconditions")),
            ("attachments", ("labels", "clusters")),
        )
        for change, keys in groups:
            diff = [k for k in keys if a[k] != b[k]]
            if diff:
                rows.append(
                    NodeChange(
                        node_id,
                        new.title,
                        new.type,
                        change,
                        {k: a[k] for k in diff},
                        {k: b[k] for k in diff},
                    )
                )
    return rows


def _edge_changes(before: GraphData, after: GraphData) -> list[EdgeChange]:
    old = {e.key: e for e in before.edges}
    new = {e.key: e for e in after.edges}
    rows: list[EdgeChange] = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if a is None and b is not None:
            rows.append(EdgeChange(*key, "added", None, b.weight, b.semantics))
        elif b is None and a is not None:
            rows.append(EdgeChange(*key, "removed", a.weight, None, a.semantics))
        elif a is not None and b is not None and abs(a.weight - b.weight) > 1e-9:
            rows.append(EdgeChange(*key, "reweighted", a.weight, b.weight, b.semantics))
    return rows


def _label_changes(
    ops: Iterable[Op], before_docs: dict[str, Any], after_docs: dict[str, Any], label_map: dict[str, str]
) -> list[LabelChange]:
    old = {label["id"]: label for label in before_docs.get("labels", [])}
    new = {label["id"]: label for label in after_docs.get("labels", [])}
    ids: list[str] = []
    for op in ops:
        if isinstance(op, LabelAdd):
            ids.append(label_map.get(f"new:{op.ref}", ""))
        elif isinstance(op, LabelStatusSet | LabelMove):
            ids.append(op.label_id)
    rows = []
    for label_id in dict.fromkeys(i for i in ids if i):
        label = new.get(label_id)
        if label is None:
            continue
        parent = label.get("parent")
        rows.append(
            LabelChange(
                label_id=label_id,
                name=label["name"],
                cluster=label["cluster"],
                parent=parent,
                parent_name=new.get(parent, {}).get("name", "") if parent else "",
                status_before=old[label_id]["status"] if label_id in old else None,
                status_after=label["status"],
            )
        )
    return rows


def _pivots(ops: Iterable[Op]) -> list[str]:
    """The nodes a picture is centred on: what the change is *about*, not every edge endpoint — the
    nodes of redirections and lifecycle moves (split parent and children, merge pair) when there are
    some, else the nodes added or rewritten, else the sources of edge changes."""
    ops = list(ops)
    tiers: list[list[str]] = [[], [], []]
    for op in ops:
        if isinstance(op, AliasSet):
            tiers[0] += [op.source, *op.targets]
        elif isinstance(op, NodeStatusSet):
            tiers[0].append(op.node_id)
        elif isinstance(op, NodeAdd | NodeContentSet | NodeAttach | NodeDetach):
            tiers[1].append(op.node_id)
        elif isinstance(op, EdgeAdd | EdgeSetWeight | EdgeRemove):
            tiers[2].append(op.source)
    first = next((tier for tier in tiers if tier), [])
    return list(dict.fromkeys(first))


def _downstream(graph: GraphData, starts: set[str], hops: int) -> dict[str, bool]:
    """Nodes reachable from ``starts`` within ``hops`` moves over ACTIVE nodes and non-inhibitory edges,
    each with whether every path found to it passed a Clarify node (a check)."""
    nodes = {n.node_id: n for n in graph.nodes}
    outgoing: dict[str, list[str]] = {}
    for e in graph.edges:
        if e.weight > -0.01:
            outgoing.setdefault(e.source, []).append(e.target)
    checked: dict[str, bool] = {}
    frontier = deque((s, 0, False) for s in sorted(starts) if s in nodes)
    while frontier:
        current, depth, through_check = frontier.popleft()
        if depth >= hops:
            continue
        for target in outgoing.get(current, ()):
            node = nodes.get(target)
            if node is None or node.status != "ACTIVE":
                continue
            passed = through_check or nodes[current].type in CHECK_TYPES
            if target in checked:
                if checked[target] and not passed:
                    checked[target] = False
                    frontier.append((target, depth + 1, passed))
                continue
            checked[target] = passed
            frontier.append((target, depth + 1, passed))
    return checked


def _actions_on_new_paths(preview: ChangesetPreview) -> list[ActionOnPath]:
    starts = set(preview.touched_nodes)
    before = _downstream(preview.before, starts, PATH_HOPS)
    after = _downstream(preview.after, starts, PATH_HOPS)
    nodes = {n.node_id: n for n in preview.after.nodes}
    rows = []
    for node_id, checked in sorted(after.items()):
        node = nodes[node_id]
        if node.type not in ACTION_TYPES:
            continue
        newly = node_id not in before or (before[node_id] and not checked)
        if newly or node_id in preview.added_nodes:
            rows.append(ActionOnPath(node_id, node.title, node.type, node.risk, checked))
    for change in preview.edge_changes:  # an Action that a new edge points to directly
        target = nodes.get(change.target)
        if (
            change.change == "added"
            and target is not None
            and target.type in ACTION_TYPES
            and all(r.node_id != target.node_id for r in rows)
        ):
            checked = preview.before_node_type(change.source) in CHECK_TYPES
            rows.append(ActionOnPath(target.node_id, target.title, target.type, target.risk, checked))
    return rows


def release_state(release: Any) -> tuple[GraphData, dict[str, Any]]:
    """A release's frozen graph and documents (to show an applied proposal against what it changed)."""
    blob = ReleaseBundle.objects.values_list("blob", flat=True).get(release_id=release.pk)
    bundle = bundle_load(bytes(blob))
    return arrays_to_graph(bundle.arrays), dict(bundle.documents)


def changeset_preview(
    *, project: Project, changeset: Any, base: tuple[GraphData, dict[str, Any]] | None = None
) -> ChangesetPreview:
    """Apply ``changeset`` (the stored JSON list) to a copy of ``base`` — the draft unless given (e.g. the
    release an applied proposal started from) — and describe the difference."""
    preview = ChangesetPreview()
    try:
        preview.ops = changeset_load(changeset)
    except RuleViolation as exc:
        preview.load_error = exc
        return preview
    if base is None:
        preview.before, preview.documents = draft_state(project)
    else:
        preview.before, preview.documents = base
    preview.label_names = {label["id"]: label["name"] for label in preview.documents.get("labels", [])}
    try:
        applied = changeset_apply(KnowledgeState(preview.before, preview.documents), preview.ops)
    except ChangesetConflict as exc:
        preview.conflict = str(exc)
        preview.after = preview.before
        return preview
    preview.after = applied.graph
    preview.label_map = dict(applied.label_map)
    preview.label_names.update({label["id"]: label["name"] for label in applied.documents.get("labels", [])})
    preview.validator_findings = list(shadow_violations(applied))
    preview.integrity_findings = integrity_violations(
        preview.before, preview.after, preview.ops, documents=applied.documents
    )
    before_nodes = {n.node_id: n for n in preview.before.nodes}
    after_nodes = {n.node_id: n for n in preview.after.nodes}
    preview.node_changes = _node_changes(before_nodes, after_nodes, preview.touched_nodes)
    preview.edge_changes = _edge_changes(preview.before, preview.after)
    preview.label_changes = _label_changes(
        preview.ops, preview.documents, applied.documents, preview.label_map
    )
    preview.aliases = [(op.source, tuple(op.targets)) for op in preview.ops if isinstance(op, AliasSet)]
    preview.actions_on_new_paths = _actions_on_new_paths(preview)
    pivots = _pivots(preview.ops)
    preview.before_pivots = [n for n in pivots if n in before_nodes and before_nodes[n].status != "REMOVED"][
        :MAX_PIVOTS
    ]
    active_after = [n for n in pivots if n in after_nodes and after_nodes[n].status == "ACTIVE"]
    preview.after_pivots = (active_after or [n for n in pivots if n in after_nodes])[:MAX_PIVOTS]
    return preview


def neighbourhood_of(
    graph: GraphData, center: str, *, limit: int
) -> tuple[tuple[NodeData, ...], tuple[EdgeData, ...]]:
    """``center`` and its direct neighbours (both directions) in ``graph``, at most ``limit`` nodes."""
    nodes = {n.node_id: n for n in graph.nodes}
    order = [center]
    for edge in graph.edges:
        if len(order) >= limit:
            break
        if center in (edge.source, edge.target):
            other = edge.target if edge.source == center else edge.source
            if other in nodes and other not in order:
                order.append(other)
    keep = set(order)
    edges = tuple(e for e in graph.edges if e.source in keep and e.target in keep)
    return tuple(nodes[n] for n in order), edges
