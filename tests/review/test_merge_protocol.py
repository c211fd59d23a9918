"""A merge as ARG §3.5.2 says: A + B → a new node AB with the merged content and the union of their edges
and attachments, A and B DEPRECATED, aliases A → AB and B → AB, memory reads redirected; the integrity
test still guards it.

The end-to-end test goes through the real doors: the reviewer reads AB's content in the proposal's
preview (API) and page (HTML), an expert edits it there, the review API approves the proposal and the
apply job publishes the release; the infer API then lands on AB for requests that landed on A and on B,
and a memory read keyed to B returns through AB.
"""

from __future__ import annotations

from typing import Any

import pytest

from ontology.store.port import EdgeData, GraphData, NodeData, ParameterSpec
from review.changeset import AliasSet, EdgeAdd, NodeAdd, NodeStatusSet
from review.changeset_apply import KnowledgeState, changeset_apply
from review.integrity import integrity_violations
from review.loop.generators.merge import merge_changeset, merged_node_id

from .queue_fixtures import MERGE_DUPLICATE as B
from .queue_fixtures import MERGE_SURVIVOR as A
from .queue_fixtures import user

AB = f"{A}.m1"
API = "/api/v1/projects/acme-support/proposals/"
# the landing of each before the merge (checked below): one request per merged node
ON_A = "are custom wildcard certificates supported"
ON_B = "my certificate has been pending for two hours"


def _node(node_id: str, type_: str = "Info", **fields: Any) -> NodeData:
    return NodeData(node_id, type_, fields.pop("title", node_id), fields.pop("chunk", ""), **fields)


# --- the changeset: content, edges, lifecycle ---------------------------------------------------------

PAIR = GraphData(
    nodes=(
        _node(
            "A",
            title="Reset a password",
            chunk="Open Settings. Choose Security. Click Reset.",
            description="How a user resets a password.",
            staff_notes="Never reset for the user.",
            labels=("L1",),
            clusters=("accounts",),
            preconditions=("signed_in",),
        ),
        _node(
            "B",
            title="Forgotten password",
            chunk="open settings.  Click Reset. A link is emailed within 5 minutes.",
            description="Password reset for users who forgot it.",
            staff_notes="Never reset for the user. Check the audit log first.",
            risk="medium",
            labels=("L2", "L1"),
            clusters=("accounts", "security"),
            preconditions=("email_verified", "signed_in"),
        ),
        _node("X"),
        _node("Y"),
        _node("Z"),
        _node("A.m1"),  # the usual id is taken: AB becomes A.m1a
    ),
    edges=(
        EdgeData("A", "B", "RELATED_TO", 0.5),  # becomes a self-loop on AB: dropped
        EdgeData("X", "A", "LEADS_TO", 0.4),
        EdgeData("X", "B", "LEADS_TO", 0.7, "from B"),  # collapses with X → A: the higher weight wins
        EdgeData("A", "Y", "LEADS_TO", 0.9),
        EdgeData("B", "Y", "LEADS_TO", -0.5),  # a veto is never lost to a higher weight
        EdgeData("B", "Z", "ELABORATES", 0.3, "details"),
    ),
)


def test_a_merge_creates_ab_with_the_merged_content_and_retires_a_and_b():
    ops = merge_changeset(PAIR, "A", "B", reason="duplicates")

    add = ops[0]
    assert isinstance(add, NodeAdd) and add.node_id == "A.m1a" == merged_node_id("A", {"A.m1"})
    assert (add.type, add.title) == ("Info", "Reset a password")  # the survivor's
    # the survivor's text, then the duplicate's sentences it does not contain (case and spacing ignored)
    assert add.chunk == "Open Settings. Choose Security. Click Reset. A link is emailed within 5 minutes."
    assert add.description == "How a user resets a password. Password reset for users who forgot it."
    assert add.staff_notes == "Never reset for the user. Check the audit log first."
    assert (add.risk, add.labels, add.clusters) == ("medium", ("L1", "L2"), ("accounts", "security"))
    assert add.preconditions == ("signed_in", "email_verified")
    assert ops[1:] == (
        EdgeAdd("A.m1a", "Y", "LEADS_TO", -0.5),
        EdgeAdd("A.m1a", "Z", "ELABORATES", 0.3, "details"),
        EdgeAdd("X", "A.m1a", "LEADS_TO", 0.7, "from B"),
        NodeStatusSet("A", "DEPRECATED", "duplicates"),
        NodeStatusSet("B", "DEPRECATED", "duplicates"),
        AliasSet("A", ("A.m1a",), "duplicates"),
        AliasSet("B", ("A.m1a",), "duplicates"),
    )
    after = changeset_apply(KnowledgeState(PAIR, {"labels": []}), ops).graph
    nodes = {n.node_id: n for n in after.nodes}
    assert nodes["A.m1a"].chunk == add.chunk and nodes["A.m1a"].staff_notes == add.staff_notes
    assert nodes["A"].status == nodes["B"].status == "DEPRECATED"


