"""Replay's action prior: a request a change sends to an existing action nobody reached in the window
is estimated by the window's mean action outcome, not by nothing. The prior's share of the action gain
is kept out of ``confirmed_gain`` (auto-commit rests on observed outcomes only)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from review.loop.collection import UnifiedOutcome
from review.loop.generators.base import Candidate
from review.loop.params import loop_params
from review.loop.replay import Replayed, Replayer
from tests.review.test_loop_replay_fit import _scored

C, F, U = UnifiedOutcome.CONFIRMED, UnifiedOutcome.FAILURE, UnifiedOutcome.UNCERTAIN


def _replayer(logged: list[tuple[str, UnifiedOutcome]], **replay: int) -> Replayer:
    """A replayer over a window of action requests, each ``(node it ended on, outcome)``; node ``N``
    (the action that takes over) exists and was never reached."""
    n = len(logged)
    targets = [node for node, _ in logged]
    names = sorted(set(targets) | {"N"})
    collection = SimpleNamespace(
        target=np.array([names.index(t) for t in targets], dtype=np.int64),
        node_names=names,
        outcome=np.array([int(o) for _, o in logged], dtype=np.int8),
        kinds=["ACTION"] * n,
        target_id=lambda row: targets[row],
        log_ids=np.arange(100, 100 + n),
        prompts=[f"request {i}" for i in range(n)],
        verified=np.zeros(n, dtype=bool),
        rows_at=lambda node_id, by="target": np.array(
            [r for r, t in enumerate(targets) if t == node_id], dtype=np.int64
        ),
    )
    base = SimpleNamespace(nodes={name: object() for name in names})
    context = SimpleNamespace(collection=collection, sample=lambda rows, limit, salt: rows[:limit])
    params = loop_params({"replay": replay}) if replay else loop_params()
    return Replayer(project=None, base=base, context=context, params=params)  # type: ignore[arg-type]


def _action(row: int, target: str) -> Replayed:
    return Replayed(
        row=row,
        target=target,
        landing=((target, 0.5),),
        flags=frozenset(),
        path_length=1,
        kind="ACTION",
        info_status="",
        action_status="DRY_RUN",
    )


VETO = Candidate(
    kind="EDGE_INHIBIT",
    title="Inhibit D → R",
    summary="",
    ops=(),
    evidence={},
    generator={},
)

# the retired action R: 2 confirmed, 2 failed; the project's other action G: 8 confirmed, 1 failed, 1 silent
WINDOW = [("R", C), ("R", F), ("R", C), ("R", F)] + [("G", C)] * 8 + [("G", F), ("G", U)]


def test_an_action_nobody_reached_is_estimated_by_the_windows_mean_action_outcome():
    replayer = _replayer(WINDOW, action_prior_min=10)
    counts: dict[str, int] = {}
    modelled: list[float] = []

    estimate = replayer.estimate(0, _action(0, "N"), VETO, counts, None, None, modelled)

    # success 10/14, failure 3/14, silence in neither channel
    assert estimate == pytest.approx([0, 0, 0, 10 / 14, 3 / 14])
    assert counts == {"action_prior": 1}
    assert modelled == [pytest.approx(7 / 14)]
    # a node with history keeps its own evidence (the logged outcome where nothing changed)
    counts = {}
    assert replayer.estimate(1, _action(1, "R"), VETO, counts) == pytest.approx([0, 0, 0, 0, 1])
    assert counts == {"logged": 1}


def test_below_the_floor_an_action_without_history_stays_unknown():
    replayer = _replayer(WINDOW, action_prior_min=15)  # 14 logged action requests
    counts: dict[str, int] = {}
    assert replayer.estimate(0, _action(0, "N"), VETO, counts) == pytest.approx([0, 0, 0, 0, 0])
    assert counts == {"pipeline": 1}


def _report(replayer: Replayer, rows: list[int], before_target: str, after_target: str):  # type: ignore[no-untyped-def]
    before = {r: _action(r, before_target) for r in rows}
    return _scored(replayer, rows, before, {r: _action(r, after_target) for r in rows}, VETO)


def test_retiring_a_failing_action_is_credited_by_the_prior_but_not_as_confirmed_evidence():
    """R's routes end 2 confirmed, 2 failed (net 0); moved to N they are expected to fare as the
    project's actions do (net 7/14 each). Without the prior the move could only lose R's successes."""
    rows = [0, 1, 2, 3]
    report = _report(_replayer(WINDOW, action_prior_min=10), rows, "R", "N")

    assert report.gains["delta_action_success"] == pytest.approx(10 / 14 - 0.5)
    assert report.gains["delta_action_failure"] == pytest.approx(3 / 14 - 0.5)
    assert report.modelled_action == pytest.approx(0.5)
    assert report.gains["modelled_action_gain"] == pytest.approx(0.5)  # action_weight 1.0
    assert report.gains["gain_action"] > 0
    assert report.confirmed_gain == pytest.approx(0.0)  # nothing observed: no auto-commit on it
    assert report.estimates == {"action_prior": 4}

    unknown = _report(_replayer(WINDOW, action_prior_min=15), rows, "R", "N")
    assert unknown.gains["gain_action"] == pytest.approx(0.0)  # 2 successes and 2 failures lost
    assert unknown.modelled_action == 0.0


def test_moving_requests_off_an_action_that_does_better_than_the_project_loses():
    """Requests moved off G (8 of 10 confirmed, net 0.7) to an action nobody reached are estimated at
    the project's mean (net 0.5): the prior credits retiring a worse-than-average action only."""
    rows = list(range(4, 14))
    report = _report(_replayer(WINDOW, action_prior_min=10), rows, "G", "N")

    assert report.gains["delta_action_success"] - report.gains["delta_action_failure"] == pytest.approx(-0.2)
    assert report.gains["gain_action"] < 0
    assert report.confirmed_gain == pytest.approx(0.0)
