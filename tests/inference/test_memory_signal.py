"""S_memory through the API door (``inference.steps.memory_signal``): a caller's relevant, recent memory
of a node nudges a route between close candidates towards that node; the same memory months old, an
irrelevant one, or another user's does not."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from inference.services import Caller, inference_call
from memory.models import Scope, Signal
from memory.services import memory_write

pytestmark = pytest.mark.django_db
# on the demo release the beam search ends between two close Deployments terminals for this prompt
PROMPT = "how do I add my own domain"


def target(client: Any, user_id: str) -> str:
    body = client.post(
        "/api/v1/infer", {"prompt": PROMPT, "context": {"user_id": user_id}}, format="json"
    ).json()
    assert body["outcome"]["kind"] in {"INFO", "ACTION", "MEMORY"}, body
    return body["path"]["nodes"][-1]["node_id"]


def runner_up(acme: Any) -> tuple[str, str]:
    """The route's target and the best other terminal it scored, without any memory."""
    result = inference_call(
        caller=Caller(project=acme, request_id="r-memory-signal-probe", name="test", user_answer=False),
        body={"prompt": PROMPT, "context": {"role": "customer"}},
    )
    route = result.route
    assert route is not None and route.reason == "beam", route
    ranked = sorted(route.scored, key=lambda n: -n.score)
    assert ranked[0].node_id == route.target
    second = ranked[1]
    assert ranked[0].score - second.score < 0.02, "the test needs two close candidates"
    return route.target, second.node_id


def remember(acme: Any, user_id: str, node_id: str, text: str, *, days_ago: float) -> None:
    memory_write(
        project=acme,
        text=text,
        scope=Scope.USER,
        info_type="Event",
        user_id=user_id,
        node_id=node_id,
        signal=Signal.STRONG,
        occurred_at=timezone.now() - timedelta(days=days_ago),
    )


def test_a_relevant_recent_memory_changes_the_route_and_an_old_one_does_not(acme, customer):
    best, close = runner_up(acme)
    assert target(customer, "u-new") == best  # no memory: the plain score decides

    remember(acme, "u-recent", close, "I added DNS records for my own domain yesterday", days_ago=1)
    remember(acme, "u-old", close, "I added DNS records for my own domain", days_ago=120)
    remember(acme, "u-elsewhere", close, "my invoice was paid by card", days_ago=1)

    assert target(customer, "u-recent") == close
    assert target(customer, "u-old") == best  # decayed to nothing
    assert target(customer, "u-elsewhere") == best  # not about this request
    assert target(customer, "u-new") == best  # another user's memory is not yours