def test_an_action_merge_unites_the_parameters_and_keeps_a_handler():
    graph = GraphData(
        nodes=(
            _node("A", "Action", parameters=(ParameterSpec("email"),)),
            _node(
                "B",
                "Action",
                handler="python:x",
                parameters=(ParameterSpec("reason"), ParameterSpec("email", "identifier")),
            ),
        )
    )

    add = merge_changeset(graph, "A", "B", reason="dup")[0]

    assert isinstance(add, NodeAdd)
    assert [(p.name, p.type) for p in add.parameters] == [("email", "string"), ("reason", "string")]
    assert add.handler == "python:x"


GUARDED = GraphData(
    nodes=(
        _node("FAQ"),
        _node("Clarify", "Clarify"),
        _node("Refund", "Action", risk="high", handler="python:x"),
        _node("Policy"),
        _node("Policy2"),
    ),
    edges=(
        EdgeData("Clarify", "Refund", "LEADS_TO", 0.8),
        EdgeData("Refund", "Policy", "REQUIRES", 1.0),
        EdgeData("FAQ", "Policy2", "LEADS_TO", 0.5),
    ),
)


def _violations(graph: GraphData, ops: tuple, documents: dict | None = None) -> set[str]:
    after = changeset_apply(KnowledgeState(graph, documents or {"labels": []}), ops).graph
    return {v.rule for v in integrity_violations(graph, after, ops, documents=documents)}


def test_the_integrity_test_guards_the_merged_node():
    # AB stands for the nodes merged into it: the requirement Refund → Policy lives on as Refund → AB
    assert _violations(GUARDED, merge_changeset(GUARDED, "Policy", "Policy2", reason="dup")) == set()
    # fusing an Action with an Info node, and merging a requirement into the node that requires it
    unsafe = merge_changeset(GUARDED, "Refund", "Policy", reason="dup")
    assert _violations(GUARDED, unsafe) == {"integrity.type_family", "integrity.requirement_lost"}
    # AB edited to a lower risk than a merged node's
    lowered = tuple(
        NodeAdd(**{**op.__dict__, "risk": "low"}) if isinstance(op, NodeAdd) else op
        for op in merge_changeset(GUARDED, "Refund", "FAQ", reason="dup")
    )
    assert "integrity.risk_lowered" in _violations(GUARDED, lowered)


def test_the_fgw_check_folds_a_and_b_onto_ab_s_content():
    import numpy as np

    from review.loop.generators.merge import fgw_distance

    a, b = np.array([1.0, 0.0, 0.0]), np.array([0.6, 0.8, 0.0])
    ab = (a + b) / np.linalg.norm(a + b)  # the feature of the fused node: the centroid of the contents
    graph = GraphData(nodes=(_node("A"), _node("B")))

    distance, size, weight = fgw_distance(graph, {"A": a, "B": b}, "A", "B", alpha=0.5, merged_vector=ab)

    assert (size, weight) == (2, 0.0)  # no structure: the content term alone
    assert distance == pytest.approx(0.5 * ((a - ab) ** 2).sum() + 0.5 * ((b - ab) ** 2).sum())


# --- end to end: the proposal page, the review API, publication, inference, memory ---------------------


def _landing(client: Any, prompt: str) -> str:
    from inference.models import InferenceLog

    response = client.post("/api/v1/infer", {"prompt": prompt, "context": {"user_id": "u-7"}}, format="json")
    assert response.status_code == 200, response.content
    return InferenceLog.objects.get(request_id=response.json()["request_id"]).target_node


