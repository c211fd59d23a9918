"""The graph validator: deterministic rules over the ontology graph (ARG §0.1, §3.5).

The same rules judge a knowledge-pack import before anything is written (``validate_graph``) and each
write of a graph store (``node_violations``, ``edge_violations``, ``alias_violations``,
``status_change_violations``). Each refusal is a ``Violation`` naming its rule:

==================================  ===============================================================
``graph.node_id_format``            a node id is 1–128 characters of ``[A-Za-z0-9_.:-]``
``graph.node_unique``               no two nodes share an id
``graph.node_type``                 the type is one of ``arg_platform.vocabulary.NodeType``
``graph.risk``                      the risk level is low, medium or high
``graph.node_status``               the status is ACTIVE, DEPRECATED or REMOVED
``graph.status_transition``         (store) REMOVED is terminal; ACTIVE goes to DEPRECATED before REMOVED
``graph.status_reason``             (store) deprecating or removing a node needs a reason
``graph.field_size``                title 1–200 characters, chunk and staff notes ≤ 10,000, description
                                    ≤ 2,000, reasons/semantics ≤ 500, …
``graph.embedding``                 an embedding is non-empty, finite, of one dimension in the graph
``graph.attach_label_exists``       an attached LabelID exists in the project's taxonomy
``graph.attach_label_deprecated``   an ACTIVE node is never attached to a DEPRECATED label (DEPRECATED
                                    and REMOVED nodes keep their historical attachments)
``graph.attach_cluster_exists``     an attached cluster key exists
``graph.attach_unique``             a node lists each label and each cluster once
``graph.node_products``             a node's ``products`` are distinct product keys (``PRODUCT_KEY``:
                                    1–63 characters of ``[a-z0-9_-]``, starting with a letter or digit),
                                    at most ``MAX_PRODUCTS`` of them
``graph.action_fields``             Action / DirectAction nodes name a handler; parameters are well formed
                                    (a known type, a compiling pattern, an enum with its values)
``action.webhook_target_refused``   a ``webhook:<url>`` handler is an http(s) URL whose host is not, and
                                    does not resolve to, an internal address (loopback, private,
                                    link-local / cloud metadata, …) unless ``ARG_OUTBOUND_ALLOW`` names
                                    it (``arg_platform.outbound``; the call checks again where it connects)
``graph.edge_endpoint_exists``      both ends of an edge are nodes of the graph
``graph.edge_endpoint_removed``     no edge touches a REMOVED node
``graph.edge_type``                 the type is one of ``arg_platform.vocabulary.EdgeType``
``graph.edge_weight``               the weight is a finite number in [-1, 1] (negative = inhibitory)
``graph.self_loop``                 no edge joins a node to itself, whatever its type (the edge table's
                                    ``no_self_loops`` constraint: a step that goes nowhere)
``graph.edge_unique``               at most one edge per (source, target, type)
``graph.alias_source_exists``       the aliased (split or merged) node exists
``graph.alias_unique``              one alias row per source
``graph.alias_targets``             a split/merge names ≥ 1 distinct, existing, non-REMOVED target that is
                                    not the source itself (a split without children is refused)
==================================  ===============================================================

One rule only *warns* (``client_text_warnings``, ``graph_warnings``; shown at publication and in the
node editor, never refused):

==================================  ===============================================================
``graph.client_text_staff_voice``   a client text (``chunk``) sentence reads like an instruction to staff
                                    ("Ask which plan the customer wants…"): it belongs in
                                    ``staff_notes`` (``ontology.client_text``)
==================================  ===============================================================

``locations`` maps ``node:<id>``, ``edge:<source>|<target>|<type>`` and ``alias:<source>`` to where the
item sits in the input (``nodes[3]``); as in the taxonomy validator, ``Violation.location`` is that
place and ``Violation.field`` the field within it (``labels``), so a pack importer reports
``nodes[3].labels``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import numpy as np

from arg_platform.errors import Violation, ViolationCollector
from arg_platform.outbound import target_problem
from arg_platform.patterns import pattern_problem
from arg_platform.vocabulary import (
    EDGE_TYPES,
    NODE_TYPES,
    PARAMETER_SOURCES,
    PARAMETER_TYPES,
    NodeStatus,
    NodeType,
    RiskLevel,
)

from .client_text import staff_voice_sentences

if TYPE_CHECKING:
    from .store.port import AliasData, EdgeData, GraphData, NodeData, ParameterSpec


NODE_ID_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")
PARAMETER_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
MAX_TITLE = 200
MAX_CHUNK = 10_000
MAX_STAFF_NOTES = 10_000
MAX_DESCRIPTION = 2_000
STAFF_VOICE_RULE = "graph.client_text_staff_voice"
MAX_REASON = 500
MAX_SEMANTICS = 500
MAX_HANDLER = 200
MAX_PRECONDITION = 500
MAX_LIST = 100
MAX_ALIAS_TARGETS = 50
ACTION_TYPES = frozenset({NodeType.ACTION.value, NodeType.DIRECT_ACTION.value})
WEBHOOK_PREFIX = "webhook:"
RISK_LEVELS = frozenset(r.value for r in RiskLevel)
NODE_STATUSES = frozenset(s.value for s in NodeStatus)
LABEL_DEPRECATED = "DEPRECATED"
REMOVED = NodeStatus.REMOVED.value
STATUS_TRANSITIONS: Mapping[str, frozenset[str]] = {
    NodeStatus.ACTIVE.value: frozenset({NodeStatus.DEPRECATED.value}),
    NodeStatus.DEPRECATED.value: frozenset({NodeStatus.ACTIVE.value, NodeStatus.REMOVED.value}),
    NodeStatus.REMOVED.value: frozenset(),
}


def edge_location_key(source: str, target: str, type: str) -> str:
    return f"edge:{source}|{target}|{type}"


def validate_graph(
    graph: GraphData,
    *,
    labels: Mapping[str, str],
    clusters: Iterable[str],
    locations: Mapping[str, str] | None = None,
) -> list[Violation]:
    """Every rule over a whole graph; ``labels`` maps LabelID → status. Empty list = valid."""
    locs = locations or {}
    cluster_keys = frozenset(clusters)
    out: list[Violation] = []
    statuses: dict[str, str] = {}
    dimensions: dict[int, str] = {}
    for node in graph.nodes:
        loc = locs.get(f"node:{node.node_id}", "")
        out += node_violations(node, labels=labels, clusters=cluster_keys, loc=loc)
        if node.node_id in statuses:
            out.append(Violation("graph.node_unique", f"node id {node.node_id!r} is used twice", "id", loc))
        else:
            statuses[node.node_id] = node.status
        if node.embedding:
            dimensions.setdefault(len(node.embedding), node.node_id)
    if len(dimensions) > 1:
        sizes = ", ".join(f"{dim} ({node_id})" for dim, node_id in sorted(dimensions.items()))
        out.append(
            Violation("graph.embedding", f"embeddings have different dimensions: {sizes}", "embedding")
        )
    seen_edges: set[tuple[str, str, str]] = set()
    for edge in graph.edges:
        loc = locs.get(edge_location_key(*edge.key), "")
        out += edge_violations(edge, statuses=statuses, loc=loc)
        if edge.key in seen_edges:
            out.append(
                Violation("graph.edge_unique", f"edge {_edge_name(edge)} is listed twice", "type", loc)
            )
        seen_edges.add(edge.key)
    seen_sources: set[str] = set()
    for alias in graph.aliases:
        loc = locs.get(f"alias:{alias.source}", "")
        out += alias_violations(alias, statuses=statuses, loc=loc)
        if alias.source in seen_sources:
            out.append(
                Violation("graph.alias_unique", f"node {alias.source!r} has two alias rows", "source", loc)
            )
        seen_sources.add(alias.source)
    return out


def node_violations(
    node: NodeData, *, labels: Mapping[str, str], clusters: frozenset[str] | set[str], loc: str = ""
) -> list[Violation]:
    """The rules of one node on its own and of its attachments."""
    out = ViolationCollector()
    where = f"node {node.node_id!r}"
    if not isinstance(node.node_id, str) or not NODE_ID_RE.match(node.node_id):
        out.add(
            "graph.node_id_format",
            f"{where}: an id is 1–128 characters of letters, digits, '_', '.', ':' and '-'",
            "id",
            loc,
        )
    if node.type not in NODE_TYPES:
        out.add("graph.node_type", f"{where}: unknown node type {node.type!r}", "type", loc)
    if node.risk not in RISK_LEVELS:
        out.add("graph.risk", f"{where}: risk must be one of {', '.join(sorted(RISK_LEVELS))}", "risk", loc)
    if node.status not in NODE_STATUSES:
        out.add("graph.node_status", f"{where}: unknown status {node.status!r}", "status", loc)
    _check_node_fields(out, node, where, loc)
    _check_embedding(out, node.embedding, where, loc)
    _check_attachments(out, node, where, loc, labels=labels, clusters=clusters)
    _check_action_fields(out, node, where, loc)
    _check_products(out, node, where, loc)
    return out.violations


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _check_node_fields(out: ViolationCollector, node: NodeData, where: str, loc: str) -> None:
    title = _text(node.title)
    if title is None or not title.strip():
        out.add("graph.field_size", f"{where}: title is empty", "title", loc)
    elif len(title) > MAX_TITLE:
        out.add("graph.field_size", f"{where}: title is longer than {MAX_TITLE} characters", "title", loc)
    chunk = _text(node.chunk)
    if chunk is None or len(chunk) > MAX_CHUNK:
        out.add(
            "graph.field_size", f"{where}: chunk must be text of at most {MAX_CHUNK} characters", "chunk", loc
        )
    for fname, limit in (("staff_notes", MAX_STAFF_NOTES), ("description", MAX_DESCRIPTION)):
        value = _text(getattr(node, fname, ""))
        if value is None or len(value) > limit:
            out.add(
                "graph.field_size",
                f"{where}: {fname.replace('_', ' ')} must be text of at most {limit:,} characters",
                fname,
                loc,
            )
    reason = _text(node.status_reason)
    if reason is None or len(reason) > MAX_REASON:
        out.add(
            "graph.field_size",
            f"{where}: status reason must be text of at most {MAX_REASON} characters",
            "status_reason",
            loc,
        )
    handler = _text(node.handler)
    if handler is None or len(handler) > MAX_HANDLER:
        out.add(
            "graph.field_size",
            f"{where}: handler must be text of at most {MAX_HANDLER} characters",
            "handler",
            loc,
        )
    if len(node.preconditions) > MAX_LIST or not all(
        isinstance(p, str) and p.strip() and len(p) <= MAX_PRECONDITION for p in node.preconditions
    ):
        out.add(
            "graph.field_size",
            f"{where}: preconditions are at most {MAX_LIST} non-empty texts "
            f"of ≤ {MAX_PRECONDITION} characters",
            "preconditions",
            loc,
        )


PRODUCT_KEY = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
MAX_PRODUCTS = 20


def _check_products(out: ViolationCollector, node: NodeData, where: str, loc: str) -> None:
    """A node's products: the product keys it is specific to (``context.product`` narrows routing)."""
    products = node.products
    bad = [p for p in products if not isinstance(p, str) or not PRODUCT_KEY.fullmatch(p)]
    if bad:
        out.add(
            "graph.node_products",
            f"{where}: product keys are 1–63 characters of a-z, 0-9, '-' and '_' ({bad[0]!r} is not)",
            "products",
            loc,
        )
    elif len(set(products)) != len(products) or len(products) > MAX_PRODUCTS:
        out.add(
            "graph.node_products",
            f"{where}: a node lists each product once, at most {MAX_PRODUCTS} of them",
            "products",
            loc,
        )


