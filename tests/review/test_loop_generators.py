"""Step B generators on handcrafted nights, the integrity test, the geDIG gauge and the bins.

No database: the collection is built from rows, the base release is a plain stand-in with the graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from ontology.store.port import EdgeData, GraphData, NodeData
from review.changeset import EdgeAdd
from review.integrity import integrity_violations
from review.loop.bins import bin_for
from review.loop.collection import Collection, UnifiedOutcome, compute_metrics
from review.loop.gauge import aspl, delta_h_norm, entropy, gauge
from review.loop.gedig_gate import GateThresholds
from review.loop.gedig_gate import calibrate as gedig_calibrate
from review.loop.gedig_gate import decide as gedig_decide
from review.loop.gedig_gate import gauge_history as gedig_history
from review.loop.generators import edges as edge_generators
from review.loop.generators.base import Candidate, GeneratorContext, wilson_lower, wilson_upper
from review.loop.generators.merge import merge_changeset
from review.loop.params import loop_params

NOW = datetime(2026, 11, 22, tzinfo=UTC)


def collection_of(rows: list[dict[str, Any]]) -> Collection:
    names: list[str] = []

    def code(node: str | None) -> int:
        if node is None:
            return -1
        if node not in names:
            names.append(node)
        return names.index(node)

    built = Collection(
        project_id=1,
        window_start=NOW,
        window_end=NOW,
        log_ids=np.arange(1, len(rows) + 1),
        created=np.arange(len(rows), dtype=float),
        prompts=[r.get("prompt", f"p{i}") for i, r in enumerate(rows)],
        sessions=np.array([r.get("session", i) for i, r in enumerate(rows)]),
        sources=np.array([r.get("source", i) for i, r in enumerate(rows)]),
        segments=np.zeros(len(rows), dtype=int),
        landing=np.array([code(r["path"][0]) for r in rows]),
        target=np.array([code(r["path"][-1]) for r in rows]),
        paths=[tuple(code(n) for n in r["path"]) for r in rows],
        path_edges=[tuple(tuple(e) for e in r.get("edges", ())) for r in rows],
        labels=[() for _ in rows],
        top_labels=[() for _ in rows],
        shadow_wins=["" for _ in rows],
        landing_candidates=[() for _ in rows],
        flags=[frozenset() for _ in rows],
        kinds=[r.get("kind", "INFO") for r in rows],
        outcome=np.array([int(r["outcome"]) for r in rows], dtype=np.int8),
        c_info=np.full(len(rows), np.nan),
        confidence=np.full(len(rows), np.nan),
        asked=np.zeros(len(rows), dtype=bool),
        verified=np.array([UnifiedOutcome(int(r["outcome"])).strong for r in rows]),
        node_names=names,
        session_names=[],
        source_names=[],
        segment_names=["member|web"],
    )
    compute_metrics(built)
    return built


@dataclass
class FakeBase:
    graph: GraphData
    documents: dict[str, Any] = field(default_factory=dict)

    @property
    def nodes(self) -> dict[str, NodeData]:
        return {n.node_id: n for n in self.graph.nodes}


def _node(node_id: str, type: str = "Info", **kw: Any) -> NodeData:
    return NodeData(node_id=node_id, type=type, title=node_id, chunk=f"{node_id}.", clusters=("c",), **kw)


CAPACITY = GraphData(
    nodes=(
        _node("P", "Decision"),
        _node("Q", "Action", handler="python:x"),
        _node("R", "Action", handler="python:x"),
    ),
    edges=(EdgeData("P", "Q", "LEADS_TO", 0.9), EdgeData("P", "R", "LEADS_TO", 0.3)),
)


def _context(rows: list[dict[str, Any]], graph: GraphData = CAPACITY) -> GeneratorContext:
    return GeneratorContext(
        project=None,
        base=FakeBase(graph),
        collection=collection_of(rows),
        params=loop_params(),
        seed=7,  # type: ignore[arg-type]
    )


def _answered(node: str, outcome: int, n: int) -> list[dict[str, Any]]:
    """``n`` requests landing on ``node`` and answered there (no move), each with ``outcome``."""
    return [{"path": [node], "outcome": outcome, "source": i % 5} for i in range(n)]


def _via_pq(outcome: int, n: int) -> list[dict[str, Any]]:
    """``n`` requests routed P → Q, each with ``outcome``."""
    stale = {"path": ["P", "Q"], "edges": [["P", "Q", "LEADS_TO"]], "kind": "ACTION"}
    return [{**stale, "outcome": outcome, "source": i % 5} for i in range(n)]


def test_reinforce_inhibits_a_stale_edge_and_gives_its_mass_to_the_alternative():
    rows = _via_pq(UnifiedOutcome.FAILURE, 30) + _answered("R", UnifiedOutcome.CONFIRMED, 30)

    [candidate] = edge_generators.generate_reinforce(_context(rows))

    assert candidate.kind == "EDGE_INHIBIT"
    weights = {(op.source, op.target): (op.previous, op.weight) for op in candidate.ops}
    assert weights[("P", "Q")][0] == 0.9 and weights[("P", "Q")][1] <= -0.01
    assert weights[("P", "R")][0] == 0.3 and weights[("P", "R")][1] >= 0.6
    assert candidate.evidence["episodes"] == 30
    [veto] = [e["veto"] for e in candidate.evidence["edges"] if "veto" in e]
    assert veto["confirmed"] == 0 and veto["failed"] == 30
    assert veto["success_upper"] < veto["project_success"] == 0.5


def test_an_edge_that_ends_as_well_as_the_project_is_not_demoted_however_busy_it_is():
    """The learner's step grows with the count of failures over confirmations, so a rule that follows
    the step demotes this edge, and further with more traffic; its success share is the project's, so
    the veto does not fire at any volume."""
    for scale in (1, 2, 4):
        rows = _via_pq(UnifiedOutcome.FAILURE, 33 * scale) + _via_pq(UnifiedOutcome.CONFIRMED, 27 * scale)
        learned, _, _, own = edge_generators.learn_weights(_context(rows))
        assert learned[("P", "Q", "LEADS_TO")] < 0.6 - 0.15  # the learner alone would demote it
        assert own[("P", "Q", "LEADS_TO")] < 0
        assert edge_generators.vetoed_edges(_context(rows)) == {}
        assert edge_generators.generate_reinforce(_context(rows)) == []


def test_a_vetoed_edge_hands_its_place_to_the_best_remaining_move():
    """Routes through P → Q succeed about half the time, in a project where 93 % succeed: the veto fires.
    The learner alone pushed P → R down (the confirmed routes through Q taught it that Q was the move),
    so P → R takes P → Q's former weight: the routes continue past P instead of stopping there."""
    rows = (
        _via_pq(UnifiedOutcome.CONFIRMED, 27)
        + _via_pq(UnifiedOutcome.FAILURE, 25)
        + _answered("R", UnifiedOutcome.CONFIRMED, 300)
    )
    learned, _, _, _ = edge_generators.learn_weights(_context(rows))
    assert learned[("P", "R", "LEADS_TO")] < 0.3  # the learner's own value for the alternative

    [candidate] = edge_generators.generate_reinforce(_context(rows))

    assert candidate.kind == "EDGE_INHIBIT"
    weights = {(op.source, op.target): (op.previous, op.weight) for op in candidate.ops}
    assert weights == {("P", "Q"): (0.9, -0.5), ("P", "R"): (0.3, 0.9)}
    [heir] = [e for e in candidate.evidence["edges"] if e.get("heir")]
    assert heir["edge"] == ["P", "R", "LEADS_TO"]