@pytest.mark.django_db
def test_an_approved_merge_publishes_ab_and_inference_and_memory_land_on_it(
    demo, make_proposal, api_as, client, token_client, run_jobs
):
    from arg_platform.embedder import get_embedder
    from inference.steps.memory_signal import memory_signal_for
    from memory.models import EpisodicMemory
    from ontology.snapshot_registry import pin_snapshot
    from ontology.store import get_graph_store
    from review.changeset import changeset_dump
    from taxonomy.models import Role

    app = token_client(demo, role=Role.objects.get(project=demo, key="customer"))
    assert (_landing(app, ON_A), _landing(app, ON_B)) == (A, B)
    saved = app.post(
        "/api/v1/memory",
        {"text": "Our CAA record only allows digicert.", "scope": "USER", "user_id": "u-7", "node_id": B},
        format="json",
    )
    assert saved.status_code == 201, saved.content
    store = get_graph_store()
    before = store.export_graph(demo.pk)
    neighbours = {e.source for e in before.edges if e.target in (A, B)} | {
        e.target for e in before.edges if e.source in (A, B)
    }
    ops = merge_changeset(before, A, B, reason="same questions, same label")
    proposal = make_proposal(demo, kind="MERGE", changeset=changeset_dump(ops), title="Merge TLS answers")
    reviewer, expert = api_as(user("rob-reviewer")), api_as(user("erin-expert"))

    # the reviewer sees AB's content before approving
    preview = reviewer.get(f"{API}{proposal.pk}/preview/").json()
    assert preview["applies"] is True and preview["problems"] == []
    added = next(n for n in preview["nodes"] if n["node_id"] == AB)
    assert added["change"] == "added"
    assert added["after"]["chunk"].startswith(store.get_node(demo.pk, A).chunk)
    assert "a proxy in front of the domain" in added["after"]["chunk"]  # B's sentence, appended
    assert preview["aliases"] == [{"source": A, "targets": [AB]}, {"source": B, "targets": [AB]}]
    # an expert rewrites AB's client text in the payload; approval publishes exactly that text
    changeset = [dict(op) for op in proposal.changeset]
    edited = added["after"]["chunk"] + " Write to us if a certificate stays pending for a day."
    changeset[0]["chunk"] = edited
    assert (
        expert.post(
            f"{API}{proposal.pk}/edit/", {"changeset": changeset, "reason": "one more hint"}, format="json"
        ).status_code
        == 200
    )
    client.force_login(user("rob-reviewer"))
    page = client.get(f"/p/acme-support/review/proposals/{proposal.pk}/").content.decode()
    assert AB in page and "Write to us if a certificate stays pending for a day." in page

    with run_jobs():
        queued = reviewer.post(
            f"{API}{proposal.pk}/approve/", {"mode": "now", "reason": "dup"}, format="json"
        )
    assert queued.status_code == 202, queued.content
    job = reviewer.get(queued["Location"]).json()
    assert (job["status"], job["result"]["release"], job["result"]["applied"]) == (
        "SUCCEEDED",
        2,
        [proposal.pk],
    )

    merged = store.get_node(demo.pk, AB)
    assert (merged.status, merged.chunk) == ("ACTIVE", edited)
    assert store.get_node(demo.pk, A).status == store.get_node(demo.pk, B).status == "DEPRECATED"
    assert store.resolve_alias(demo.pk, A) == store.resolve_alias(demo.pk, B) == (AB,)
    after = store.export_graph(demo.pk)
    assert {e.source for e in after.edges if e.target == AB} | {
        e.target for e in after.edges if e.source == AB
    } == neighbours - {A, B}
    assert (_landing(app, ON_A), _landing(app, ON_B)) == (AB, AB)
    # the caller's memory of B counts as use of AB in S_memory (read through the aliases, no row rewritten)
    query = get_embedder().embed_one("which CAA record do we use")
    signal = memory_signal_for(
        project_id=demo.pk, user_id="u-7", prompt_vec=query, resolve_alias=pin_snapshot(demo.pk).resolve_alias
    )
    stored = memory_signal_for(project_id=demo.pk, user_id="u-7", prompt_vec=query)  # the row as written
    assert (AB in signal, B in signal) == (True, False) and (AB in stored, B in stored) == (False, True)
    assert EpisodicMemory.objects.get(pk=saved.json()["memory"]["id"]).node_id == B
    read = app.get("/api/v1/memory?user_id=u-7&q=which+CAA+record+do+we+use").json()
    (item,) = [r for r in read["results"] if r["memory"]["node_id"] == B]
    assert item["redirected"] is True and item["memory"]["node_ids_current"] == [AB]
