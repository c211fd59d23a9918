"""The deterministic taxonomy validator — the final arbiter of taxonomy truth (ARG §2.3.3).

It works on a ``TaxonomyView`` (frozen, in memory) so that the same rules judge a UI edit, an API
call, a pack import before anything is written, an offline proposal and, online, the Context
Weaver's label set. Each refusal is a ``Violation`` naming its rule:

=================================  =============================================================
``taxonomy.label_id_format``       LabelID is "L" + at least five digits
``taxonomy.cluster_exists``        a label's cluster exists
``taxonomy.parent_exists``         a child's parent exists (no orphan children)
``taxonomy.cluster_compat``        a child lives in its parent's cluster
``taxonomy.no_cycles``             the parent chain of a label never returns to it
``taxonomy.sibling_unique``        no two non-deprecated siblings share a name (case-insensitive)
``taxonomy.parent_status``         a non-deprecated label never hangs under a DEPRECATED parent
``taxonomy.field_size``            names, descriptions, synonyms and examples within bounds
``taxonomy.incompatible_exists``   both labels of an incompatibility exist
``taxonomy.incompatible_lineage``  an incompatibility never pairs a label with itself or its lineage
``taxonomy.label_status``          (label sets) a label routes only when ACTIVE
``taxonomy.incompatible``          (label sets) incompatible labels never co-occur
``policy.*`` / ``typology.*``      references and parameters of policies and typologies
=================================  =============================================================
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from arg_platform.errors import Violation, ViolationCollector
from arg_platform.patterns import pattern_problem
from arg_platform.storable_text import storable_text, unstorable_paths
from arg_platform.vocabulary import NODE_TYPES

from .models import LABEL_ID_PATTERN, LabelStatus, MemoryScope, ResponseStyle

LABEL_ID_RE = re.compile(LABEL_ID_PATTERN)
MAX_NAME = 80
MAX_DESCRIPTION = 2000
MAX_SYNONYMS = 50
MAX_SYNONYM_LEN = 120
MAX_EXAMPLES = 500
MAX_EXAMPLE_LEN = 500
MAX_LIST_ITEMS = 500
MAX_TERM_LEN = 200
SENSITIVE_ACTIONS = frozenset({"RESTRICT", "REFOCUS", "BLOCK"})


@dataclass(frozen=True)
class LabelRecord:
    """What the validator needs to know of one label."""

    label_id: str
    name: str
    cluster: str
    parent: str | None
    status: str
    description: str = ""
    synonyms: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()


@dataclass(frozen=True)
class TaxonomyView:
    """An immutable picture of one project's taxonomy (current, draft-with-a-change, or a pack)."""

    clusters: frozenset[str]
    labels: Mapping[str, LabelRecord]
    incompatibilities: frozenset[tuple[str, str]] = frozenset()
    locations: Mapping[str, str] = field(default_factory=dict)  # "label:L00001" -> "labels[0]"

    def with_label(self, record: LabelRecord) -> TaxonomyView:
        labels = dict(self.labels)
        labels[record.label_id] = record
        return TaxonomyView(self.clusters, labels, self.incompatibilities, self.locations)

    def with_incompatibility(self, a: str, b: str) -> TaxonomyView:
        return TaxonomyView(
            self.clusters, self.labels, self.incompatibilities | {pair_key(a, b)}, self.locations
        )

    def ancestors(self, label_id: str) -> list[str]:
        """Parent, grandparent, … of a label (stops at a cycle or a missing parent)."""
        chain: list[str] = []
        seen = {label_id}
        current = self.labels.get(label_id)
        while current is not None and current.parent is not None and current.parent not in seen:
            chain.append(current.parent)
            seen.add(current.parent)
            current = self.labels.get(current.parent)
        return chain

    def children_index(self) -> dict[str | None, list[str]]:
        index: dict[str | None, list[str]] = {}
        for record in self.labels.values():
            index.setdefault(record.parent, []).append(record.label_id)
        return index

    def subtree(self, label_id: str) -> set[str]:
        """The label and every descendant."""
        index = self.children_index()
        out, stack = set(), [label_id]
        while stack:
            current = stack.pop()
            if current in out:
                continue
            out.add(current)
            stack.extend(index.get(current, []))
        return out