def test_a_move_whose_own_routes_fail_does_not_inherit():
    """P → S weighs most after P → Q is vetoed, but its own routes failed more often than not: P → R
    inherits."""
    graph = replace(
        CAPACITY,
        nodes=(*CAPACITY.nodes, _node("S", "Action", handler="python:x")),
        edges=(*CAPACITY.edges, EdgeData("P", "S", "LEADS_TO", 1.0)),
    )
    via_ps = {"path": ["P", "S"], "edges": [["P", "S", "LEADS_TO"]], "kind": "ACTION"}
    rows = (
        _via_pq(UnifiedOutcome.CONFIRMED, 6)
        + _via_pq(UnifiedOutcome.FAILURE, 10)
        + [{**via_ps, "outcome": UnifiedOutcome.FAILURE, "source": i % 5} for i in range(3)]
        + [{**via_ps, "outcome": UnifiedOutcome.CONFIRMED, "source": i % 5} for i in range(2)]
        + _answered("R", UnifiedOutcome.CONFIRMED, 300)
    )
    learned, _, _, own = edge_generators.learn_weights(_context(rows, graph))
    assert (
        learned[("P", "S", "LEADS_TO")] > learned[("P", "R", "LEADS_TO")] and own[("P", "S", "LEADS_TO")] < 0
    )

    [candidate] = edge_generators.generate_reinforce(_context(rows, graph))

    assert candidate.kind == "EDGE_INHIBIT"
    assert [e["edge"][1] for e in candidate.evidence["edges"] if e.get("heir")] == ["R"]


def test_the_veto_needs_a_share_significantly_below_the_projects():
    """12 failures of 20 against a project that succeeds 83 % of the time: the bound is below it.
    The same 12 of 20 in a project that succeeds 43 % of the time: it is not. Fewer than
    ``min_veto_outcomes`` strong outcomes never veto."""
    edge = ("P", "Q", "LEADS_TO")
    edge_rows = _via_pq(UnifiedOutcome.FAILURE, 12) + _via_pq(UnifiedOutcome.CONFIRMED, 8)
    busy_good = _answered("R", UnifiedOutcome.CONFIRMED, 200) + _answered("R", UnifiedOutcome.FAILURE, 30)
    busy_poor = _answered("R", UnifiedOutcome.CONFIRMED, 90) + _answered("R", UnifiedOutcome.FAILURE, 120)

    assert set(edge_generators.vetoed_edges(_context(edge_rows + busy_good))) == {edge}
    assert edge_generators.vetoed_edges(_context(edge_rows + busy_poor)) == {}
    few = _via_pq(UnifiedOutcome.FAILURE, 9)
    assert edge_generators.vetoed_edges(_context(few + busy_good)) == {}
    silent = [{**r, "outcome": UnifiedOutcome.LOW_CONFIDENCE} for r in _via_pq(0, 40)]
    assert edge_generators.vetoed_edges(_context(silent + busy_good)) == {}


def test_reinforce_never_demotes_an_edge_whose_own_routes_end_well():
    good = {
        "path": ["P", "Q"],
        "edges": [["P", "Q", "LEADS_TO"]],
        "kind": "ACTION",
        "outcome": UnifiedOutcome.CONFIRMED,
    }
    weak = {"path": ["P", "Q"], "edges": [["P", "Q", "LEADS_TO"]], "outcome": UnifiedOutcome.UNCERTAIN}

    assert edge_generators.generate_reinforce(_context([good] * 30 + [weak] * 30)) == []


def test_silent_routes_alone_never_promote_an_edge():
    graph = replace(
        CAPACITY, edges=(EdgeData("P", "Q", "LEADS_TO", 0.5), EdgeData("P", "R", "LEADS_TO", 0.3))
    )
    weak = {"path": ["P", "Q"], "edges": [["P", "Q", "LEADS_TO"]], "outcome": UnifiedOutcome.UNCERTAIN}
    _, support, _, own = edge_generators.learn_weights(_context([weak] * 40, graph))

    assert support[("P", "Q", "LEADS_TO")] == 40
    assert own[("P", "Q", "LEADS_TO")] == 0.0  # no strong outcome: no evidence of its own
    assert edge_generators.generate_reinforce(_context([weak] * 40, graph)) == []


def _sessions(turns: list[tuple[str, str]], sources: int = 5) -> list[dict[str, Any]]:
    """Two-turn sessions, one per (first, second) node pair, each a request answered on its node."""
    rows: list[dict[str, Any]] = []
    for i, (first, second) in enumerate(turns):
        for node in (first, second):
            rows.append({"path": [node], "outcome": UnifiedOutcome.UNCERTAIN, "session": 10_000 + i})
            rows[-1]["source"] = i % sources
    return rows