def _check_embedding(
    out: ViolationCollector, embedding: tuple[float, ...] | None, where: str, loc: str
) -> None:
    if embedding is None:
        return
    try:  # numpy, not a Python loop: a 100k-node graph carries ~40M embedding values
        values = np.asarray(embedding)
        ok = (
            values.ndim == 1
            and values.size > 0
            and values.dtype.kind in "fi"
            and bool(np.isfinite(values).all())
        )
    except (TypeError, ValueError):
        ok = False
    if not ok:
        out.add(
            "graph.embedding",
            f"{where}: an embedding is a non-empty vector of finite numbers",
            "embedding",
            loc,
        )


def _check_attachments(
    out: ViolationCollector,
    node: NodeData,
    where: str,
    loc: str,
    *,
    labels: Mapping[str, str],
    clusters: frozenset[str] | set[str],
) -> None:
    for fname, values in (("labels", node.labels), ("clusters", node.clusters)):
        if len(values) > MAX_LIST:
            out.add("graph.field_size", f"{where}: more than {MAX_LIST} {fname}", fname, loc)
        duplicates = sorted({v for v in values if list(values).count(v) > 1})
        if duplicates:
            out.add(
                "graph.attach_unique",
                f"{where}: {fname} lists {', '.join(duplicates)} more than once",
                fname,
                loc,
            )
    for label_id in dict.fromkeys(node.labels):
        status = labels.get(label_id)
        if status is None:
            out.add("graph.attach_label_exists", f"{where}: label {label_id} does not exist", "labels", loc)
        elif status == LABEL_DEPRECATED and node.status == NodeStatus.ACTIVE:
            out.add(
                "graph.attach_label_deprecated",
                f"{where}: label {label_id} is DEPRECATED and cannot take attachments",
                "labels",
                loc,
            )
    for key in dict.fromkeys(node.clusters):
        if key not in clusters:
            out.add(
                "graph.attach_cluster_exists", f"{where}: cluster {key!r} does not exist", "clusters", loc
            )


