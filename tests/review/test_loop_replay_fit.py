"""Replay's answer-fit model: how requests a change moves to a brand-new node (a split child) are
estimated. The model is the mean outcome of logged Info requests of nearest answer fit; a moved request
is estimated by the model at its new fit, its baseline stays its logged outcome, and the model's share
of ΔConfirmed is kept out of ``confirmed_gain`` (auto-commit rests on observed outcomes only)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from review.loop.collection import UnifiedOutcome
from review.loop.generators.base import Candidate
from review.loop.params import loop_params
from review.loop.replay import AnswerFitModel, Replayed, Replayer

CONFIRMED = np.array([1.0, 0, 0, 0, 0])
SILENT = np.array([0, 1.0, 0, 0, 0])
UNHELPFUL = np.array([0, 0, 1.0, 0, 0])


def test_the_model_is_the_mean_outcome_of_the_nearest_fits():
    fits = np.array([0.9, 0.1, 0.2, 0.8, 0.3, 0.7])  # unsorted on purpose
    outcomes = np.array([CONFIRMED, UNHELPFUL, UNHELPFUL, CONFIRMED, SILENT, SILENT])
    model = AnswerFitModel.fit(fits, outcomes, k=2)

    assert model(0.15) == pytest.approx((UNHELPFUL + UNHELPFUL) / 2)  # 0.1 and 0.2
    assert model(0.85) == pytest.approx((CONFIRMED + CONFIRMED) / 2)  # 0.8 and 0.9
    assert model(0.75) == pytest.approx((SILENT + CONFIRMED) / 2)  # 0.7 and 0.8
    assert model(-5.0) == pytest.approx(model(0.1))  # clamped to the ends
    assert model(5.0) == pytest.approx(model(0.9))
    assert AnswerFitModel.fit(fits, outcomes, k=50).k == 6  # never wider than the data


def _replayer(logged: list[UnifiedOutcome], model: AnswerFitModel | None) -> Replayer:
    """A replayer over a window where every request was logged on node P (the split's parent)."""
    n = len(logged)
    collection = SimpleNamespace(
        target=np.zeros(n, dtype=np.int64),
        node_names=["P", "Q"],
        outcome=np.array([int(o) for o in logged], dtype=np.int8),
        kinds=["INFO"] * n,
        target_id=lambda row: "P",
        log_ids=np.arange(100, 100 + n),
        prompts=[f"request {i}" for i in range(n)],
        verified=np.zeros(n, dtype=bool),
        rows_at=lambda node_id, by="target": np.flatnonzero(np.zeros(n, dtype=bool)),
    )
    base = SimpleNamespace(nodes={"P": object(), "Q": object()})
    context = SimpleNamespace(collection=collection, sample=lambda rows, limit, salt: rows[:limit])
    replayer = Replayer(project=None, base=base, context=context, params=loop_params())  # type: ignore[arg-type]
    replayer._fit_model, replayer._fit_model_built = model, True
    replayer._logged_fits = {row: 0.3 for row in range(n)}  # the parent's mixed answer fits poorly
    return replayer


def _moved(row: int, target: str, fit: float) -> Replayed:
    return Replayed(
        row=row,
        target=target,
        landing=((target, fit),),
        flags=frozenset(),
        path_length=0,
        kind="INFO",
        info_status="INFO_UNCERTAIN",
        action_status="",
        answer_fit=fit,
    )


SPLIT = Candidate(
    kind="SPLIT",
    title="Split P into 2 nodes",
    summary="",
    ops=(),
    evidence={},
    generator={},
    lineage={"P-a": ("P",), "P-b": ("P",)},
)


def _night_model() -> AnswerFitModel:
    """Users of this project confirm answers that fit (≥ 0.6) and reject ones that do not."""
    fits = np.linspace(0.0, 1.0, 400)
    outcomes = np.array([CONFIRMED if f >= 0.6 else UNHELPFUL for f in fits])
    return AnswerFitModel.fit(fits, outcomes, k=20)


def test_a_request_moved_to_a_child_that_answers_it_better_is_estimated_by_its_new_fit():
    replayer = _replayer([UnifiedOutcome.LOW_CONFIDENCE, UnifiedOutcome.CONFIRMED], _night_model())
    counts: dict[str, int] = {}
    modelled: list[tuple[float, float, float]] = []

    unhelpful_before = replayer.estimate(0, _moved(0, "P-a", 0.8), SPLIT, counts, modelled)
    confirmed_before = replayer.estimate(1, _moved(1, "P-b", 0.1), SPLIT, counts, modelled)

    assert unhelpful_before == pytest.approx(CONFIRMED)  # what answers that fit get in this project
    assert confirmed_before == pytest.approx(UNHELPFUL)  # a child that fits worse loses the credit
    assert counts == {"fit_model": 2}
    assert modelled == [(1.0, 0.3, 0.8), (-1.0, 0.3, 0.1)]  # the model's share of ΔConfirmed, fits


def test_without_a_model_the_lineage_rule_applies_and_existing_nodes_are_never_modelled():
    replayer = _replayer([UnifiedOutcome.LOW_CONFIDENCE, UnifiedOutcome.CONFIRMED], None)
    counts: dict[str, int] = {}
    assert replayer.estimate(1, _moved(1, "P-a", 0.9), SPLIT, counts) == pytest.approx(CONFIRMED)
    assert replayer.estimate(0, _moved(0, "P-a", 0.9), SPLIT, counts) == pytest.approx(SILENT)  # pipeline
    assert counts == {"lineage": 1, "pipeline": 1}

    modelled_replayer = _replayer([UnifiedOutcome.LOW_CONFIDENCE] * 2, _night_model())
    counts = {}
    estimate = modelled_replayer.estimate(0, _moved(0, "Q", 0.9), SPLIT, counts)  # an existing node
    assert counts == {"pipeline": 1}  # no history of Q here: the pipeline's verdict, not the model
    assert estimate == pytest.approx(SILENT)


def _scored(replayer: Replayer, rows: list[int], before: dict, after: dict, moved_to: Any) -> Any:
    """The replay report of ``SPLIT`` for ``rows`` replayed as ``before`` / ``after`` (no gauge, no
    violations); ``moved_to`` is the candidate the after-measurement models (``None``: none)."""
    counts_before: dict[str, int] = {}
    counts_after: dict[str, int] = {}
    m_before = replayer._measure(rows, before, None, counts_before)
    m_after = replayer._measure(rows, after, moved_to, counts_after)
    return replayer._report(
        SPLIT,
        np.array(rows),
        rows,
        before,
        after,
        m_before,
        m_after,
        SimpleNamespace(b=0.0, as_json=lambda: {}),
        {"taxonomy": [], "security": []},
        counts_after,
        0.0,
    )


def test_the_models_share_of_confirmed_is_left_out_of_confirmed_gain():
    logged = [UnifiedOutcome.LOW_CONFIDENCE] * 4
    replayer = _replayer(logged, _night_model())
    rows = [0, 1, 2, 3]
    before = {r: _moved(r, "P", 0.3) for r in rows}
    after = {r: _moved(r, "P-a", 0.8) for r in rows}
    report = _scored(replayer, rows, before, after, SPLIT)

    assert report.gains["delta_confirmed"] == pytest.approx(1.0)
    assert report.gains["delta_low_confidence"] == pytest.approx(-1.0)
    assert report.score > 0.5  # the replay credits the split
    assert report.modelled_confirmed == pytest.approx(1.0)
    assert report.confirmed_gain == pytest.approx(0.0)  # … but nothing observed: no auto-commit on it
    assert report.answer_fit == {"before": 0.3, "after": 0.8, "requests": 4}


def test_the_model_is_learned_from_the_nights_logged_info_requests_above_a_floor():
    logged = [
        UnifiedOutcome.CONFIRMED,
        UnifiedOutcome.FAILURE,
        UnifiedOutcome.UNCERTAIN,
        UnifiedOutcome.CONFIRMED,
    ]
    for floor, built in ((5, False), (4, True)):
        replayer = _replayer(logged, None)
        replayer.params = loop_params({"replay": {"fit_model_min": floor, "fit_model_k": 4}})
        replayer._fit_model_built = False
        model = replayer.fit_model()
        assert (model is not None) is built
        if model is not None:  # every request fits 0.3 here: the model is their mean outcome
            assert model(0.3) == pytest.approx((2 * CONFIRMED + UNHELPFUL + SILENT) / 4)


MERGE = Candidate(
    kind="MERGE",
    title="Merge P and Q",
    summary="",
    ops=(),
    evidence={},
    generator={},
    lineage={"P.m1": ("P", "Q")},
)


def test_a_request_moved_to_a_merged_node_that_keeps_its_answer_keeps_its_logged_outcome():
    """AB holds every sentence of A and B: the answer the user reacted to is still given, so the logged
    outcome stands — the answer-fit model (for nodes made from part of the content) does not apply."""
    replayer = _replayer([UnifiedOutcome.LOW_CONFIDENCE, UnifiedOutcome.CONFIRMED], _night_model())
    kept = {"P.m1": frozenset({"P", "Q"})}
    counts: dict[str, int] = {}

    unhelpful = replayer.estimate(0, _moved(0, "P.m1", 0.9), MERGE, counts, None, kept)
    confirmed = replayer.estimate(1, _moved(1, "P.m1", 0.1), MERGE, counts, None, kept)

    assert unhelpful == pytest.approx(UNHELPFUL) and confirmed == pytest.approx(CONFIRMED)
    assert counts == {"content_kept": 2}
    # without the content kept (a node made from part of P), the model estimates it at its new fit
    counts = {}
    assert replayer.estimate(0, _moved(0, "P.m1", 0.9), MERGE, counts, None, {}) == pytest.approx(CONFIRMED)
    assert counts == {"fit_model": 1}


def test_content_kept_names_the_origins_a_new_node_holds_whole():
    from ontology.store.port import GraphData, NodeData
    from review.loop.generators.merge import merged_text
    from review.loop.replay import content_kept

    a = "Invoices are e-mailed on the 1st. The PDF lists every seat."
    b = "Invoices are e-mailed on the 1st! Change the recipient under Billing."
    nodes = {
        "A": NodeData(node_id="A", type="Info", title="A", chunk=a),
        "B": NodeData(node_id="B", type="Info", title="B", chunk=b),
    }
    after = GraphData(
        nodes=(
            NodeData(node_id="A.m1", type="Info", title="AB", chunk=merged_text(a, b, 4000)),
            NodeData(node_id="A.s1", type="Info", title="A1", chunk="The PDF lists every seat."),
            NodeData(node_id="A.m2", type="Info", title="AB", chunk=merged_text(a, b, 70)),  # cut short
        )
    )
    lineage = {"A.m1": ("A", "B"), "A.s1": ("A",), "A.m2": ("A", "B"), "A": ("A",)}

    kept = content_kept(nodes, after, lineage)

    assert kept == {"A.m1": frozenset({"A", "B"}), "A.s1": frozenset(), "A.m2": frozenset({"A"})}


def test_a_request_moved_to_a_node_that_keeps_its_content_keeps_its_landing_quality():
    from review.loop.replay import same_answer_fits

    def replayed(row: int, target: str, fit: float) -> Replayed:
        return Replayed(
            row=row,
            target=target,
            landing=((target, fit), ("other", 0.1)),
            flags=frozenset(),
            path_length=0,
            kind="INFO",
            info_status="INFO_UNCERTAIN",
            action_status="",
        )

    before = {0: replayed(0, "P", 0.62), 1: replayed(1, "Q", 0.5), 2: replayed(2, "R", 0.4)}
    after = {0: replayed(0, "P.m1", 0.58), 1: replayed(1, "P.m1", 0.47), 2: replayed(2, "P.m1", 0.45)}
    kept = {"P.m1": frozenset({"P", "Q"})}  # R's content is not in the new node

    measured, moved = same_answer_fits([0, 1, 2], before, after, kept)

    assert moved == 2
    assert [measured[r].fit for r in (0, 1, 2)] == [0.62, 0.5, 0.45]
    assert [measured[r].target for r in (0, 1, 2)] == ["P.m1"] * 3
    assert measured[0].landing[1] == ("other", 0.1)
    assert same_answer_fits([0], before, after, {})[1] == 0  # a split child keeps nothing whole


def test_the_score_s_ambiguity_term_is_reported_for_the_bins():
    """``ambiguity_cost`` is w_amb·ΔAmbiguity, the part of Score(C) a placement change is not judged on."""
    from dataclasses import replace

    logged = [UnifiedOutcome.CONFIRMED] * 4
    replayer = _replayer(logged, None)
    rows = [0, 1, 2, 3]
    before = {r: _moved(r, "P", 0.5) for r in rows}
    after = {
        r: replace(_moved(r, "P", 0.5), flags=frozenset({"LOW_MARGIN"}) if r < 2 else frozenset())
        for r in rows
    }
    report = _scored(replayer, rows, before, after, None)

    weight = replayer.params.score.ambiguity_weight
    assert report.gains["delta_ambiguity"] == pytest.approx(0.5)
    assert report.gains["ambiguity_cost"] == pytest.approx(weight * 0.5)
    assert report.score == pytest.approx(-weight * 0.5)  # nothing else changed
