"""The replay's security rule: a logged request no node served (refused, refocused, out of scope, or asked
to clarify after an abstained landing) that reaches an ACTION on a shadow release is a violation. The
rule reads ``Replayed.unrouted``; an ordinary CLARIFY (an action asking for its missing parameters) was
routed, and reaching that action later is what it asked for."""

from __future__ import annotations

import pytest

from review.loop.replay import Replayed


def replayed(kind: str, *, abstained: bool = False) -> Replayed:
    return Replayed(
        row=0,
        target=None,
        landing=(),
        flags=frozenset(),
        path_length=0,
        kind=kind,
        info_status="",
        action_status="",
        abstained=abstained,
    )


@pytest.mark.parametrize(
    ("kind", "abstained", "unrouted"),
    [
        ("REFUSE", False, True),
        ("REFOCUS", False, True),  # the pre-check's refocus, and a policy-gated abstention
        ("OUT_OF_SCOPE", True, True),
        ("CLARIFY", True, True),  # "Do you mean X or Y?" after an abstention (inference.steps.fallback)
        ("CLARIFY", False, False),  # an action asking for its parameters: routed
        ("INFO", False, False),
        ("ACTION", False, False),
    ],
)
def test_which_requests_no_node_served(kind, abstained, unrouted):
    assert replayed(kind, abstained=abstained).unrouted is unrouted