def _check_action_fields(out: ViolationCollector, node: NodeData, where: str, loc: str) -> None:
    if node.type in ACTION_TYPES and not (isinstance(node.handler, str) and node.handler.strip()):
        out.add("graph.action_fields", f"{where}: an {node.type} node needs a handler", "handler", loc)
    if isinstance(node.handler, str) and node.handler.strip().startswith(WEBHOOK_PREFIX):
        problem = target_problem(node.handler.strip()[len(WEBHOOK_PREFIX) :])
        if problem:
            out.add(
                "action.webhook_target_refused", f"{where}: webhook target refused: {problem}", "handler", loc
            )
    names: set[str] = set()
    for i, spec in enumerate(node.parameters):
        name = getattr(spec, "name", None)
        if not isinstance(name, str) or not PARAMETER_NAME_RE.match(name):
            out.add(
                "graph.action_fields",
                f"{where}: parameters[{i}] needs a name like 'invoice_id'",
                "parameters",
                loc,
            )
            continue
        if name in names:
            out.add(
                "graph.action_fields", f"{where}: parameter {name!r} is declared twice", "parameters", loc
            )
        names.add(name)
        ptype, description = getattr(spec, "type", None), getattr(spec, "description", None)
        if not isinstance(ptype, str) or not ptype.strip() or len(ptype) > 40:
            out.add(
                "graph.action_fields",
                f"{where}: parameter {name!r} needs a type (≤ 40 characters)",
                "parameters",
                loc,
            )
        if not isinstance(getattr(spec, "required", None), bool):
            out.add(
                "graph.action_fields",
                f"{where}: parameter {name!r}: required must be true or false",
                "parameters",
                loc,
            )
        if not isinstance(description, str) or len(description) > MAX_REASON:
            out.add(
                "graph.action_fields",
                f"{where}: parameter {name!r}: description is text of ≤ {MAX_REASON} characters",
                "parameters",
                loc,
            )
        for problem in _parameter_type_problems(spec):
            out.add("graph.action_fields", f"{where}: parameter {name!r}: {problem}", "parameters", loc)


