"""The confidence trade-off in the curator's hands (issue 26 item 4), on the demo pack's release.

Publication stores the held-out curve (coverage, precision, OOS recall against the ask threshold); the
Releases page draws it with the operating point marked; a curator's threshold is versioned with the
release: a prompt whose confidence lies between the calibrated and the curator's threshold is answered
under the calibrated release, asked about under the curator's, and answered again after a rollback.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from inference.learning.calibration import CURVE_STEP, CURVE_TOP, calibrate_ask_threshold, trade_off_curve
from inference.models import InferenceLog
from tests.review.queue_fixtures import user

pytestmark = pytest.mark.django_db
GRID = round(CURVE_TOP / CURVE_STEP) + 1


def infer(client: Any, prompt: str) -> dict[str, Any]:
    resp = client.post("/api/v1/infer", {"prompt": prompt}, format="json")
    assert resp.status_code == 200, resp.content
    return resp.json()


def test_the_curve_counts_answered_right_and_oos_asked_at_each_threshold():
    confidence = np.array([0.1, 0.3, 0.5, 0.7, 0.9, 0.2, 0.6])
    right = np.array([False, False, True, True, True, False, False])
    in_scope = np.array([True, True, True, True, True, False, False])

    curve = trade_off_curve(confidence, right, in_scope)

    assert len(curve) == GRID and [p["threshold"] for p in curve[:3]] == [0.0, 0.05, 0.1]
    at = {p["threshold"]: p for p in curve}
    assert at[0.0] == {"threshold": 0.0, "coverage": 1.0, "precision": 0.6, "oos_recall": 0.0}
    # from 0.4: 0.5, 0.7, 0.9 answered, all right; the oos text at 0.2 is asked about, the one at 0.6 not
    assert at[0.4] == {"threshold": 0.4, "coverage": 0.6, "precision": 1.0, "oos_recall": 0.5}
    assert at[0.95] == {"threshold": 0.95, "coverage": 0.0, "precision": None, "oos_recall": 1.0}
    # without oos texts there is no OOS recall
    assert "oos_recall" not in trade_off_curve(confidence[:5], right[:5], in_scope[:5])[0]


class ClassEmbedder:
    """Texts "a…", "b…", "c…" and "z…" (oos) near their own axis, with a little deterministic noise."""

    dim = 8

    def embed(self, texts: list[str]) -> np.ndarray:
        axis = {"a": 0, "b": 1, "c": 2, "z": 3}
        out = np.zeros((len(texts), self.dim))
        for i, text in enumerate(texts):
            out[i, axis.get(text[0], 4)] = 1.0
            out[i, 4 + sum(map(ord, text)) % 4] = 0.6
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_the_publish_hook_stores_the_curve_with_oos_recall_from_its_own_held_out_predictions():
    labels = [
        {"id": f"L{k}", "status": "ACTIVE", "examples": [f"{k} example {i}" for i in range(12)]}
        for k in ("a", "b", "c")
    ]
    documents = {"labels": labels, "oos_examples": [f"z off topic {i}" for i in range(9)]}

    _, found = calibrate_ask_threshold(documents, ClassEmbedder())

    curve = found["low_confidence"]["curve"]
    assert len(curve) == GRID and all("oos_recall" in p for p in curve)
    assert curve[0]["coverage"] == 1.0 and curve[-1]["oos_recall"] >= curve[0]["oos_recall"]
    assert [p["coverage"] for p in curve] == sorted((p["coverage"] for p in curve), reverse=True)
    assert [p["oos_recall"] for p in curve] == sorted(p["oos_recall"] for p in curve)


def test_the_demo_release_stores_the_curve_consistent_with_its_calibration(acme):
    from ontology.snapshot_registry import pin_snapshot

    found = pin_snapshot(acme.pk).documents["low_confidence"]
    curve = found["curve"]

    assert len(curve) == GRID and "oos_recall" not in curve[0]  # the demo holds no oos examples out
    at = {p["threshold"]: p for p in curve}[found["threshold"]]
    assert at["coverage"] == pytest.approx(1 - found["asked_share"], abs=1e-3)
    assert 0 < at["coverage"] < 1 and at["precision"] >= found["accuracy"]


def test_the_releases_page_draws_the_curve_with_the_operating_point(acme, client):
    from ontology.snapshot_registry import pin_snapshot

    client.force_login(user("erin-expert"))
    page = client.get(f"/p/{acme.slug}/graph/releases/").content.decode()

    threshold = pin_snapshot(acme.pk).documents["low_confidence"]["threshold"]
    svg = re.search(r'<figure class="ask-curve" id="ask-curve">(.*?)</figure>', page, re.S)
    assert svg and '<svg xmlns="http://www.w3.org/2000/svg"' in svg[1] and "<title" in svg[1]
    assert len(re.findall(r'<polyline class="ask-series" data-series="(precision|coverage)"', svg[1])) == 2
    assert f'<g id="ask-operating-point" data-threshold="{threshold}">' in svg[1]
    assert f"in force {threshold:.2f}" in svg[1] and 'id="ask-calibrated-point"' not in svg[1]
    assert re.search(
        r"At the threshold in force \([0-9.]+; curve point [0-9.]+\) the held-out examples", page
    )


CANDIDATES = [
    "how do I download an invoice",
    "I need a copy of last month's invoice",
    "download my invoice as a pdf",
    "our accountant needs every invoice from last year in one file",
    "where can I find my bills",
    "reset my password",
]


def test_a_prompt_between_the_calibrated_and_the_curators_threshold_follows_the_active_release(
    acme, customer
):
    from ontology.releases import release_activate, release_active, release_get, release_publish
    from ontology.snapshot_registry import pin_snapshot
    from tests.review.queue_fixtures import _fresh

    calibrated = pin_snapshot(acme.pk).documents["low_confidence"]["threshold"]
    first = release_active(project_id=acme.pk)
    # a prompt answered with a confidence well above the calibrated threshold
    prompt, body = next(
        (p, b)
        for p in CANDIDATES
        if (b := infer(customer, p))["outcome"]["kind"] != "CLARIFY"
        and calibrated + 0.05 < b["confidence"] < 0.85
    )
    override = round(body["confidence"] + 0.1, 2)
    admin = user("ada-admin")

    from ontology.ask_threshold import ask_threshold_set

    ask_threshold_set(project=acme, actor=admin, value=override)
    second = release_publish(project=acme, actor=admin)
    _fresh(acme.pk)

    assert second.version == first.version + 1
    assert second.ask_threshold["value"] == override and second.ask_threshold["source"] == "curator"
    assert second.ask_threshold["calibrated"] == calibrated
    asked = infer(customer, prompt)
    assert calibrated < asked["confidence"] < override
    assert asked["outcome"]["kind"] == "CLARIFY", asked
    row = InferenceLog.objects.get(project=acme, request_id=asked["request_id"])
    assert row.landing["reason"] == "low_confidence"

    release_activate(release=release_get(project=acme, version=first.version), actor=admin)
    _fresh(acme.pk)
    answered = infer(customer, prompt)
    assert answered["outcome"]["kind"] == body["outcome"]["kind"] != "CLARIFY"