def pair_key(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a < b else (b, a)


def _loc(view: TaxonomyView, kind: str, key: str) -> str:
    return view.locations.get(f"{kind}:{key}", "")


def validate_taxonomy(view: TaxonomyView) -> list[Violation]:
    """Every structural rule over the whole taxonomy; an empty list means the taxonomy is valid."""
    out = ViolationCollector()
    for record in view.labels.values():
        loc = _loc(view, "label", record.label_id)
        where = f"{record.label_id} ({record.name!r})"
        if not LABEL_ID_RE.match(record.label_id):
            out.add(
                "taxonomy.label_id_format",
                f"LabelID {record.label_id!r} must be 'L' followed by at least 5 digits",
                "label_id",
                loc,
            )
        _check_label_fields(out, record, where, loc)
        if record.status not in LabelStatus.values:
            out.add("taxonomy.label_status", f"{where}: unknown status {record.status!r}", "status", loc)
        if record.cluster not in view.clusters:
            out.add(
                "taxonomy.cluster_exists",
                f"{where}: cluster {record.cluster!r} does not exist",
                "cluster",
                loc,
            )
        if record.parent is None:
            continue
        parent = view.labels.get(record.parent)
        if parent is None:
            out.add(
                "taxonomy.parent_exists",
                f"{where}: parent {record.parent} does not exist (orphan child)",
                "parent",
                loc,
            )
            continue
        if parent.cluster != record.cluster:
            out.add(
                "taxonomy.cluster_compat",
                f"{where} is in cluster {record.cluster!r} but its parent {parent.label_id} is in {parent.cluster!r}",
                "parent",
                loc,
            )
        if parent.status == LabelStatus.DEPRECATED and record.status != LabelStatus.DEPRECATED:
            out.add(
                "taxonomy.parent_status",
                f"{where} is {record.status} under the DEPRECATED parent {parent.label_id}",
                "parent",
                loc,
            )
    _check_cycles(out, view)
    _check_siblings(out, view)
    for a, b in sorted(view.incompatibilities):
        loc = _loc(view, "incompatibility", f"{a}|{b}")
        missing = [x for x in (a, b) if x not in view.labels]
        if missing:
            out.add(
                "taxonomy.incompatible_exists",
                f"incompatibility {a}–{b}: unknown label {', '.join(missing)}",
                "labels",
                loc,
            )
            continue
        if a == b or a in view.ancestors(b) or b in view.ancestors(a):
            out.add(
                "taxonomy.incompatible_lineage",
                f"incompatibility {a}–{b} pairs a label with itself or its own ancestor",
                "labels",
                loc,
            )
    return out.violations


def _check_label_fields(out: ViolationCollector, record: LabelRecord, where: str, loc: str) -> None:
    if not record.name.strip():
        out.add("taxonomy.field_size", f"{where}: name is empty", "name", loc)
    if len(record.name) > MAX_NAME:
        out.add("taxonomy.field_size", f"{where}: name is longer than {MAX_NAME} characters", "name", loc)
    if len(record.description) > MAX_DESCRIPTION:
        out.add(
            "taxonomy.field_size",
            f"{where}: description is longer than {MAX_DESCRIPTION} characters",
            "description",
            loc,
        )
    for fname, values, max_items, max_len in (
        ("synonyms", record.synonyms, MAX_SYNONYMS, MAX_SYNONYM_LEN),
        ("examples", record.examples, MAX_EXAMPLES, MAX_EXAMPLE_LEN),
    ):
        if len(values) > max_items:
            out.add("taxonomy.field_size", f"{where}: more than {max_items} {fname}", fname, loc)
        for value in values:
            if not isinstance(value, str) or not value.strip():
                out.add("taxonomy.field_size", f"{where}: {fname} must be non-empty strings", fname, loc)
            elif len(value) > max_len:
                out.add(
                    "taxonomy.field_size",
                    f"{where}: one of the {fname} is longer than {max_len} characters",
                    fname,
                    loc,
                )


def _check_cycles(out: ViolationCollector, view: TaxonomyView) -> None:
    reported: set[str] = set()
    for start in view.labels:
        seen: list[str] = []
        current: str | None = start
        while current is not None and current in view.labels:
            if current in seen:
                cycle = seen[seen.index(current) :]
                key = min(cycle)
                if key not in reported:
                    reported.add(key)
                    out.add(
                        "taxonomy.no_cycles",
                        "parent chain forms a cycle: " + " → ".join([*cycle, current]),
                        "parent",
                        _loc(view, "label", start),
                    )
                break
            seen.append(current)
            current = view.labels[current].parent


def _check_siblings(out: ViolationCollector, view: TaxonomyView) -> None:
    groups: dict[tuple[str, str | None, str], list[str]] = {}
    for record in view.labels.values():
        if record.status == LabelStatus.DEPRECATED:
            continue
        scope = record.cluster if record.parent is None else ""
        groups.setdefault((scope, record.parent, record.name.strip().casefold()), []).append(record.label_id)
    for (_, parent, _), ids in groups.items():
        if len(ids) > 1:
            ids.sort()
            name = view.labels[ids[0]].name
            under = f"under {parent}" if parent else f"at the root of cluster {view.labels[ids[0]].cluster!r}"
            out.add(
                "taxonomy.sibling_unique",
                f"labels {', '.join(ids)} share the name {name!r} {under}",
                "name",
                _loc(view, "label", ids[-1]),
            )


# --- policies and typologies -----------------------------------------------------------------------


def _str_list(
    out: ViolationCollector,
    rule: str,
    fname: str,
    value: object,
    loc: str,
    *,
    item_len: int | None = MAX_TERM_LEN,
) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        out.add(rule, f"{fname} must be a list of strings", fname, loc)
        return []
    if len(value) > MAX_LIST_ITEMS:
        out.add(rule, f"{fname} holds more than {MAX_LIST_ITEMS} items", fname, loc)
    if item_len is not None and any(len(v) > item_len for v in value):
        out.add(rule, f"an item of {fname} is longer than {item_len} characters", fname, loc)
    return list(value)


def validate_policy(view: TaxonomyView, data: Mapping[str, object], *, loc: str = "") -> list[Violation]:
    """Rules of one policy: known, non-deprecated labels; known node types; blocked patterns that run on
    RE2 within the bounds of ``arg_platform.patterns`` (each refusal names its pattern)."""
    out = ViolationCollector()
    for fname in ("allowed_labels", "forbidden_labels"):
        for label_id in _str_list(out, "policy.field_type", fname, data.get(fname, []), loc):
            record = view.labels.get(label_id)
            if record is None:
                out.add("policy.label_refs", f"{fname}: label {label_id} does not exist", fname, loc)
            elif fname == "allowed_labels" and record.status == LabelStatus.DEPRECATED:
                out.add("policy.label_refs", f"{fname}: label {label_id} is DEPRECATED", fname, loc)
    for fname in ("allowed_node_types", "forbidden_node_types"):
        for node_type in _str_list(out, "policy.field_type", fname, data.get(fname, []), loc):
            if node_type not in NODE_TYPES:
                out.add("policy.node_types", f"{fname}: unknown node type {node_type!r}", fname, loc)
    _str_list(out, "policy.field_type", "blocked_terms", data.get("blocked_terms", []), loc)
    patterns = data.get("blocked_patterns", [])
    for pattern in _str_list(out, "policy.field_type", "blocked_patterns", patterns, loc, item_len=None):
        if problem := pattern_problem(pattern):
            out.add("policy.pattern", f"blocked_patterns: {problem}", "blocked_patterns", loc)
    topics = data.get("sensitive_topics", [])
    if not isinstance(topics, list):
        out.add("policy.field_type", "sensitive_topics must be a list", "sensitive_topics", loc)
        topics = []
    for i, topic in enumerate(topics):
        if (
            not isinstance(topic, dict)
            or not isinstance(topic.get("topic"), str)
            or not isinstance(topic.get("terms"), list)
            or not all(isinstance(t, str) and t.strip() for t in topic.get("terms", []))
        ):
            out.add(
                "policy.sensitive_topic",
                f"sensitive_topics[{i}] needs a 'topic' and a list of 'terms'",
                "sensitive_topics",
                loc,
            )
        elif topic.get("action", "REFOCUS") not in SENSITIVE_ACTIONS:
            out.add(
                "policy.sensitive_topic",
                f"sensitive_topics[{i}].action must be one of {', '.join(sorted(SENSITIVE_ACTIONS))}",
                "sensitive_topics",
                loc,
            )
    _language_messages(out, data.get("language_messages") or {}, loc)
    for scope in _str_list(out, "policy.field_type", "memory_scopes", data.get("memory_scopes", []), loc):
        if scope not in MemoryScope.values:
            out.add("policy.memory_scopes", f"memory_scopes: unknown scope {scope!r}", "memory_scopes", loc)
    max_hops = data.get("max_hops")
    if max_hops is not None and (
        not isinstance(max_hops, int) or isinstance(max_hops, bool) or not 1 <= max_hops <= 20
    ):
        out.add("policy.max_hops", "max_hops must be an integer between 1 and 20 (or empty)", "max_hops", loc)
    return out.violations


LANGUAGE_MESSAGE_KEY = re.compile(r"^(?:[a-z]{2,3}|default)$")


def _language_messages(out: ViolationCollector, messages: object, loc: str) -> None:
    """A policy's ``language_messages``: ISO 639-1 code (or ``default``) → a non-empty text."""
    if not isinstance(messages, dict):
        out.add("policy.field_type", "language_messages must be a mapping", "language_messages", loc)
        return
    for key, text in messages.items():
        if not isinstance(key, str) or LANGUAGE_MESSAGE_KEY.match(key) is None:
            out.add(
                "policy.language_messages",
                f"language_messages: {key!r} is not a lower-case ISO 639-1 code or 'default'",
                "language_messages",
                loc,
            )
        elif not isinstance(text, str) or not text.strip() or len(text) > 2000:
            out.add(
                "policy.language_messages",
                f"language_messages[{key}] must be a text of 1 to 2000 characters",
                "language_messages",
                loc,
            )


WEIGHT_FIELDS = ("alpha", "beta", "gamma", "delta", "epsilon")
TYPOLOGY_RANGES = {
    "complexity_budget": (1, 10),
    "max_depth": (1, 20),
    "max_hops": (1, 20),
    "beam_width": (1, 32),
}


def validate_typology(data: Mapping[str, object], *, loc: str = "") -> list[Violation]:
    """Rules of one context typology: known node types, ranges, weights in [0, 1] not all zero."""
    out = ViolationCollector()
    for node_type in _str_list(
        out, "typology.field_type", "preferred_node_types", data.get("preferred_node_types", []), loc
    ):
        if node_type not in NODE_TYPES:
            out.add(
                "typology.node_types",
                f"preferred_node_types: unknown node type {node_type!r}",
                "preferred_node_types",
                loc,
            )
    for fname, (low, high) in TYPOLOGY_RANGES.items():
        value = data.get(fname)
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            out.add("typology.range", f"{fname} must be an integer between {low} and {high}", fname, loc)
    weights = data.get("weights", {})
    if not isinstance(weights, dict):
        out.add("typology.weights", "weights must map alpha…epsilon to numbers", "weights", loc)
        weights = {}
    unknown = set(weights) - set(WEIGHT_FIELDS)
    if unknown:
        out.add("typology.weights", f"unknown weights {', '.join(sorted(unknown))}", "weights", loc)
    values = []
    for name in WEIGHT_FIELDS:
        value = weights.get(name)
        if not isinstance(value, int | float) or isinstance(value, bool) or not 0.0 <= float(value) <= 1.0:
            out.add("typology.weights", f"weight {name} must be a number in [0, 1]", f"weight_{name}", loc)
        else:
            values.append(float(value))
    if len(values) == len(WEIGHT_FIELDS) and sum(values) == 0:
        out.add("typology.weights", "at least one weight must be positive", "weights", loc)
    if data.get("response_style") not in ResponseStyle.values:
        out.add(
            "typology.response_style",
            f"response_style must be one of {', '.join(ResponseStyle.values)}",
            "response_style",
            loc,
        )
    access = data.get("access_constraints", {})
    if not isinstance(access, dict) or not all(isinstance(v, list) for v in access.values()):
        out.add(
            "typology.access_constraints",
            "access_constraints must map names to lists",
            "access_constraints",
            loc,
        )
    elif unstorable := list(unstorable_paths(access)):  # no database stores them (jsonb refuses NUL)
        out.add(
            "typology.access_constraints",
            "NUL or lone surrogate character in access_constraints ("
            + storable_text(", ".join(unstorable))  # the message must not carry them either
            + ")",
            "access_constraints",
            loc,
        )
    return out.violations


# --- label sets (online, Context Weaver) -----------------------------------------------------------

POLICY_LABEL_GATE = "policy.label_gate"  # the rule of a label the caller's policy does not allow


@dataclass(frozen=True)
class LabelGate:
    """Policy/typology constraints on labels, already expanded to whole subtrees."""

    allowed: frozenset[str] | None  # None = every label
    forbidden: frozenset[str] = frozenset()

    def admits(self, label_id: str) -> bool:
        return label_id not in self.forbidden and (self.allowed is None or label_id in self.allowed)


def label_gate_for(
    view: TaxonomyView, *, allowed_labels: Iterable[str], forbidden_labels: Iterable[str]
) -> LabelGate:
    """Expand a policy's label rules over subtrees (a rule on a parent covers every child)."""
    allowed_roots = list(allowed_labels)
    allowed: set[str] | None = None
    if allowed_roots:
        allowed = set()
        for label_id in allowed_roots:
            allowed |= view.subtree(label_id)
    forbidden: set[str] = set()
    for label_id in forbidden_labels:
        forbidden |= view.subtree(label_id)
    return LabelGate(frozenset(allowed) if allowed is not None else None, frozenset(forbidden))


@dataclass(frozen=True)
class LabelSetVerdict:
    """The validated label set ``L_final`` and, for the log, what was dropped and by which rule."""

    kept: dict[str, float]
    rejected: tuple[tuple[str, str], ...]


def validate_label_set(
    view: TaxonomyView, scored: Mapping[str, float], *, gate: LabelGate | None = None
) -> LabelSetVerdict:
    """Keep only labels that exist, are ACTIVE, pass the gate, are mutually compatible and coherent.

    Incompatible pairs keep the higher-scored label; an ancestor chosen with its descendant is folded
    into the descendant (the more specific routing branch), which keeps the better score of the two.
    """
    rejected: list[tuple[str, str]] = []
    candidates: dict[str, float] = {}
    for label_id, score in sorted(scored.items(), key=lambda kv: (-kv[1], kv[0])):
        record = view.labels.get(label_id)
        if record is None:
            rejected.append((label_id, "taxonomy.label_exists"))
        elif record.status != LabelStatus.ACTIVE:
            rejected.append((label_id, "taxonomy.label_status"))
        elif gate is not None and not gate.admits(label_id):
            rejected.append((label_id, POLICY_LABEL_GATE))
        else:
            candidates[label_id] = float(score)
    kept: dict[str, float] = {}
    for label_id, score in candidates.items():  # in descending score order
        if any(pair_key(label_id, other) in view.incompatibilities for other in kept):
            rejected.append((label_id, "taxonomy.incompatible"))
            continue
        kept[label_id] = score
    for label_id in list(kept):
        if label_id not in kept:
            continue
        for ancestor in view.ancestors(label_id):
            if ancestor in kept:
                kept[label_id] = max(kept[label_id], kept.pop(ancestor))
                rejected.append((ancestor, "taxonomy.parent_child_folded"))
    return LabelSetVerdict(kept=kept, rejected=tuple(rejected))
