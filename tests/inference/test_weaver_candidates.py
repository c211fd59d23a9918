"""The Context Weaver's candidate set ``C = L_raw ∪ vector Top-K`` (ARG §2.2–2.3.1): under the protocol
mode the classifier chooses only inside ``C`` (labels outside it dropped, probabilities not
renormalised); under the all mode it chooses among every label; the log says which and whether the
classifier's own top label lay outside ``C``.

The unit tests build a three-label index whose classifier and label vectors are set by hand: the
classifier prefers A, the label vector search finds B, the lexical step finds C."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from inference.contracts import (
    LexicalCandidates,
    PolicyConstraints,
    PolicyDecision,
    PolicyState,
    ResponseMode,
)
from inference.learning.classifier import OOS_CLASS, LabelClassifier
from inference.steps.weaver import WeaverIndex, WeaverParams, weave
from taxonomy.validator import LabelRecord, TaxonomyView

PROBABILITIES = {"A": 0.6, "B": 0.25, "C": 0.1, OOS_CLASS: 0.05}
ALLOW = PolicyDecision(
    state=PolicyState.ALLOW, constraints=PolicyConstraints(), response_mode=ResponseMode.NORMAL
)


def hand_made_index() -> WeaverIndex:
    classes = tuple(PROBABILITIES)
    classifier = LabelClassifier(
        classes=classes,
        weights=np.zeros((len(classes), 3)),
        bias=np.log(np.array([PROBABILITIES[c] for c in classes])),  # softmax(bias) = PROBABILITIES
    )
    view = TaxonomyView(
        clusters=frozenset({"k"}),
        labels={lid: LabelRecord(lid, lid, "k", None, "ACTIVE") for lid in "ABC"},
    )
    return WeaverIndex(
        label_ids=("A", "B", "C"),
        label_status=("ACTIVE",) * 3,
        label_vectors=np.eye(3, dtype=np.float32),  # the prompt vector (0, 1, 0) is closest to B
        classifier=classifier,
        view=view,
        parents={"A": None, "B": None, "C": None},
    )


def woven(mode: str | None, *, lexical: dict[str, float] | None = None) -> Any:
    return weave(
        index=hand_made_index(),
        prompt_vec=np.array([0.0, 1.0, 0.0], dtype=np.float32),
        lexical=LexicalCandidates(raw=lexical if lexical is not None else {"C": 0.8}),
        decision=ALLOW,
        params=WeaverParams(top_k=1, candidates=mode, secondary_probability=0.05),
    )


def test_under_the_protocol_mode_a_label_outside_l_raw_and_the_top_k_is_never_chosen():
    result = woven("protocol")

    assert "A" not in result.l_final and set(result.l_final) == {"B", "C"}
    assert [lid for lid, _ in result.classifier] == ["B", "C", OOS_CLASS]  # A left the ranking
    assert result.classifier[0][1] == pytest.approx(
        0.25
    )  # the classifier's own probability, not renormalised
    assert result.confidence <= 0.25
    assert result.candidates == {
        "mode": "protocol",
        "size": 2,
        "classifier_top": "A",
        "classifier_top_outside": True,
    }


def test_under_the_all_mode_the_classifier_chooses_among_every_label():
    result = woven("all")

    assert max(result.l_final, key=result.l_final.get) == "A"
    assert result.classifier[0] == ("A", pytest.approx(0.6))
    assert result.candidates["mode"] == "all" and result.candidates["classifier_top_outside"] is True


def test_a_classifier_top_inside_c_is_chosen_as_before():
    result = woven("protocol", lexical={"A": 0.9})

    assert max(result.l_final, key=result.l_final.get) == "A"
    assert result.candidates["classifier_top_outside"] is False and result.candidates["size"] == 2


def test_the_mode_and_the_top_k_come_from_the_settings_unless_given(settings):
    settings.WEAVER_CANDIDATES, settings.WEAVER_TOP_K = "all", 2
    assert WeaverParams().resolved_candidates() == "all" and WeaverParams().resolved_top_k() == 2
    assert WeaverParams(candidates="protocol", top_k=1).resolved_candidates() == "protocol"
    assert "A" in woven(None).l_final

    settings.WEAVER_CANDIDATES = "protocol"
    assert "A" not in woven(None).l_final


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="protocol"):
        WeaverParams(candidates="everything").resolved_candidates()
