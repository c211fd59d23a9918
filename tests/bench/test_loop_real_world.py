"""The real-utterance loop benchmark's world: its ground truth, its oracle, its judge, and its pack imports.

A small CLINC-shaped data set is made here (three domains of fifteen intents), so the test needs no file
outside the repository; the benchmark itself reads CLINC150 train/validation.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from bench.loop_real.runner import Judge
from bench.loop_real.world import build_world
from taxonomy.models import Label
from taxonomy.packs import pack_import
from taxonomy.packs.reader import PackDocument

DOMAINS = {d: [f"{d}_intent_{j}" for j in range(15)] for d in ("alpha", "beta", "gamma")}


def _data() -> dict[str, list[list[str]]]:
    train = [
        [f"could you help me with {i.replace('_', ' ')} case {k}", i]
        for v in DOMAINS.values()
        for i in v
        for k in range(20)
    ]
    val = [
        [f"question on {i.replace('_', ' ')} variant {k}", i]
        for v in DOMAINS.values()
        for i in v
        for k in range(12)
    ]
    return {"train": train, "val": val}


def _world(seed: int = 3):  # type: ignore[no-untyped-def]
    return build_world(
        _data(), DOMAINS, seed=seed, chosen=tuple(DOMAINS), examples_per_label=6, eval_per_intent=5
    )


def test_one_defect_of_each_planted_kind_with_disjoint_pools() -> None:
    world = _world()
    keys = [d.key for d in world.defects]
    assert keys == [
        "split-1",
        "split-2",
        "merge-1",
        "merge-2",
        "merge-3",
        "merge-4",
        "detour",
        "obsolete",
        "new-intent",
        "followup",
    ]
    assert {d.kind for d in world.defects} == {"SPLIT", "MERGE", "EDGE_ADD", "EDGE_INHIBIT", "LABEL_ADD"}
    used = [i for d in world.defects for i in d.intents]
    assert len(used) == len(set(used))  # every defect intent carries one defect
    for intent in world.intents:
        examples, held, traffic = map(
            set, (world.examples[intent], world.held_out[intent], world.traffic[intent])
        )
        assert examples and held and traffic
        assert not (examples & held) and not (examples & traffic) and not (held & traffic)
    assert world.arrival_night == 3 and world.new_intent not in world.intents_on(2)
    assert world.new_intent in world.intents_on(3)


def test_the_oracle_reads_the_planted_structure() -> None:
    world = _world()
    nodes = {n["id"]: n for n in world.pack["nodes"]}
    labelled = {lid for n in nodes.values() for lid in n["labels"]}
    by_key = {d.key: d for d in world.defects}
    a, b = by_key["split-1"].intents
    shared = nodes[by_key["split-1"].details["node"]]
    assert world.facts_of(shared["chunk"]) == {a, b} and not world.serves(shared["chunk"], a)
    assert len(shared["labels"]) == 2 and len(nodes[by_key["split-2"].details["node"]]["labels"]) == 1
    for key in ("merge-1", "merge-2", "merge-3", "merge-4"):
        d = by_key[key]
        assert all(world.serves(nodes[n]["chunk"], d.intents[0]) for n in d.details["nodes"])
        assert len(d.details["labels"]) == (2 if "two labels" in d.variant else 1)
    edges = {(e["source"], e["target"]): e["weight"] for e in world.pack["edges"]}
    detour = by_key["detour"].details
    assert (detour["source"], detour["via"]) in edges and (detour["via"], detour["target"]) in edges
    assert (detour["source"], detour["target"]) not in edges
    obsolete = by_key["obsolete"].details
    assert edges[(obsolete["source"], obsolete["target"])] > edges[(obsolete["source"], obsolete["answer"])]
    assert world.facts_of(nodes[obsolete["target"]]["chunk"]) == {f"retired:{by_key['obsolete'].intents[0]}"}
    new = by_key["new-intent"].details["node"]
    assert nodes[new]["labels"] == [] and world.serves(nodes[new]["chunk"], world.new_intent)
    assert not any(world.new_intent.replace("_", " ") == lab["name"] for lab in world.pack["labels"])
    follow = by_key["followup"].details
    assert (follow["source"], follow["target"]) not in edges and (
        follow["target"],
        follow["source"],
    ) not in edges
    assert labelled <= {lab["id"] for lab in world.pack["labels"]}


def test_the_judge_matches_kind_and_target() -> None:
    world = _world()
    judge = Judge(world)
    by_key = {d.key: d for d in world.defects}

    def proposal(kind: str, evidence: dict | None = None, changeset: list | None = None):  # type: ignore[no-untyped-def]
        return SimpleNamespace(kind=kind, evidence=evidence or {}, changeset=changeset or [], target_keys=[])

    split_node = by_key["split-1"].details["node"]
    assert judge(proposal("SPLIT", {"node": split_node})) == "split-1"
    clean = next(n["id"] for n in world.pack["nodes"] if world.facts_of(n["chunk"]) and n["labels"])
    assert judge(proposal("SPLIT", {"node": clean})) is None
    survivor, duplicate = by_key["merge-2"].details["nodes"]
    assert judge(proposal("MERGE", {"survivor": duplicate, "duplicate": survivor})) == "merge-2"
    assert judge(proposal("SPLIT", {"survivor": duplicate, "duplicate": survivor})) is None
    d = by_key["detour"].details
    assert (
        judge(
            proposal("EDGE_ADD", changeset=[{"op": "edge_add", "source": d["source"], "target": d["target"]}])
        )
        == "detour"
    )
    o = by_key["obsolete"].details
    inhibit = [{"op": "edge_weight", "source": o["source"], "target": o["target"], "weight": -0.2}]
    assert judge(proposal("EDGE_INHIBIT", changeset=inhibit)) == "obsolete"
    inhibit[0]["weight"] = 0.1
    assert judge(proposal("EDGE_WEIGHT", changeset=inhibit)) is None
    f = by_key["followup"].details
    assert (
        judge(
            proposal("EDGE_ADD", changeset=[{"op": "edge_add", "source": f["target"], "target": f["source"]}])
        )
        == "followup"
    )
    texts = world.traffic[world.new_intent][:4] + world.traffic[world.intents[0]][:1]
    assert judge(proposal("LABEL_ADD", {"examples": texts})) == "new-intent"


@pytest.mark.django_db
def test_the_world_pack_imports_through_the_platform() -> None:
    world = _world(seed=5)
    result = pack_import(PackDocument(data=world.pack, source="test"), project_slug="loop-real-test")

    assert result.project.slug == "loop-real-test"
    assert result.created.get("nodes") == len(world.pack["nodes"])
    assert Label.objects.filter(project=result.project).count() == len(world.pack["labels"])
