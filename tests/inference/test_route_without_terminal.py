"""A route with no target through POST /api/v1/infer: traversal may end without a terminal node
(``no_terminal``: hop caps, inhibited exits) or refuse the landing point itself (``start_forbidden``).
The request is still answered — by the landing point, or as out of scope — and flagged with the
route's reason (``route:no_terminal``, ``route:start_forbidden``); it never fails."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from inference.contracts import Route
from inference.models import InferenceLog
from inference.steps import traversal

pytestmark = pytest.mark.django_db
PROMPT = "what are my options if a card payment fails"


def _route_ending(reason: str, monkeypatch: Any) -> list[str]:
    """Make traversal end with no target for ``reason``; returns the landing points it saw."""
    real = traversal.route
    starts: list[str] = []

    def route(snapshot: Any, runtime: Any, *, landing: Any, **kwargs: Any) -> Route:
        found = real(snapshot, runtime, landing=landing, **kwargs)
        starts.append(landing.node_start)
        return replace(found, target=None, reason=reason, path_nodes=(landing.node_start,))

    monkeypatch.setattr(traversal, "route", route)
    return starts


def test_no_terminal_within_reach_answers_from_the_landing_point(customer, monkeypatch):
    starts = _route_ending("no_terminal", monkeypatch)

    resp = customer.post("/api/v1/infer", {"prompt": PROMPT}, format="json")

    assert resp.status_code == 200, resp.content
    body = resp.json()
    (start,) = starts
    assert body["outcome"]["kind"] == "INFO"
    assert body["outcome"]["citations"][0]["node_id"] == start
    log = InferenceLog.objects.get(request_id=body["request_id"])
    assert log.target_node == start
    assert "route:no_terminal" in log.flags and "route:no_terminal" in body["flags"]


def test_a_forbidden_landing_point_is_out_of_scope_not_answered(customer, monkeypatch):
    starts = _route_ending("start_forbidden", monkeypatch)

    resp = customer.post("/api/v1/infer", {"prompt": PROMPT}, format="json")

    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert starts and body["outcome"]["kind"] == "OUT_OF_SCOPE"
    assert "route:start_forbidden" in body["flags"]
    assert all(c["node_id"] != starts[0] for c in body["outcome"].get("citations") or [])
