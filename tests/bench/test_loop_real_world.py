"""The real-utterance loop benchmark's world: its ground truth, its oracle, its judge, and its pack imports.

A small CLINC-shaped data set is made here (three domains of fifteen intents), so the test needs no file
outside the repository; the benchmark itself reads CLINC150 train/validation.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from bench.loop_real.handlers import done
from bench.loop_real.runner import Judge
from bench.loop_real.world import FAILING_HANDLER, build_world
from inference.actions.registry import PYTHON_PREFIX, ActionContext, ActionFailed, default_registry
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


def _world(seed: int = 3, *, lifecycle: bool = False):  # type: ignore[no-untyped-def]
    return build_world(
        _data(),
        DOMAINS,
        seed=seed,
        chosen=tuple(DOMAINS),
        examples_per_label=6,
        eval_per_intent=5,
        lifecycle=lifecycle,
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


def test_lifecycle_defects_are_planted_without_touching_the_others() -> None:
    default, world = (
        _world(),
        _world(3, lifecycle=True),
    )
    assert [d.key for d in world.defects] == [d.key for d in default.defects] + ["misfiled", "retired-action"]
    by_key = {d.key: d for d in world.defects}
    # every defect of the default world is planted the same way, and only the misfiled node changes
    assert all(by_key[d.key].as_json() == d.as_json() for d in default.defects)
    before = {n["id"]: n for n in default.pack["nodes"]}
    nodes = {n["id"]: n for n in world.pack["nodes"]}
    labels = {lab["id"]: lab for lab in world.pack["labels"]}
    misfiled, retired = by_key["misfiled"], by_key["retired-action"]
    assert {i for i in nodes if i not in before} == {retired.details["node"]}
    assert [i for i in before if nodes[i] != before[i]] == [misfiled.details["node"]]
    used = [i for d in world.defects for i in d.intents]
    assert len(used) == len(set(used))

    # misfiled: the label and its node sit in another domain's cluster; its own domain is the fix
    intent = misfiled.intents[0]
    home = world.domain_of[intent]
    assert misfiled.details["cluster"] == home and misfiled.details["filed_under"] != home
    assert labels[misfiled.details["label"]]["cluster"] == misfiled.details["filed_under"]
    assert nodes[misfiled.details["node"]]["clusters"] == [misfiled.details["filed_under"]]
    assert world.serves(nodes[misfiled.details["node"]]["chunk"], intent)

    # retired action: a failing Action carries the intent's label beside the answer, and serves nobody
    intent = retired.intents[0]
    legacy, answer = nodes[retired.details["node"]], nodes[retired.details["answer"]]
    assert legacy["type"] == "Action" and legacy["handler"] == FAILING_HANDLER
    assert legacy["labels"] == [retired.details["label"]] == answer["labels"]
    assert world.facts_of(legacy["chunk"]) == {f"retired:{intent}"}
    assert world.serves(answer["chunk"], intent)
    assert world.lifecycle and world.summary()["lifecycle"] and not default.lifecycle


def test_the_judge_recognises_the_lifecycle_and_merged_node_proposals() -> None:
    world = _world(4, lifecycle=True)
    judge = Judge(world)
    by_key = {d.key: d for d in world.defects}

    def proposal(kind: str, changeset: list, evidence: dict | None = None):  # type: ignore[no-untyped-def]
        return SimpleNamespace(kind=kind, evidence=evidence or {}, changeset=changeset, target_keys=[])

    m = by_key["misfiled"].details
    move = {"op": "label_move", "label_id": m["label"], "cluster": m["cluster"], "parent": None}
    assert judge(proposal("LABEL_REATTACH", [move])) == "misfiled"
    assert judge(proposal("LABEL_REATTACH", [{**move, "cluster": m["filed_under"]}])) is None
    other = next(lab["id"] for lab in world.pack["labels"] if lab["id"] != m["label"])
    assert judge(proposal("LABEL_REATTACH", [{**move, "label_id": other}])) is None

    r = by_key["retired-action"].details
    deprecate = {"op": "node_status", "node_id": r["node"], "status": "DEPRECATED", "reason": "negatives"}
    assert judge(proposal("OBSOLESCENCE", [deprecate])) == "retired-action"
    assert judge(proposal("OBSOLESCENCE", [{**deprecate, "node_id": r["answer"]}])) is None
    assert judge(proposal("EDGE_INHIBIT", [deprecate])) is None

    # a MERGE makes a new node AB from A and B, deprecates both and redirects them to AB
    a, b = by_key["merge-3"].details["nodes"]
    ab = [
        {"op": "node_add", "node_id": f"{a}.m1"},
        {"op": "node_status", "node_id": a, "status": "DEPRECATED"},
        {"op": "node_status", "node_id": b, "status": "DEPRECATED"},
        {"op": "alias_set", "source": a, "targets": [f"{a}.m1"]},
        {"op": "alias_set", "source": b, "targets": [f"{a}.m1"]},
    ]
    evidence = {"survivor": a, "duplicate": b, "merged_node": f"{a}.m1"}
    assert judge(proposal("MERGE", ab, evidence)) == "merge-3"
    assert judge(proposal("MERGE", ab)) == "merge-3"  # from the changeset alone
    c = by_key["merge-1"].details["nodes"][0]
    assert judge(proposal("MERGE", ab, {"survivor": a, "duplicate": c})) is None


def test_the_retired_action_handler_always_fails() -> None:
    context = ActionContext(
        project_id=1, request_id="r", node_id="N-x-legacy", handler=FAILING_HANDLER, idempotency_key="k"
    )
    registered = default_registry().get(FAILING_HANDLER[len(PYTHON_PREFIX) :])
    assert registered is not None
    with pytest.raises(ActionFailed):
        registered.func({}, context)
    assert done({}, context)["done"] is True


@pytest.mark.django_db
def test_the_lifecycle_world_pack_imports_through_the_platform() -> None:
    world = _world(5, lifecycle=True)
    result = pack_import(PackDocument(data=world.pack, source="test"), project_slug="loop-real-lifecycle")

    misfiled = next(d for d in world.defects if d.key == "misfiled").details
    label = Label.objects.get(project=result.project, label_id=misfiled["label"])
    assert label.cluster.key == misfiled["filed_under"]
    assert result.created.get("nodes") == len(world.pack["nodes"])


@pytest.mark.django_db
def test_night_shift_moves_the_nights_logs_and_feedback_back_only() -> None:
    from datetime import timedelta

    from django.utils import timezone

    from bench.loop_real.runner import night_shift
    from inference.models import Feedback, InferenceLog

    project = pack_import(
        PackDocument(data=_world(seed=6).pack, source="test"), project_slug="loop-real-clock"
    ).project

    def log(n: int) -> InferenceLog:
        return InferenceLog.objects.create(
            project=project,
            request_id=f"r-{n}",
            prompt=f"prompt {n}",
            outcome_kind="ACTION",
            outcome_status="ACTION_FAILED",
            role_key="member",
            context={"channel": "web", "user_id": f"u{n}"},
        )

    earlier = log(1)
    since = timezone.now()
    tonight = log(2)
    Feedback.objects.create(log=tonight, kind=Feedback.Kind.ACTION_OUTCOME, action_succeeded=False)
    stamps = {row.pk: row.created_at for row in InferenceLog.objects.all()}

    assert night_shift(project, since, 3) == 1
    assert night_shift(project, since, 0) == 0
    moved = InferenceLog.objects.get(pk=tonight.pk)
    assert moved.created_at == stamps[tonight.pk] - timedelta(days=3)
    assert InferenceLog.objects.get(pk=earlier.pk).created_at == stamps[earlier.pk]
    assert Feedback.objects.get(log=tonight).created_at < since - timedelta(days=2)