def _parameter_type_problems(spec: ParameterSpec) -> list[str]:
    """What is wrong with a parameter's typed declaration (type, pattern, values, synonyms, source)."""
    problems: list[str] = []
    ptype = getattr(spec, "type", "")
    if isinstance(ptype, str) and ptype.strip() and ptype not in PARAMETER_TYPES:
        problems.append(f"unknown type {ptype!r} (one of {', '.join(sorted(PARAMETER_TYPES))})")
    pattern = getattr(spec, "pattern", "")
    if ptype == "identifier" and not pattern:
        problems.append("an identifier needs a pattern (a regular expression its values match)")
    if pattern:
        if ptype not in ("identifier", "string"):
            problems.append("a pattern applies to an identifier or string parameter only")
        if problem := pattern_problem(pattern):
            problems.append(f"pattern {problem}")
    values = getattr(spec, "values", ())
    if ptype == "enum" and not values:
        problems.append("an enum needs its values, e.g. values: [pro, team]")
    if values and ptype != "enum":
        problems.append("values apply to an enum parameter only")
    if any(not v.strip() for v in values) or len(set(values)) != len(values):
        problems.append("values must be distinct, non-empty words")
    for value, _words in getattr(spec, "synonyms", ()):
        if value not in values:
            problems.append(f"synonyms name {value!r}, which is not one of its values")
    if getattr(spec, "source", "prompt") not in PARAMETER_SOURCES:
        problems.append(
            "source is prompt (the user may give it) or context (the calling application gives it)"
        )
    return problems


def _edge_name(edge: EdgeData) -> str:
    return f"{edge.source} -[{edge.type}]-> {edge.target}"


def edge_violations(edge: EdgeData, *, statuses: Mapping[str, str], loc: str = "") -> list[Violation]:
    """The rules of one edge; ``statuses`` maps the graph's node ids to their status."""
    out = ViolationCollector()
    where = f"edge {_edge_name(edge)}"
    if edge.type not in EDGE_TYPES:
        out.add("graph.edge_type", f"{where}: unknown edge type {edge.type!r}", "type", loc)
    weight = edge.weight
    if (
        not isinstance(weight, int | float)
        or isinstance(weight, bool)
        or not math.isfinite(weight)
        or not -1.0 <= weight <= 1.0
    ):
        out.add("graph.edge_weight", f"{where}: weight must be a number in [-1, 1]", "weight", loc)
    if edge.source == edge.target:
        out.add("graph.self_loop", f"{where}: an edge cannot join a node to itself", "target", loc)
    for fname, node_id in (("source", edge.source), ("target", edge.target)):
        status = statuses.get(node_id)
        if status is None:
            out.add(
                "graph.edge_endpoint_exists", f"{where}: {fname} node {node_id!r} does not exist", fname, loc
            )
        elif status == REMOVED:
            out.add(
                "graph.edge_endpoint_removed", f"{where}: {fname} node {node_id!r} is REMOVED", fname, loc
            )
    if not isinstance(edge.semantics, str) or len(edge.semantics) > MAX_SEMANTICS:
        out.add(
            "graph.field_size",
            f"{where}: semantics is text of at most {MAX_SEMANTICS} characters",
            "semantics",
            loc,
        )
    return out.violations


