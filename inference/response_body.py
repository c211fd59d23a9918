"""The body answering ``POST /api/v1/infer`` (``InferResponseSerializer`` documents it)."""

from __future__ import annotations

from typing import Any

from inference.contracts import plain_fields
from inference.pipeline import InferenceResult
from ontology.snapshot_registry import pin_snapshot


def infer_response_body(result: InferenceResult) -> dict[str, Any]:
    """The JSON body answering ``result``: its outcome, the path (hidden under RESTRICT), labels, flags,
    policy state, timings and, for a continuation, the question it answered."""
    outcome = result.outcome
    assert outcome is not None
    restricted = result.decision is not None and str(result.decision.state) == "RESTRICT"
    nodes: list[dict[str, str]] = []
    edges: list[list[str]] = []
    if result.route is not None and not restricted:
        snapshot = pin_snapshot(result.request.project.pk)
        if snapshot is not None and snapshot.release_id == result.release_id:
            for node_id in result.route.path_nodes:
                view = snapshot.node(node_id)
                nodes.append({"node_id": node_id, "title": view.title, "type": view.type})
        edges = [list(e) for e in result.route.path_edges]
    body_outcome = plain_fields(outcome)
    body_outcome["kind"] = str(outcome.kind)
    body_outcome["info_status"] = str(outcome.info_status) if outcome.info_status else None
    return {
        "request_id": result.request.request_id,
        "release": {"id": result.release_id, "version": result.release_version},
        "outcome": body_outcome,
        "path": {"nodes": nodes, "edges": edges},
        "explanation": result.explanation,
        "labels": result.weaver.l_final if result.weaver else {},
        "confidence": result.weaver.confidence if result.weaver else None,
        "flags": result.flags,
        "policy": {
            "state": str(result.decision.state) if result.decision else None,
            "response_mode": str(result.decision.response_mode) if result.decision else None,
        },
        "timings_ms": result.timings_ms,
        "disambiguation": None
        if result.clarified is None
        else {"request_id": result.clarified.request_id, **result.clarified.option.as_json()},
    }
