"""Changesets: typed operations, their JSON form, their fingerprint and their edit cost."""

from __future__ import annotations

import pytest

from arg_platform.errors import RuleViolation
from ontology.store.port import ParameterSpec
from review.changeset import (
    AliasSet,
    EdgeAdd,
    EdgeSetWeight,
    LabelAdd,
    NodeAdd,
    NodeAttach,
    NodeStatusSet,
    changeset_dump,
    changeset_edit_cost,
    changeset_fingerprint,
    changeset_load,
    changeset_targets,
    weight_tier,
)


def _ops() -> tuple:
    return (
        LabelAdd(
            ref="c1", name="Invoice currency", cluster="billing", parent="L00003", examples=("in euros",)
        ),
        NodeAdd(
            node_id="N-a.s1",
            type="Action",
            title="Child",
            chunk="Text.",
            labels=("L00003", "new:c1"),
            clusters=("billing",),
            parameters=(ParameterSpec("invoice", "string", True, "number"),),
            handler="python:billing.x",
        ),
        NodeAttach("N-b", labels=("new:c1",)),
        EdgeAdd("N-b", "N-a.s1", "LEADS_TO", 0.7, "why"),
        EdgeSetWeight("N-b", "N-c", "LEADS_TO", -0.4, previous=0.9),
        NodeStatusSet("N-a", "DEPRECATED", "split"),
        AliasSet("N-a", ("N-a.s1",), "split"),
    )


def test_a_changeset_survives_its_json_form():
    ops = _ops()

    data = changeset_dump(ops)

    assert data[0] == {
        "op": "label_add",
        "ref": "c1",
        "name": "Invoice currency",
        "cluster": "billing",
        "parent": "L00003",
        "description": "",
        "synonyms": [],
        "examples": ["in euros"],
        "status": "SHADOW",
    }
    assert data[1]["parameters"] == [
        {"name": "invoice", "type": "string", "required": True, "description": "number"}
    ]
    assert changeset_load(data) == ops


def test_malformed_operations_are_refused_all_at_once():
    data = [
        {"op": "node_teleport", "node_id": "N-a"},
        {"op": "edge_weight", "source": "N-a", "target": "N-b", "type": "LEADS_TO", "weight": 3},
        {"op": "node_status", "node_id": "N-a", "status": "DEPRECATED", "reason": " "},
        {"op": "node_attach", "node_id": "N-a", "labels": ["new:nowhere"]},
        {"op": "edge_add", "source": "N-a", "target": "N-a", "type": "LEADS_TO"},
        {"op": "alias_set", "source": "N-a"},
    ]

    with pytest.raises(RuleViolation) as refused:
        changeset_load(data)

    assert [v.location for v in refused.value.violations] == [
        "changeset[0]",
        "changeset[1]",
        "changeset[2]",
        "changeset[4]",
        "changeset[5]",
        "changeset[3]",  # a new: reference is checked once every operation is read
    ]
    messages = " | ".join(v.message for v in refused.value.violations)
    assert "unknown operation 'node_teleport'" in messages
    assert "a weight lies in [-1, 1]" in messages
    assert "a lifecycle move needs a reason" in messages
    assert "new:nowhere names no label_add of this changeset" in messages
    assert "an edge cannot join a node to itself" in messages
    assert "missing field(s) targets" in messages


def test_the_fingerprint_ignores_generated_text_but_not_structure():
    a = (
        NodeAdd("N-x", "Info", "Title one", "Chunk one.", labels=("L00001",)),
        EdgeAdd("N-y", "N-x", "LEADS_TO", 0.7),
    )
    reworded = (NodeAdd("N-x", "Info", "Another title", "Other chunk.", labels=("L00001",)), a[1])
    reordered = (a[1], a[0])
    other_label = (NodeAdd("N-x", "Info", "Title one", "Chunk one.", labels=("L00002",)), a[1])
    same_tier = (a[0], EdgeAdd("N-y", "N-x", "LEADS_TO", 0.8))
    other_tier = (a[0], EdgeAdd("N-y", "N-x", "LEADS_TO", 0.3))

    fp = changeset_fingerprint("NODE_ADD", a)

    assert changeset_fingerprint("NODE_ADD", reworded) == fp
    assert changeset_fingerprint("NODE_ADD", reordered) == fp
    assert changeset_fingerprint("NODE_ADD", same_tier) == fp
    assert changeset_fingerprint("NODE_ADD", other_label) != fp
    assert changeset_fingerprint("NODE_ADD", other_tier) != fp
    assert changeset_fingerprint("SPLIT", a) != fp


def test_targets_and_edit_cost():
    ops = _ops()

    assert changeset_targets(ops) == ["L00003", "N-a", "N-a.s1", "N-b", "N-c"]
    # label 1 + node 1 + one attachment 0.25 + edge 1 + |−0.4 − 0.9| + status 1 + alias 0.5
    assert changeset_edit_cost(ops) == pytest.approx(1 + 1 + 0.25 + 1 + 1.3 + 1 + 0.5)


@pytest.mark.parametrize(
    ("weight", "tier"),
    [
        (1.0, "reflex"),
        (0.6, "reflex"),
        (0.59, "habitual"),
        (0.2, "habitual"),
        (0.19, "dormant"),
        (0.0, "dormant"),
        (-0.009, "dormant"),
        (-0.01, "inhibitory"),
        (-1.0, "inhibitory"),
    ],
)
def test_weight_tiers_of_seed_001(weight, tier):
    assert weight_tier(weight) == tier
