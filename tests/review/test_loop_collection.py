"""Step A: unified outcomes (weak signals never confirm) and the per node / per edge metrics."""

from __future__ import annotations

from typing import Any

import pytest

from review.loop.collection import UnifiedOutcome, collect, unified_outcome


@pytest.mark.parametrize(
    ("kind", "status", "silent", "expected"),
    [
        ("INFO", "INFO_CONFIRMED_SUCCESS", False, UnifiedOutcome.CONFIRMED),
        ("INFO", "INFO_CONFIRMED_SUCCESS", True, UnifiedOutcome.UNCERTAIN),  # no signal behind it: weak
        ("INFO", "INFO_UNCERTAIN_SUCCESS", True, UnifiedOutcome.UNCERTAIN),
        ("INFO", "INFO_LOW_CONFIDENCE", True, UnifiedOutcome.LOW_CONFIDENCE),
        ("INFO", "INFO_LOW_CONFIDENCE", False, UnifiedOutcome.FAILURE),
        ("MEMORY", "MEMORY", True, UnifiedOutcome.UNCERTAIN),
        ("ACTION", "ACTION_SUCCEEDED", True, UnifiedOutcome.CONFIRMED),  # API 200: a strong system signal
        ("ACTION", "ACTION_CONFIRMED_SUCCESS", False, UnifiedOutcome.CONFIRMED),
        ("ACTION", "ACTION_REPORTED_FAILURE", False, UnifiedOutcome.FAILURE),
        ("ACTION", "ACTION_DRY_RUN", True, UnifiedOutcome.NONE),
        ("OUT_OF_SCOPE", "OUT_OF_SCOPE", True, UnifiedOutcome.NONE),
        ("REFUSE", "REFUSE", True, UnifiedOutcome.NONE),
    ],
)
def test_unified_outcome_definitions(kind, status, silent, expected):
    assert unified_outcome(outcome_kind=kind, outcome_status=status, silent=silent) == expected


def _log(project: Any, n: int, **fields: Any) -> Any:
    from inference.models import InferenceLog

    defaults = {
        "prompt": f"prompt {n}",
        "outcome_kind": "INFO",
        "outcome_status": "INFO_UNCERTAIN_SUCCESS",
        "silent_outcome": True,
        "role_key": "member",
        "context": {"channel": "web", "user_id": f"u{n}"},
    }
    return InferenceLog.objects.create(project=project, request_id=f"r-{n}", **{**defaults, **fields})


@pytest.mark.django_db
def test_metrics_per_node_and_edge_count_only_explicit_signals_as_verified(project):
    via = {
        "path_nodes": ["N-d", "N-a"],
        "path_edges": [["N-d", "N-a", "LEADS_TO"]],
        "landing": {"node_start": "N-d"},
    }
    _log(
        project,
        1,
        target_node="N-a",
        outcome_status="INFO_CONFIRMED_SUCCESS",
        silent_outcome=False,
        active_check={"kind": "helpful"},
        **via,
    )
    _log(project, 2, target_node="N-a", **via)
    _log(project, 3, target_node="N-a", outcome_status="INFO_CONFIRMED_SUCCESS", silent_outcome=True)
    _log(project, 4, target_node="N-a", outcome_status="INFO_LOW_CONFIDENCE", silent_outcome=True)
    _log(project, 5, target_node="N-a", outcome_status="INFO_LOW_CONFIDENCE", silent_outcome=False)
    _log(project, 6, target_node="N-b", outcome_kind="ACTION", outcome_status="ACTION_SUCCEEDED")
    _log(
        project,
        7,
        target_node="N-b",
        outcome_kind="ACTION",
        outcome_status="ACTION_REPORTED_FAILURE",
        silent_outcome=False,
    )
    _log(project, 8, target_node="N-oos", outcome_kind="OUT_OF_SCOPE", outcome_status="OUT_OF_SCOPE")

    collection = collect(project=project, window_days=1)

    assert collection.size == 8
    a = collection.node_metrics["N-a"].as_json()
    assert (a["n_info"], a["ConfirmedSuccessRate_info"], a["UncertainSuccessRate_info"]) == (5, 0.2, 0.4)
    assert (a["LowConfidenceRate_info"], a["ActiveCheckCoverage"]) == (0.4, 0.4)
    b = collection.node_metrics["N-b"].as_json()
    assert (b["n_action"], b["ActionSuccessRate"], b["n_info"]) == (2, 0.5, 0)
    edge = collection.edge_metrics[("N-d", "N-a", "LEADS_TO")].as_json()
    assert (edge["traversals"], edge["ConfirmedSuccessRate_info"], edge["UncertainSuccessRate_info"]) == (
        2,
        0.5,
        0.5,
    )
    assert collection.node_metrics["N-d"].landings == 2
    assert collection.summary()["strong"] == 4


@pytest.mark.django_db
def test_the_silence_dominated_node_is_flagged(project):
    for n in range(10):
        _log(project, n, target_node="N-quiet")

    collection = collect(project=project, window_days=1)

    quiet = collection.node_metrics["N-quiet"]
    assert (quiet.uncertain_rate, quiet.active_check_coverage, quiet.silence_dominated) == (1.0, 0.0, True)


@pytest.mark.django_db
def test_immediate_reuse_of_a_related_action_is_a_strong_proxy_only_when_enabled(project):
    _log(project, 1, target_node="N-info", session_id="s1")
    _log(
        project,
        2,
        target_node="N-act",
        session_id="s1",
        outcome_kind="ACTION",
        outcome_status="ACTION_SUCCEEDED",
        path_nodes=["N-info", "N-act"],
    )

    plain = collect(project=project, window_days=1)
    proxied = collect(project=project, window_days=1, reuse_proxy_s=600)

    assert plain.node_metrics["N-info"].confirmed == 0
    assert proxied.node_metrics["N-info"].confirmed == 1


@pytest.mark.django_db
def test_collection_reads_one_project_only(project, other_project):
    _log(project, 1, target_node="N-a")
    _log(other_project, 2, target_node="N-b")

    collection = collect(project=project, window_days=1)

    assert list(collection.node_metrics) == ["N-a"]