def _flat(names: list[str]) -> GraphData:
    return GraphData(nodes=tuple(_node(n) for n in names), edges=())


def test_a_follow_up_most_users_make_becomes_an_edge_before_it_is_frequent():
    # twelve of the fourteen follow-ups after P ask Q, among sixty other follow-ups at random: a clear
    # pattern long before a fixed count of 25
    others = [f"T{i}" for i in range(10)]
    names = ["P", "Q", *others]
    rng = np.random.default_rng(4)
    turns = [("P", "Q")] * 12 + [("P", "T0"), ("P", "T1")]
    turns += [(others[a], others[b]) for a, b in rng.integers(0, 10, size=(60, 2)).tolist() if a != b]

    [candidate] = edge_generators.generate_coactivation(_context(_sessions(turns), _flat(names)))

    assert candidate.ops == (EdgeAdd("P", "Q", "RELATED_TO", 0.7, "frequent follow-up in the same session"),)
    evidence = candidate.evidence
    assert (evidence["support"], evidence["followups_after"]) == (12, 14)
    assert evidence["share_lower"] >= 0.25 and evidence["share_lower"] >= 2 * evidence["base_share"]


@pytest.mark.parametrize("scale", [1, 4])
def test_chance_follow_ups_never_become_edges_however_busy(scale: int):
    # users ask any of twelve topics next, at random: every pair recurs (tens of sessions each at the
    # busier scale) but no topic draws more than its chance share of what follows another
    names = [f"T{i}" for i in range(12)]
    rng = np.random.default_rng(3)
    turns = [(names[a], names[b]) for a, b in rng.integers(0, 12, size=(1000 * scale, 2)).tolist()]

    assert edge_generators.generate_coactivation(_context(_sessions(turns), _flat(names))) == []


def test_a_topic_everyone_asks_next_is_not_tied_to_any_one_node():
    # half of all follow-ups, after whatever came first, go to Y (the rest at random): Y follows P no
    # more often than it follows anything
    others = [f"T{i}" for i in range(10)]
    names = ["P", "Y", *others]
    rng = np.random.default_rng(5)
    turns = [
        (first, "Y" if rng.random() < 0.5 else others[int(rng.integers(10))])
        for first in ("P", *others)
        for _ in range(40)
    ]

    assert edge_generators.generate_coactivation(_context(_sessions(turns), _flat(names))) == []


def test_a_recurring_detour_becomes_a_shortcut_proposal():
    graph = GraphData(
        nodes=(_node("D1", "Decision"), _node("D2", "Decision"), _node("T", "Action", handler="python:x")),
        edges=(EdgeData("D1", "D2", "LEADS_TO", 0.8), EdgeData("D2", "T", "LEADS_TO", 0.8)),
    )
    detour = {"path": ["D1", "D2", "T"], "kind": "ACTION", "outcome": UnifiedOutcome.CONFIRMED}
    rows = [{**detour, "source": i % 4} for i in range(20)]

    [candidate] = edge_generators.generate_detours(_context(rows, graph))

    assert candidate.kind == "EDGE_ADD"
    assert candidate.ops == (EdgeAdd("D1", "T", "LEADS_TO", 0.7, "shortcut learned from repeated detours"),)
    assert candidate.evidence["support"] == 20 and candidate.evidence["hops"] == {2: 20}


def test_a_detour_from_too_few_sources_is_not_proposed():
    graph = GraphData(
        nodes=(_node("D1", "Decision"), _node("D2", "Decision"), _node("T")),
        edges=(EdgeData("D1", "D2", "LEADS_TO", 0.8), EdgeData("D2", "T", "LEADS_TO", 0.8)),
    )
    rows = [{"path": ["D1", "D2", "T"], "outcome": UnifiedOutcome.CONFIRMED, "source": 1} for _ in range(20)]

    assert edge_generators.generate_detours(_context(rows, graph)) == []


GUARDED = GraphData(
    nodes=(
        _node("FAQ"),
        _node("Clarify", "Clarify"),
        _node("Refund", "Action", risk="high", handler="python:x"),
        _node("Policy"),
        _node("Policy2"),
    ),
    edges=(
        EdgeData("Clarify", "Refund", "LEADS_TO", 0.8),
        EdgeData("Refund", "Policy", "REQUIRES", 1.0),
        EdgeData("Policy2", "Clarify", "LEADS_TO", 0.5),
    ),
)


def _apply(graph: GraphData, ops: tuple) -> GraphData:
    from review.changeset_apply import KnowledgeState, changeset_apply

    return changeset_apply(KnowledgeState(graph, {"labels": []}), ops).graph


def test_integrity_refuses_a_shortcut_around_a_required_check():
    ops = (EdgeAdd("FAQ", "Refund", "LEADS_TO", 0.7),)

    violations = integrity_violations(GUARDED, _apply(GUARDED, ops), ops)

    assert [(v.rule, v.message) for v in violations] == [
        ("integrity.unguarded_reach", "FAQ would reach the guarded node Refund without a check")
    ]


def test_integrity_refuses_merging_a_requirement_into_the_action_that_requires_it():
    ops = merge_changeset(GUARDED, "Refund", "Policy", reason="dup")

    rules = {v.rule for v in integrity_violations(GUARDED, _apply(GUARDED, ops), ops)}

    assert rules == {"integrity.type_family", "integrity.requirement_lost"}


def test_integrity_accepts_a_merge_of_duplicates_behind_the_same_check():
    ops = merge_changeset(GUARDED, "Policy", "Policy2", reason="dup")

    assert integrity_violations(GUARDED, _apply(GUARDED, ops), ops) == []


def test_gedig_entropy_and_path_terms():
    h, k = entropy([1.0, 1.0], temperature=1.0)
    assert (round(h, 6), k) == (round(np.log(2), 6), 2)
    # a landing that becomes decisive gains order: (H_before − H_after) / log K > 0
    assert delta_h_norm([[1.0, 1.0]], [[1.0, 0.0]], temperature=0.1) == pytest.approx(1.0, abs=1e-3)
    import networkx as nx

    chain = nx.DiGraph([("a", "b"), ("b", "c")])
    assert aspl(chain, {"a", "b", "c"}) == pytest.approx(4 / 3)