def alias_violations(alias: AliasData, *, statuses: Mapping[str, str], loc: str = "") -> list[Violation]:
    """The rules of one row of the split redirection table."""
    out = ViolationCollector()
    where = f"alias of {alias.source!r}"
    if alias.source not in statuses:
        out.add("graph.alias_source_exists", f"{where}: node {alias.source!r} does not exist", "source", loc)
    targets = list(alias.targets)
    if not targets:
        out.add(
            "graph.alias_targets", f"{where}: a split or merge needs at least one target node", "targets", loc
        )
    if len(targets) > MAX_ALIAS_TARGETS:
        out.add("graph.alias_targets", f"{where}: more than {MAX_ALIAS_TARGETS} targets", "targets", loc)
    if len(set(targets)) != len(targets):
        out.add("graph.alias_targets", f"{where}: a target is listed twice", "targets", loc)
    for target in dict.fromkeys(targets):
        if target == alias.source:
            out.add("graph.alias_targets", f"{where}: a node cannot redirect to itself", "targets", loc)
        elif target not in statuses:
            out.add("graph.alias_targets", f"{where}: target node {target!r} does not exist", "targets", loc)
        elif statuses[target] == REMOVED:
            out.add("graph.alias_targets", f"{where}: target node {target!r} is REMOVED", "targets", loc)
    if not isinstance(alias.reason, str) or len(alias.reason) > MAX_REASON:
        out.add(
            "graph.field_size", f"{where}: reason is text of at most {MAX_REASON} characters", "reason", loc
        )
    return out.violations


def status_change_violations(
    node_id: str, *, current: str, new: str, reason: str, touching_edges: int
) -> list[Violation]:
    """Rules of a lifecycle move ACTIVE → DEPRECATED → REMOVED of one stored node."""
    out = ViolationCollector()
    where = f"node {node_id!r}"
    if new not in NODE_STATUSES:
        out.add("graph.node_status", f"{where}: unknown status {new!r}", "status")
        return out.violations
    if new != current and new not in STATUS_TRANSITIONS.get(current, frozenset()):
        out.add("graph.status_transition", f"{where} cannot go from {current} to {new}", "status")
    if new != NodeStatus.ACTIVE and new != current and not reason.strip():
        out.add("graph.status_reason", f"{where}: moving a node to {new} needs a reason", "reason")
    if len(reason) > MAX_REASON:
        out.add("graph.field_size", f"{where}: reason is longer than {MAX_REASON} characters", "reason")
    if new == REMOVED and touching_edges:
        out.add(
            "graph.edge_endpoint_removed",
            f"{where} still has {touching_edges} edge(s); remove or redistribute them before REMOVED",
            "status",
        )
    return out.violations


def client_text_warnings(node: NodeData, *, loc: str = "") -> list[Violation]:
    """Warnings (never refusals) about one node's client text: each sentence that reads like an
    instruction to staff (rule ``graph.client_text_staff_voice``), quoted."""
    chunk = _text(node.chunk)
    if not chunk or node.status == REMOVED:
        return []
    return [
        Violation(
            STAFF_VOICE_RULE,
            f"node {node.node_id!r}: the client text reads like an instruction to staff — "
            f"“{_quote(sentence)}”; move it to the staff notes and write what the asker should read",
            "chunk",
            loc,
        )
        for sentence in staff_voice_sentences(chunk)
    ]


def graph_warnings(graph: GraphData, *, locations: Mapping[str, str] | None = None) -> list[Violation]:
    """Every warning over a whole graph (see ``client_text_warnings``)."""
    locs = locations or {}
    out: list[Violation] = []
    for node in graph.nodes:
        out += client_text_warnings(node, loc=locs.get(f"node:{node.node_id}", ""))
    return out


def _quote(sentence: str, limit: int = 120) -> str:
    return sentence if len(sentence) <= limit else sentence[: limit - 1].rstrip() + "…"
