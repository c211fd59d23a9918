"""``POST /api/v1/infer`` with the Context Weaver's candidate modes (``ARG_WEAVER_CANDIDATES``) on the demo
pack: under ``protocol`` a label outside ``C = L_raw ∪ vector Top-K`` is never among the request's
labels, even when the classifier prefers it; under ``all`` the classifier's preference stands. The
decision log's ``weaver.candidates`` records the mode and whether the classifier's top lay outside ``C``.

A Top-K of 1 makes ``C`` small enough that the classifier's top label for the one-word prompt
"billing" lies outside it (its ``L_raw`` holds other billing labels)."""

from __future__ import annotations

from typing import Any

import pytest

from inference.models import InferenceLog

pytestmark = pytest.mark.django_db
PROMPT = "billing"


def infer(client: Any) -> tuple[dict[str, Any], InferenceLog]:
    resp = client.post("/api/v1/infer", {"prompt": PROMPT}, format="json")
    assert resp.status_code == 200, resp.content
    body = resp.json()
    return body, InferenceLog.objects.get(request_id=body["request_id"])


def test_under_the_protocol_path_a_label_outside_l_raw_and_the_top_k_cannot_be_chosen(customer, settings):
    settings.WEAVER_TOP_K = 1
    settings.WEAVER_CANDIDATES = "all"
    everything, everything_log = infer(customer)
    preferred = everything_log.weaver["candidates"]["classifier_top"]
    assert everything_log.weaver["candidates"]["classifier_top_outside"] is True
    assert preferred in everything["labels"]  # the classifier's choice stands on the earlier path

    settings.WEAVER_CANDIDATES = "protocol"
    body, log = infer(customer)
    candidates = set(log.labels_raw) | {lid for lid, _ in log.weaver["top_k"]}
    assert log.weaver["candidates"] == {
        "mode": "protocol",
        "size": len(candidates),
        "classifier_top": preferred,
        "classifier_top_outside": True,
    }
    assert body["labels"] and preferred not in body["labels"]
    assert set(body["labels"]) <= candidates
    assert {lid for lid, _ in log.weaver["classifier"]} - {"oos"} <= candidates


def test_with_the_default_top_k_the_classifier_top_of_the_same_prompt_lies_inside_c(customer):
    body, log = infer(customer)

    assert log.weaver["candidates"]["mode"] == "protocol"  # the platform's default path (docs/benchmarks.md)
    assert log.weaver["candidates"]["classifier_top_outside"] is False
    assert log.weaver["candidates"]["classifier_top"] in body["labels"]