def test_gedig_gauge_of_a_shortcut_confirms_a_structural_gain():
    graph = GraphData(
        nodes=(_node("A"), _node("B"), _node("C")),
        edges=(EdgeData("A", "B", "LEADS_TO", 1.0), EdgeData("B", "C", "LEADS_TO", 1.0)),
    )
    ops = (EdgeAdd("A", "C", "LEADS_TO", 0.7),)

    g = gauge(
        before=graph,
        after=_apply(graph, ops),
        ops=ops,
        landing_before=[],
        landing_after=[],
        params=loop_params().gedig,
    )

    assert g.edit_cost == 1.0 and g.delta_epc_norm == pytest.approx(0.05)
    assert g.delta_sp_rel[1] == pytest.approx((4 / 3 - 1.0) / (4 / 3))
    assert g.gmin < g.g0 and g.b == g.gmin


BINS = loop_params().bins
GOOD = {
    "score": 0.2,
    "violations": {"taxonomy": [], "security": []},
    "confirmed_gain": 0.1,
    "zone_coverage": 0.0,
    "zone_interactions": 50,
    "silence_dominated": False,
    "gedig": {"g0": 0.1, "b": -0.2},
}
FIXED_GATE = GateThresholds(theta_ag=0.3, theta_dg=0.0, source="fixed", n_history=0)


NO_EFFECT = {
    "score": -0.001,
    "sample": {"zone": 40, "control": 80},
    "changed_targets": 0,
    "gains": {"delta_confirmed": 0.0, "delta_uncertain": 0.0, "delta_fit": 0.0, "delta_path_length": 0.0},
    "violations": {"taxonomy": [], "security": []},
}


@pytest.mark.parametrize(
    ("kind", "replay", "guard", "boosted", "expected_bin", "reason"),
    [
        ("EDGE_INHIBIT", GOOD, {}, set(), "HIGH_CONF", "with confirmed evidence"),
        (
            "EDGE_INHIBIT",
            {**GOOD, "silence_dominated": True},
            {},
            set(),
            "MID_CONF",
            "dominated by uncertain",
        ),
        ("EDGE_INHIBIT", {**GOOD, "confirmed_gain": 0.0}, {}, set(), "MID_CONF", "ActiveCheckCoverage 0.00"),
        ("EDGE_INHIBIT", {**GOOD, "confirmed_gain": 0.0, "zone_coverage": 0.5}, {}, set(), "HIGH_CONF", ""),
        ("SPLIT", GOOD, {}, set(), "MID_CONF", "SPLIT proposals always go to an expert"),
        (
            "EDGE_INHIBIT",
            GOOD,
            {"no_autocommit": True, "reason": "one segment"},
            set(),
            "MID_CONF",
            "one segment",
        ),
        ("EDGE_INHIBIT", GOOD, {}, {"P"}, "MID_CONF", "confidence boost on P"),
        ("EDGE_INHIBIT", {**GOOD, "score": 0.05}, {}, set(), "MID_CONF", "below the auto-commit threshold"),
        # a high score that rests on the action prior (an action nobody took yet) goes to an expert …
        (
            "EDGE_INHIBIT",
            {**GOOD, "gains": {"modelled_action_gain": 0.15}},
            {},
            set(),
            "MID_CONF",
            "an action nobody took yet is not evidence",
        ),
        # … one that reaches the bar without it does not
        (
            "EDGE_INHIBIT",
            {**GOOD, "score": 0.3, "gains": {"modelled_action_gain": 0.15}},
            {},
            set(),
            "HIGH_CONF",
            "≥",
        ),
        ("EDGE_INHIBIT", {**GOOD, "score": 0.0}, {}, set(), "LOW_CONF", "< 0.01"),
        # … nor does the prior bury a change whose score without it reaches the review bar …
        (
            "EDGE_INHIBIT",
            {**GOOD, "score": -0.001, "gains": {"modelled_action_gain": -0.18}},
            {},
            set(),
            "MID_CONF",
            "neither commits a change nor buries it",
        ),
        # … while a change that stays below the bar without it goes to the backlog
        (
            "EDGE_INHIBIT",
            {**GOOD, "score": -0.05, "gains": {"modelled_action_gain": -0.03}},
            {},
            set(),
            "LOW_CONF",
            "< 0.01",
        ),
        # the geDIG gates before auto-commit: an ambiguous change, an unconfirmed gain, no gauge at all
        ("EDGE_INHIBIT", {**GOOD, "gedig": {"g0": 0.4, "b": -0.2}}, {}, set(), "MID_CONF", "AG fired"),
        ("EDGE_INHIBIT", {**GOOD, "gedig": {"g0": 0.1, "b": 0.05}}, {}, set(), "MID_CONF", "DG did not"),
        ("EDGE_INHIBIT", {**GOOD, "gedig": {}}, {}, set(), "MID_CONF", "no gauge"),
        # replay saw no effect at all: unmeasured, not found wanting → an expert decides
        ("EDGE_ADD", NO_EFFECT, {}, set(), "MID_CONF", "replay saw no effect on the 120 sampled requests"),
        # … but a measured effect, however small, keeps the score's verdict
        (
            "EDGE_ADD",
            {**NO_EFFECT, "gains": {"delta_confirmed": 0.0, "delta_fit": -0.002}},
            {},
            set(),
            "LOW_CONF",
            "< 0.01",
        ),
        ("EDGE_ADD", {**NO_EFFECT, "changed_targets": 2}, {}, set(), "LOW_CONF", "< 0.01"),
        # requests moved to a merged node that keeps their node's whole content got the same answer
        (
            "MERGE",
            {**NO_EFFECT, "changed_targets": 42, "same_answer_moves": 42},
            {},
            set(),
            "MID_CONF",
            "replay saw no effect",
        ),
        (
            "MERGE",
            {**NO_EFFECT, "changed_targets": 42, "same_answer_moves": 41},
            {},
            set(),
            "LOW_CONF",
            "< 0.01",
        ),
        ("EDGE_ADD", {**NO_EFFECT, "score": -0.05}, {}, set(), "LOW_CONF", "< 0.01"),
        # a label's placement: replay measures routing, so a small score either way goes to an expert …
        (
            "LABEL_REATTACH",
            {**GOOD, "score": -0.008, "changed_targets": 3, "gains": {"delta_fit": -0.001}},
            {},
            set(),
            "MID_CONF",
            "LABEL_REATTACH changes where a label sits in the taxonomy",
        ),
        (
            "LABEL_REATTACH",
            {**GOOD, "score": 0.002},
            {},
            set(),
            "MID_CONF",
            "above −0.01 (no measured harm to what requests get)",
        ),
        # … and so does one whose score is low only through its ambiguity term: a moved label competes
        # with other labels than before
        (
            "LABEL_REATTACH",
            {**GOOD, "score": -0.045, "gains": {"delta_ambiguity": 0.167, "ambiguity_cost": 0.05}},
            {},
            set(),
            "MID_CONF",
            "-0.0450, 0.0050 without its ambiguity term",
        ),
        # … measured harm keeps the backlog, a measured gain the usual rules (never auto-committed)
        ("LABEL_REATTACH", {**GOOD, "score": -0.01}, {}, set(), "LOW_CONF", "< 0.01"),
        (
            "LABEL_REATTACH",
            {**GOOD, "score": -0.07, "gains": {"delta_ambiguity": 0.167, "ambiguity_cost": 0.05}},
            {},
            set(),
            "LOW_CONF",
            "< 0.01",
        ),
        # the same ambiguity on a routing change counts: the score's verdict stands
        (
            "EDGE_ADD",
            {**GOOD, "score": -0.045, "gains": {"delta_ambiguity": 0.167, "ambiguity_cost": 0.05}},
            {},
            set(),
            "LOW_CONF",
            "< 0.01",
        ),
        ("LABEL_REATTACH", GOOD, {}, set(), "MID_CONF", "LABEL_REATTACH proposals always go to an expert"),
        # the same small score on a routing change is a measured effect: the score's verdict stands
        ("EDGE_ADD", {**GOOD, "score": 0.002}, {}, set(), "LOW_CONF", "< 0.01"),
        (
            "EDGE_INHIBIT",
            {**GOOD, "violations": {"taxonomy": [], "security": ["x"]}},
            {},
            set(),
            "LOW_CONF",
            "1 ",
        ),
    ],
)
def test_confidence_bins(kind, replay, guard, boosted, expected_bin, reason):
    decision = bin_for(
        kind=kind,
        replay=replay,
        guard=guard,
        target_keys=["P", "Q"],
        boosted=boosted,
        params=BINS,
        gate=gedig_decide(replay.get("gedig"), FIXED_GATE),
    )

    assert decision.confidence_bin == expected_bin
    assert reason in decision.reason
    assert decision.autocommit == (expected_bin == "HIGH_CONF")
    if expected_bin == "HIGH_CONF":
        assert decision.gate == "passed"
    elif "geDIG" in decision.reason:
        assert decision.gate == "held back"


