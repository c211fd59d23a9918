"""The integrity test of structural changes (ARG §3.2.2 security protection, §3.5.2 merge lifecycle).

A merge (or a split) must never open a *shortcut that bypasses a required check*. ``integrity_violations``
compares the graph before and after a changeset and reports, as ``Violation`` rows:

``integrity.unguarded_reach``
    A *guarded* node — an ACTIVE Action / DirectAction that is medium or high risk, has preconditions or
    REQUIRES something — becomes reachable, through ACTIVE nodes and without passing a Clarify node (a
    check), from a node that could not reach it so before (path length plays no part: a shortcut that
    only shortens an existing unguarded route is not a bypass). Guarded nodes within ``hops`` moves
    downstream of the changed nodes are examined. Nodes are compared through their lineage: a split
    child stands for its parent, a merged node for the nodes merged into it (a merge A + B → AB writes
    the aliases A → (AB,) and B → (AB,); an alias with one target is read as a merge into it, one with
    several new targets as a split).
``integrity.requirement_lost``
    A guarded node lost a REQUIRES edge: its requirement was merged into it, deprecated, or removed
    without a redirection to a live node that it still requires.
``integrity.risk_lowered``
    A merged node carries a lower risk than one of the nodes merged into it.
``integrity.type_family``
    A merge fuses an Action with a non-Action node (an informational landing would execute).
``integrity.policy_exposure``
    A merged node is admitted by a policy that did not admit one of the nodes merged into it (their
    content would reach a role that could not see it).

The checks read graphs and policy documents only, so the merge generator runs them before proposing
(refusing unsafe merges) and the lifecycle application runs them on the draft after applying a
changeset (refusing to publish).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from arg_platform.errors import Violation
from inference.runtime import taxonomy_view_from_documents
from inference.steps.policy_manager import compile_policy
from ontology.store.port import GraphData, NodeData
from review.changeset import RISK_ORDER, AliasSet, NodeAdd, Op

ACTION_TYPES = frozenset({"Action", "DirectAction"})
CHECK_TYPES = frozenset({"Clarify"})
DEFAULT_HOPS = 6
MAX_VISITED = 200_000


@dataclass(frozen=True)
class Lineage:
    """Where the nodes of the after-graph come from: split children → parent, merged node → the nodes
    merged into it."""

    merged_into: Mapping[str, str]  # merged node (A or B) → the node it lives on in (AB)
    split_children: Mapping[str, tuple[str, ...]]  # parent → children

    @classmethod
    def from_ops(cls, ops: Iterable[Op]) -> Lineage:
        ops = tuple(ops)
        added = {op.node_id for op in ops if isinstance(op, NodeAdd)}
        merged: dict[str, str] = {}
        split: dict[str, tuple[str, ...]] = {}
        for op in ops:
            if not isinstance(op, AliasSet):
                continue
            if len(op.targets) == 1:
                merged[op.source] = op.targets[0]
            elif set(op.targets) <= added:
                split[op.source] = tuple(op.targets)
        return cls(merged_into=merged, split_children=split)

    def origins(self, node_id: str) -> set[str]:
        out = {node_id}
        out |= {dup for dup, survivor in self.merged_into.items() if survivor == node_id}
        out |= {parent for parent, children in self.split_children.items() if node_id in children}
        return out


class _Index:
    def __init__(self, graph: GraphData) -> None:
        self.nodes: dict[str, NodeData] = {n.node_id: n for n in graph.nodes}
        self.incoming: dict[str, list[str]] = {}
        self.outgoing: dict[str, list[tuple[str, str, float]]] = {}
        for e in graph.edges:
            self.outgoing.setdefault(e.source, []).append((e.target, e.type, e.weight))
            if e.weight > -0.01:  # an inhibitory edge is a veto, not a move
                self.incoming.setdefault(e.target, []).append(e.source)

    def active(self, node_id: str) -> bool:
        node = self.nodes.get(node_id)
        return node is not None and node.status == "ACTIVE"

    def guarded(self, node_id: str) -> bool:
        node = self.nodes.get(node_id)
        if node is None or node.status != "ACTIVE" or node.type not in ACTION_TYPES:
            return False
        requires = any(t == "REQUIRES" for _, t, _ in self.outgoing.get(node_id, ()))
        return RISK_ORDER.get(node.risk, 0) >= 1 or bool(node.preconditions) or requires

    def unguarded_sources(self, target: str) -> set[str]:
        """Nodes that reach ``target`` through ACTIVE, non-Clarify intermediates (a Clarify node is
        itself a source — it asks before moving on — but nothing reaches the target *through* it)."""
        seen: set[str] = set()
        frontier = deque([target])
        while frontier and len(seen) < MAX_VISITED:
            current = frontier.popleft()
            for source in self.incoming.get(current, ()):
                if source in seen or source == target or not self.active(source):
                    continue
                seen.add(source)
                if self.nodes[source].type not in CHECK_TYPES:
                    frontier.append(source)
        return seen

    def downstream(self, starts: Iterable[str], hops: int) -> set[str]:
        out = set(starts)
        frontier = deque((s, 0) for s in out)
        while frontier:
            current, depth = frontier.popleft()
            if depth >= hops:
                continue
            for target, _, weight in self.outgoing.get(current, ()):
                if weight > -0.01 and target not in out:
                    out.add(target)
                    frontier.append((target, depth + 1))
        return out


def _admitted(node: NodeData, policy: Any) -> bool:
    constraints = policy.constraints
    if not constraints.admits_node_type(node.type):
        return False
    if not node.labels:
        return True
    return any(constraints.admits_label(label) for label in node.labels)


def _policies(documents: Mapping[str, Any]) -> list[Any]:

    view = taxonomy_view_from_documents(documents)
    return [compile_policy(p, view) for p in documents.get("policies", [])]


def integrity_violations(
    before: GraphData,
    after: GraphData,
    ops: Iterable[Op],
    *,
    documents: Mapping[str, Any] | None = None,
    hops: int = DEFAULT_HOPS,
) -> list[Violation]:
    """Every integrity finding of the change ``before`` → ``after`` made by ``ops`` (see module doc)."""
    ops = tuple(ops)
    lineage = Lineage.from_ops(ops)
    old, new = _Index(before), _Index(after)
    out: list[Violation] = []
    changed: set[str] = set()
    for op in ops:
        changed |= op.nodes()
    changed |= set(lineage.merged_into) | set(lineage.merged_into.values())

    groups: dict[str, list[str]] = {}  # the node merged into → the nodes merged into it
    for source, into in sorted(lineage.merged_into.items()):
        groups.setdefault(into, []).append(source)
    for into, sources in sorted(groups.items()):
        merged_node = new.nodes.get(into)
        # a node that already existed (obsolescence with a replacement) is part of its own group
        members = [old.nodes[n] for n in [*([into] if into in old.nodes else []), *sources] if n in old.nodes]
        if merged_node is None or not members:
            continue
        merged = " + ".join(f"{n.node_id} ({n.type})" for n in members)
        if len({n.type in ACTION_TYPES for n in [*members, merged_node]}) > 1:
            out.append(
                Violation(
                    "integrity.type_family",
                    f"merging {merged} into {into} ({merged_node.type}) fuses an Action with a non-Action node",
                    "changeset",
                )
            )
        floor = max(RISK_ORDER.get(n.risk, 0) for n in members)
        if RISK_ORDER.get(merged_node.risk, 0) < floor:
            out.append(
                Violation(
                    "integrity.risk_lowered",
                    f"{into} would carry risk {merged_node.risk}, lower than the merged nodes' highest risk",
                    "changeset",
                )
            )
        if documents is not None:
            for policy in _policies(documents):
                if _admitted(merged_node, policy) and not all(_admitted(n, policy) for n in members):
                    out.append(
                        Violation(
                            "integrity.policy_exposure",
                            f"merging {merged} into {into} exposes content to policy {policy.key!r}",
                            "changeset",
                        )
                    )

    zone = old.downstream(changed & set(old.nodes), hops) | new.downstream(changed & set(new.nodes), hops)
    for target in sorted(zone):
        if not new.guarded(target):
            continue
        origins = lineage.origins(target)
        reach_before: set[str] = set()
        for origin in origins:
            if origin in old.nodes:
                reach_before |= old.unguarded_sources(origin)
        for source in sorted(new.unguarded_sources(target)):
            if lineage.origins(source) & (reach_before | origins):
                continue
            out.append(
                Violation(
                    "integrity.unguarded_reach",
                    f"{source} would reach the guarded node {target} without a check",
                    "changeset",
                )
            )
        required_before = {
            t for origin in origins for t, kind, _ in old.outgoing.get(origin, ()) if kind == "REQUIRES"
        }
        required_after = {  # live requirements (a deprecated one, or the node itself, no longer checks)
            t
            for t, kind, _ in new.outgoing.get(target, ())
            if kind == "REQUIRES" and new.active(t) and t not in origins
        }
        for requirement in sorted(required_before):
            # kept when still required, or when a live node it was merged or split into is required
            if not any(requirement in lineage.origins(n) for n in required_after):
                out.append(
                    Violation(
                        "integrity.requirement_lost",
                        f"{target} would no longer require {requirement}",
                        "changeset",
                    )
                )
    return out
