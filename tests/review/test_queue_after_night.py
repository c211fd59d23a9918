"""Issue 8's "done when", through the REST door: after a real night of the offline loop on the simulated
domain (no simulated reviewer), a reviewer approves the split and the merge the night queued, and the new
release routes the requests the replay said would reroute exactly where it predicted."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_a_reviewer_approves_the_nights_split_and_merge_and_the_release_routes_as_replayed(
    fresh_snapshots, api_as, make_user, token_client, run_jobs
):
    from bench.simulation.domain import SLUG
    from bench.simulation.runner import simulate
    from inference.models import InferenceLog
    from ontology.models import Release
    from ontology.store import get_graph_store
    from review.models import Proposal
    from taxonomy.models import Role

    simulate(seed=1, nights=1, requests=300, poison_episodes=5, review=False)
    project = Proposal.objects.filter(project__slug=SLUG).first().project
    split = Proposal.objects.get(project=project, kind="SPLIT", status="PENDING_REVIEW")
    merge = Proposal.objects.get(project=project, kind="MERGE", status="PENDING_REVIEW")
    predicted = {r["prompt"]: r["after"] for r in split.replay["rerouted"] + merge.replay["rerouted"]}
    assert predicted and all(predicted.values())
    # the merge creates a new node AB with both nodes' content; replay sends their requests to it
    merged, pair = merge.evidence["merged_node"], (merge.evidence["survivor"], merge.evidence["duplicate"])
    (added,) = [op for op in merge.changeset if op["op"] == "node_add"]
    assert added["node_id"] == merged and merged not in pair
    assert {r["after"] for r in merge.replay["rerouted"]} == {merged}
    base_version = Release.objects.get(project=project, is_active=True).version
    client = api_as(make_user("rae-reviewer", "reviewer", project))
    api = f"/api/v1/projects/{SLUG}/proposals/"

    batched = client.post(
        f"{api}{split.pk}/approve/", {"mode": "batch", "reason": "two intents"}, format="json"
    )
    with run_jobs():
        queued = client.post(
            f"{api}{merge.pk}/approve/", {"mode": "now", "reason": "duplicates"}, format="json"
        )

    assert batched.status_code == 200 and batched.json()["release"] is None
    assert queued.status_code == 202, queued.content
    applied = client.get(queued["Location"]).json()
    assert (applied["status"], applied["result"]["release"]) == ("SUCCEEDED", base_version + 1)
    assert sorted(applied["result"]["applied"]) == sorted([split.pk, merge.pk])
    store = get_graph_store()
    assert store.get_node(project.pk, merged).chunk == added["chunk"]  # the approved payload, as is
    assert [store.get_node(project.pk, n).status for n in pair] == ["DEPRECATED", "DEPRECATED"]
    assert [store.resolve_alias(project.pk, n) for n in pair] == [(merged,), (merged,)]
    role = Role.objects.get(project=project, key="member")
    client_app = token_client(project, role=role)
    for prompt, expected in predicted.items():
        response = client_app.post("/api/v1/infer", {"prompt": prompt}, format="json")
        assert response.status_code == 200, response.content
        assert response.json()["release"]["version"] == base_version + 1
        assert InferenceLog.objects.get(request_id=response.json()["request_id"]).target_node == expected, (
            prompt
        )