def test_gedig_thresholds_come_from_the_kinds_history_then_the_projects_then_the_settings():
    params = replace(loop_params().gedig, min_history=10, ag_percentile=90.0, dg_percentile=50.0)
    edges = [(0.01 * i, -0.02 * i) for i in range(20)]  # g0 0.00…0.19, b 0.00…-0.38
    splits = [(0.5, 0.4)] * 4

    by_kind = gedig_calibrate({"EDGE_ADD": edges, "SPLIT": splits}, "EDGE_ADD", params)
    assert by_kind.source == "kind history" and by_kind.n_history == 20
    assert by_kind.theta_ag == pytest.approx(np.percentile([g for g, _ in edges], 90))
    assert by_kind.theta_dg == pytest.approx(np.percentile([b for _, b in edges], 50))

    pooled = gedig_calibrate({"EDGE_ADD": edges, "SPLIT": splits}, "SPLIT", params)
    assert pooled.source == "project history" and pooled.n_history == 24
    assert pooled.theta_dg == pytest.approx(np.percentile([b for _, b in edges + splits], 50))

    fixed = gedig_calibrate({"SPLIT": splits}, "SPLIT", params)
    assert (fixed.source, fixed.theta_ag, fixed.theta_dg, fixed.n_history) == ("fixed", 0.3, 0.0, 4)

    # a change in the better half of the kind's history passes; one at its ambiguous top is held
    assert gedig_decide({"g0": 0.05, "b": -0.3}, by_kind).allows_autocommit
    held = gedig_decide({"g0": 0.19, "b": -0.3}, by_kind)
    assert held.ag and not held.allows_autocommit and "AG fired" in held.blocker()
    assert not gedig_decide({"g0": 0.05, "b": -0.1}, by_kind).dg


def test_gedig_history_reads_recorded_gauges_only():
    rows = [("MERGE", {"gedig": {"g0": 0.2, "b": -0.1}}), ("MERGE", {"gedig": {}}), ("SPLIT", None)]
    assert gedig_history(rows) == {"MERGE": [(0.2, -0.1)]}


# --- merge: the structure check where there is (no) structure ------------------------------------


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def _near_copies(cosine: float, rng_seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(rng_seed)
    a = _unit(rng.normal(size=16))
    noise = rng.normal(size=16)
    noise = _unit(noise - (noise @ a) * a)
    return a, _unit(cosine * a + np.sqrt(1 - cosine**2) * noise)


def test_fgw_of_two_isolated_duplicates_is_their_content_distance() -> None:
    from review.loop.generators.merge import fgw_distance

    a, b = _near_copies(0.97)
    graph = GraphData(nodes=[NodeData("A", "Info", "A", ""), NodeData("B", "Info", "B", "")], edges=[])

    distance, size, weight = fgw_distance(graph, {"A": a, "B": b}, "A", "B", alpha=0.5)

    # no edge: nothing structural to preserve, the distance is folding B's embedding onto A's
    assert (size, weight) == (2, 0.0)
    assert distance == pytest.approx(0.5 * float(((a - b) ** 2).sum()), abs=1e-6)
    assert distance < loop_params().merge.fgw_epsilon  # the old structure floor (0.25) refused it


def test_fgw_still_weighs_structure_where_the_pair_has_neighbours() -> None:
    from review.loop.generators.merge import fgw_distance

    a, b = _near_copies(0.97)
    rng = np.random.default_rng(11)
    vectors = {"A": a, "B": b, **{n: _unit(rng.normal(size=16)) for n in ("X", "Y", "Z", "W")}}
    nodes = [NodeData(n, "Info", n, "") for n in vectors]

    def graph(*pairs: tuple[str, str]) -> GraphData:
        return GraphData(nodes=nodes, edges=[EdgeData(s, t, "RELATED_TO", 0.5) for s, t in pairs])

    same = graph(("A", "X"), ("B", "X"), ("A", "Y"), ("B", "Y"))
    apart = graph(("A", "X"), ("X", "Z"), ("Z", "B"))  # A and B at opposite ends of a path
    d_same, _, w_same = fgw_distance(same, vectors, "A", "B", alpha=0.5)
    d_apart, _, w_apart = fgw_distance(apart, vectors, "A", "B", alpha=0.5)

    assert w_same == w_apart == 0.5  # as many edges as a tree: full structure weight
    assert d_apart > d_same  # folding two nodes of different neighbourhoods distorts more


# --- split: the project's intent separation -------------------------------------------------------

# one domain's curated intents: neighbouring labels are close, as in a real project
CURATED = {
    "balance": [
        "what is my account balance",
        "how much money do I have",
        "show my balance",
        "balance please",
    ],
    "lost_card": ["I lost my card", "my card was stolen", "block my lost card", "report a missing card"],
    "transfer": ["send money to my sister", "transfer 50 euros to savings", "move money between accounts"],
    "pay_bill": ["pay my electricity bill", "I want to pay the phone bill", "settle my water bill"],
    "pin_change": ["change my card pin", "I forgot my pin", "set a new pin for my debit card"],
    "interest": ["what interest does my savings account earn", "current interest rate", "savings rate"],
    "freeze": ["freeze my account", "lock my account for a while", "suspend my bank account"],
    "statement": ["download my bank statement", "send me last month's statement", "where are my statements"],
    "loan": ["can I get a personal loan", "apply for a car loan", "how much can I borrow"],
    "overdraft": ["why was I charged an overdraft fee", "set up overdraft protection", "am I overdrawn"],
}


def _label_docs(spec: dict[str, list[str]], status: str = "ACTIVE") -> dict[str, dict[str, Any]]:
    return {lid: {"id": lid, "status": status, "examples": ex, "cluster": "c"} for lid, ex in spec.items()}


def test_intent_separation_needs_enough_curated_labels_with_examples() -> None:
    from review.loop.generators.split import intent_separation

    assert intent_separation(_label_docs(dict(list(CURATED.items())[:9]))) is None  # too few for a scale
    few_examples = {lid: ex[:2] for lid, ex in CURATED.items()}
    assert intent_separation(_label_docs(few_examples)) is None
    assert intent_separation(_label_docs(CURATED, status="DEPRECATED")) is None
    value = intent_separation(_label_docs(CURATED))
    assert value is not None and -1.0 < value < 1.0


def test_intent_separation_tells_two_intents_from_the_subgroups_of_one() -> None:
    from arg_platform.embedder import get_embedder
    from review.loop.generators.split import intent_separation

    separation = intent_separation(_label_docs(CURATED))
    assert separation is not None

    def centroid_cosine(first: list[str], second: list[str]) -> float:
        e = get_embedder()
        return float(_unit(e.embed(first).mean(axis=0)) @ _unit(e.embed(second).mean(axis=0)))

    # one intent, two natural sub-groups (which bill): as close as one intent's requests are
    power = ["pay my power bill", "settle the electricity bill now", "I need to pay for electricity"]
    phone = ["pay my phone bill", "settle the mobile bill now", "I need to pay for my phone plan"]
    # two intents that landed on one node
    balance = ["what's left on my account", "check my balance", "how much is in my checking account"]
    stolen = ["someone stole my card", "freeze my stolen card", "my debit card is gone"]

    assert centroid_cosine(power, phone) > separation
    assert centroid_cosine(balance, stolen) <= separation


def test_duplicates_with_a_label_each_compete_through_their_labels() -> None:
    from review.loop.generators.merge import _competitions

    rows = [{"path": ["A" if i % 2 else "B"], "outcome": 0} for i in range(12)]
    collection = collection_of(rows)
    # the classifier divides the traffic: each request's landing candidates hold one copy only …
    collection.landing_candidates = [((r["path"][0], 0.8),) for r in rows]
    # … but both copies' labels are among its top weaver labels
    collection.top_labels = [(("L1", 0.81), ("L2", 0.8), ("L0", 0.5)) for _ in rows]
    a = NodeData("A", "Info", "A", "", labels=("L1", "L0"))
    b = NodeData("B", "Info", "B", "", labels=("L2", "L0"))

    node_count, label_count = _competitions(collection).between(a, b)

    assert node_count == 0
    assert label_count == 12  # L1 (only A's) with L2 (only B's); the shared L0 does not count
    c = NodeData("C", "Info", "C", "", labels=("L0",))
    assert _competitions(collection).between(a, c) == (0, 0)


# --- split: the children's content must be as distinct as their requests ------------------------


class _Sentences:
    """An embedder stand-in: each sentence of the node's chunk embeds to a chosen vector."""

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.array([self.vectors[t] for t in texts])


@pytest.mark.parametrize(
    ("first", "second", "proposed"),
    [
        # two subjects: each child says something else → the split is proposed
        (np.eye(8)[0], np.eye(8)[1], True),
        # one subject, each sentence leaning slightly to one group: the children would say the same thing
        (_unit(np.eye(8)[2] + 0.2 * np.eye(8)[0]), _unit(np.eye(8)[2] + 0.2 * np.eye(8)[1]), False),
    ],
)
def test_a_split_needs_children_whose_content_is_as_distinct_as_their_requests(
    monkeypatch, first, second, proposed
):
    from review.loop.generators import split

    chunk = "First sentence. Second sentence."
    monkeypatch.setattr(
        split, "get_embedder", lambda: _Sentences({"First sentence.": first, "Second sentence.": second})
    )
    node = NodeData("N", "Info", "N", chunk, labels=("L1",), clusters=("c",))
    rows = [
        {"path": ["N"], "outcome": 0, "prompt": f"{'alpha' if i < 20 else 'beta'} {i}"} for i in range(40)
    ]
    context = _context(rows, GraphData(nodes=(node,), edges=()))
    context.collection.top_labels = [(("L1", 0.9),) for _ in rows]
    assign = np.array([0] * 20 + [1] * 20)
    x = np.array([np.eye(8)[0] if a == 0 else np.eye(8)[1] for a in assign])  # requests far apart
    label_docs = {"L1": {"id": "L1", "status": "ACTIVE", "cluster": "c"}}

    candidate = split._candidate(
        context, node, np.arange(40), x, ["L1"] * 40, 0.9, 2, assign, label_docs, {}, {}, 0.6, 0.6
    )

    assert (candidate is not None) is proposed
    if proposed:
        assert candidate.evidence["children_content_cosine"] == pytest.approx(0.0)


@pytest.mark.parametrize(
    ("tops", "children_labels"),
    [
        (["A"] * 20 + ["B"] * 20, {("A",), ("B",)}),  # each group is one of the node's intents
        (["A"] * 40, {("A", "B")}),  # both groups answer to one label: the children keep the node's
    ],
)
def test_a_child_keeps_its_own_intent_s_label_and_not_its_sibling_s(monkeypatch, tops, children_labels):
    from review.loop.generators import split

    sentences = {"First sentence.": np.eye(8)[0], "Second sentence.": np.eye(8)[1]}
    monkeypatch.setattr(split, "get_embedder", lambda: _Sentences(sentences))
    node = NodeData("N", "Info", "N", "First sentence. Second sentence.", labels=("A", "B"), clusters=("c",))
    rows = [
        {"path": ["N"], "outcome": 0, "prompt": f"{'alpha' if i < 20 else 'beta'} {i}"} for i in range(40)
    ]
    context = _context(rows, GraphData(nodes=(node,), edges=()))
    assign = np.array([0] * 20 + [1] * 20)
    x = np.array([np.eye(8)[a] for a in assign])
    docs = {lid: {"id": lid, "status": "ACTIVE", "cluster": "c"} for lid in ("A", "B")}

    candidate = split._candidate(
        context, node, np.arange(40), x, tops, 0.9, 2, assign, docs, {}, {}, 0.6, 0.6
    )

    assert candidate is not None
    assert {op.labels for op in candidate.ops if hasattr(op, "chunk")} == children_labels


def _two_intents_in_two_vocabularies(labels: dict[str, dict[str, Any]]):  # type: ignore[no-untyped-def]
    """A node with labels A and B whose requests are two intents (axes 0, 1), each asked in two
    wordings (axes 2, 3); the weaver names A for the first intent's requests and B for the second's.

    The wording is the stronger direction, so the requests' own k-means groups follow it.
    """
    rng = np.random.default_rng(5)
    vectors, rows, tops = [], [], []
    for intent, label in ((0, "A"), (1, "B")):
        for wording in (2, 3):
            for i in range(20):
                style = 1.2 * np.eye(8)[6] if intent else 0  # the second intent is asked the answer's way
                noise = 0.05 * rng.normal(size=8)
                vectors.append(_unit(np.eye(8)[intent] + 1.3 * np.eye(8)[wording] + style + noise))
                rows.append({"path": ["N"], "outcome": 0, "prompt": f"intent{intent} wording{wording} {i}"})
                tops.append(((label, 0.9), ("C", 0.5)))
    node = NodeData("N", "Info", "N", " ".join(SUBJECTS), labels=("A", "B"), clusters=("c",))
    context = _context(rows, GraphData(nodes=(node,), edges=()))
    context.collection.top_labels = tops
    context._vectors.update(dict(enumerate(vectors)))
    docs = {lid: {"id": lid, "status": "ACTIVE", "cluster": "c", **doc} for lid, doc in labels.items()}
    return context, node, np.arange(len(rows)), docs


# the answer holds one subject per intent, in a style (axis 6) closer to the second intent's requests:
# every sentence is nearer that group's centroid, so only affinities centred per group divide it
SUBJECTS = {
    "Balance one.": _unit(np.eye(8)[0] + 0.1 * np.eye(8)[4] + 1.5 * np.eye(8)[6]),
    "Balance two.": _unit(np.eye(8)[0] + 0.1 * np.eye(8)[5] + 1.5 * np.eye(8)[6]),
    "Request one.": _unit(np.eye(8)[1] + 0.1 * np.eye(8)[4] + 1.5 * np.eye(8)[6]),
    "Request two.": _unit(np.eye(8)[1] + 0.1 * np.eye(8)[5] + 1.5 * np.eye(8)[6]),
}


@pytest.mark.parametrize(
    ("labels", "proposed"),
    [
        ({"A": {}, "B": {}, "C": {}}, True),  # two intents the curators keep apart
        ({"A": {}, "B": {"parent": "A"}, "C": {}}, False),  # B refines A: one intent, no label reading
        ({"A": {}, "B": {"status": "DEPRECATED"}, "C": {}}, False),  # only ACTIVE labels are intents
    ],
)
def test_when_request_groups_follow_wording_the_node_s_own_labels_group_them(monkeypatch, labels, proposed):
    from review.loop.generators import split

    monkeypatch.setattr(split, "get_embedder", lambda: _Sentences(SUBJECTS))
    context, node, rows, docs = _two_intents_in_two_vocabularies(labels)
    x, _, tops = split._features(context, rows)

    # the requests' own reading groups by wording, and the content cannot be divided along it
    wording = split.kmeans(x, 2, context.rng("wording"))
    assert wording[0] == wording[40] != wording[20] == wording[60]
    assert split._candidate(context, node, rows, x, tops, 0.7, 2, wording, docs, {}, {}, 0.6, 0.6) is None

    candidate = split._split_node(context, node, rows, docs, {}, {}, 0.6, 0.6)

    assert (candidate is not None) is proposed
    if proposed:
        assert candidate.evidence["grouping"] == "labels"
        children = {op.labels: op for op in candidate.ops if hasattr(op, "chunk")}
        # each child carries its own intent's label only, and that intent's subject
        assert set(children) == {("A",), ("B",)}
        assert children[("A",)].chunk == "Balance one. Balance two."
        assert children[("B",)].chunk == "Request one. Request two."
        assert set(candidate.subgroups[children[("A",)].node_id]) == set(range(40))
        assert set(candidate.subgroups[children[("B",)].node_id]) == set(range(40, 80))


def test_a_split_group_is_judged_by_the_taxonomy_region_its_weaver_labels_fall_in():
    from review.loop.generators.split import group_region_label

    docs = {
        "A": {"id": "A", "status": "ACTIVE", "cluster": "travel"},
        "B": {"id": "B", "status": "ACTIVE", "cluster": "travel"},
        "FEES": {"id": "FEES", "status": "ACTIVE", "cluster": "cards"},
        "OLD": {"id": "OLD", "status": "DEPRECATED", "cluster": "travel"},
    }
    node = NodeData("N", "Info", "N", "N.", labels=("A",), clusters=("travel",))
    # one label of another cluster is the most frequent, but the node's cluster holds most of the group
    assert group_region_label(["FEES"] * 14 + ["A"] * 11 + ["B"] * 10, node, docs) == "A"
    # most of the group's labels are in another cluster: not this node's traffic
    assert group_region_label(["FEES"] * 20 + ["A"] * 5 + ["B"] * 4, node, docs) is None
    # only ACTIVE labels vote; a group with none has no region
    assert group_region_label(["OLD"] * 30 + ["FEES"] * 2, node, docs) is None
    assert group_region_label(["", "OLD"], node, docs) is None


# --- split: only a node whose users report a problem ------------------------------------------------


def test_wilson_bounds():
    assert wilson_upper(0, 0, 1.28) == 1.0  # no signal: anything is possible
    assert wilson_upper(9, 10, 1.28) == pytest.approx(0.9695, abs=1e-4)
    assert wilson_upper(3, 10, 1.28) == pytest.approx(0.5024, abs=1e-4)
    # more signals at the same share tighten the bound towards it
    assert wilson_upper(30, 100, 1.28) < wilson_upper(3, 10, 1.28)
    assert wilson_upper(30, 100, 1.28) > 0.3
    assert wilson_lower(0, 0, 1.28) == 0.0
    assert wilson_lower(9, 10, 1.28) < 0.9 < wilson_upper(9, 10, 1.28)


def test_only_nodes_whose_users_say_the_answer_helps_less_than_the_projects_are_split(monkeypatch):
    from review.loop.generators import split

    def outcomes(node: str, helpful: int, unhelpful: int, silent: int) -> list[dict[str, Any]]:
        return (
            [{"path": [node], "outcome": UnifiedOutcome.CONFIRMED}] * helpful
            + [{"path": [node], "outcome": UnifiedOutcome.FAILURE}] * unhelpful
            + [{"path": [node], "outcome": UnifiedOutcome.UNCERTAIN}] * silent
        )

    rows = (
        outcomes("MIXED", 4, 10, 30)  # two intents on one node: 29 % helpful
        + outcomes("GOOD", 13, 1, 30)  # one intent with sub-groups: 93 % helpful
        + outcomes("SILENT", 0, 0, 44)  # nobody said anything
        + outcomes("OTHER", 90, 10, 0)
    )
    graph = GraphData(nodes=tuple(_node(n) for n in ("MIXED", "GOOD", "SILENT", "OTHER")), edges=())
    tried: list[str] = []

    def clustered(context, node, *args):  # type: ignore[no-untyped-def]
        tried.append(node.node_id)
        return Candidate(kind="SPLIT", title=node.node_id, summary="", ops=(), evidence={}, generator={})

    monkeypatch.setattr(split, "_split_node", clustered)
    [candidate] = split.generate(_context(rows, graph))

    # the project: 107 helpful of 128 signals (84 %); GOOD and OTHER are served as well, SILENT has no signal
    assert tried == ["MIXED"]
    assert candidate.evidence["satisfaction"] == {
        "helpful": pytest.approx(4 / 14, abs=1e-4),
        "signals": 14,
        "upper_bound": pytest.approx(wilson_upper(4, 14, loop_params().split.satisfaction_z), abs=1e-4),
        "project_helpful": pytest.approx(107 / 128, abs=1e-4),
    }


def test_a_child_label_is_named_with_the_words_its_requests_share_in_the_order_they_use_them():
    from review.loop.generators.base import request_phrase

    group = [
        "hey can I export invoices in bulk for accounting?",
        "can I export invoices in bulk for accounting thanks",
        "export all invoices in bulk for our accountant",
        "quick question: bulk export of invoices for accounting",
    ]
    assert request_phrase(group, group[1]) == ["export", "invoice", "bulk", "accounting"]
    # a word most of the group does not use ("question", "accountant") never names it
    assert request_phrase(group, group[3]) == ["bulk", "export", "invoice", "accounting"]
    assert request_phrase(group, group[2], top=2) == ["export", "invoice"]


def test_a_new_label_s_examples_leave_out_other_labels_wording():
    """What the curation guard would refuse at approval (a term identical or very close to another routing
    label's) is not proposed as an example; the next closest prompts take its place, in order."""
    from review.loop.generators.labels import distinct_examples

    labels = {
        "L1": {
            "id": "L1",
            "status": "ACTIVE",
            "name": "Travel alert",
            "synonyms": [],
            "examples": ["does spain expect any travel alerts"],
        },
        "L2": {
            "id": "L2",
            "status": "DEPRECATED",
            "name": "Old",
            "synonyms": [],
            "examples": ["let my bank know"],
        },
    }
    candidates = [
        "does spain expect any travel alerts",  # identical to L1's example
        "does spain have any travel alerts",  # a near-paraphrase of it
        "tell my bank i am travelling to spain",
        "let my bank know",  # only a DEPRECATED label's: it routes nothing
        "i will be abroad next week, notify my card issuer",
    ]
    documents = {"labels": [{**doc, "cluster": "travel", "parent": None} for doc in labels.values()]}
    kept = distinct_examples(candidates, documents, 3)
    assert kept == [
        "tell my bank i am travelling to spain",
        "let my bank know",
        "i will be abroad next week, notify my card issuer",
    ]
    assert distinct_examples(candidates, documents, 1) == ["tell my bank i am travelling to spain"]
