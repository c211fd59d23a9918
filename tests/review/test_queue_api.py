"""The review REST API: the same queue and decisions for teams that review from their own tools."""

from __future__ import annotations

import json

import pytest

from arg_platform.models import AuditEvent
from ontology.models import Release
from review.models import Proposal, ProposalDecision, ProposalStatus

from .queue_fixtures import SPLIT_PARENT, SPLIT_PDF, replay_metrics, split_changeset, user, weight_changeset

pytestmark = pytest.mark.django_db
API = "/api/v1/projects/{}/proposals/"


def _state(project):
    return (
        list(
            Proposal.objects.filter(project=project).values_list(
                "pk", "status", "title", "assignee", "changeset"
            )
        ),
        ProposalDecision.objects.filter(proposal__project=project).count(),
        AuditEvent.objects.filter(project=project).count(),
        Release.objects.filter(project=project).count(),
    )


def test_list_filters_with_the_same_filterset_as_the_page(api_as, tiny, make_proposal):
    a = make_proposal(tiny, changeset=weight_changeset(0.9), title="A", score=0.5, cluster_key="billing")
    b = make_proposal(tiny, changeset=weight_changeset(0.8), title="B", score=0.3)
    make_proposal(tiny, changeset=weight_changeset(0.7), title="C", status=ProposalStatus.REJECTED)
    client = api_as(user("rob-reviewer"))

    body = client.get(API.format("tiny")).json()
    assert body["count"] == 2
    assert [p["id"] for p in body["results"]] == [a.pk, b.pk]
    assert body["results"][0]["kind"] == "EDGE_WEIGHT"
    assert body["results"][0]["target_keys"] == ["N-invoice-download", "N-resend-invoice"]
    assert [p["id"] for p in client.get(API.format("tiny") + "?cluster=billing").json()["results"]] == [a.pk]
    assert [p["id"] for p in client.get(API.format("tiny") + "?ordering=score").json()["results"]] == [
        b.pk,
        a.pk,
    ]
    assert client.get(API.format("tiny") + "?view=rejected").json()["count"] == 1
    bad = client.get(API.format("tiny") + "?min_score=lots")
    assert bad.status_code == 400 and "min_score" in bad.json()


def test_detail_and_preview(api_as, demo, make_proposal):
    proposal = make_proposal(
        demo,
        kind="SPLIT",
        changeset=split_changeset(),
        title="Split",
        replay=replay_metrics(confirmed=0.08, uncertain=0.02, lowconf=0.03),
    )
    client = api_as(user("erin-expert"))

    detail = client.get(API.format("acme-support") + f"{proposal.pk}/").json()
    assert detail["changeset"][1]["node_id"] == SPLIT_PDF
    assert detail["replay"]["gains"]["penalty_silent"] == 0.0
    assert detail["decisions"] == []

    preview = client.get(API.format("acme-support") + f"{proposal.pk}/preview/").json()
    assert preview["applies"] is True and preview["problems"] == []
    assert preview["compared_with"] == "the current draft"
    assert {"node_id": SPLIT_PARENT, "change": "status"}.items() <= next(
        n for n in preview["nodes"] if n["node_id"] == SPLIT_PARENT
    ).items()
    assert (
        preview["labels"][0]["name"] == "Bulk invoice export"
        and preview["labels"][0]["status_before"] is None
    )
    assert preview["aliases"] == [
        {"source": SPLIT_PARENT, "targets": [SPLIT_PDF, "N-billing-invoice-bulk-export"]}
    ]


def test_decisions_through_the_api(api_as, tiny, make_proposal, run_jobs):
    keep = make_proposal(tiny, changeset=weight_changeset(0.8), title="Reinforce")
    drop = make_proposal(tiny, changeset=weight_changeset(0.95), title="Too strong")
    shape = make_proposal(tiny, changeset=weight_changeset(0.85), title="Shape me")
    client = api_as(user("rob-reviewer"))
    base = API.format("tiny")

    assert client.post(base + f"{keep.pk}/claim/").json()["assignee"] == "rob-reviewer"
    resp = client.post(base + f"{keep.pk}/assign/", {"assignee": "rita-reviewer"}, format="json")
    assert resp.status_code == 200 and resp.json()["assignee"] == "rita-reviewer"
    not_reviewer = client.post(base + f"{keep.pk}/assign/", {"assignee": "erin-expert"}, format="json")
    assert (not_reviewer.status_code, not_reviewer.json()["rules"]) == (400, ["review.assignee_role"])

    refused = client.post(base + f"{drop.pk}/reject/", {"reason": ""}, format="json")
    assert refused.status_code == 400
    rejected = client.post(base + f"{drop.pk}/reject/", {"reason": "too strong"}, format="json").json()
    assert (rejected["status"], rejected["decision_reason"]) == ("REJECTED", "too strong")

    changes = client.post(base + f"{shape.pk}/request-changes/", {"reason": "use 0.75"}, format="json").json()
    assert changes["status"] == "CHANGES_REQUESTED"
    edited = api_as(user("erin-expert")).post(
        base + f"{shape.pk}/edit/", {"changeset": weight_changeset(0.75), "reason": "as asked"}, format="json"
    )
    assert edited.status_code == 200
    assert (edited.json()["status"], edited.json()["changeset"][0]["weight"]) == ("PENDING_REVIEW", 0.75)
    assert client.post(base + f"{shape.pk}/defer/", {}, format="json").json()["status"] == "DEFERRED"

    batch = client.post(base + f"{shape.pk}/approve/", {"mode": "batch"}, format="json").json()
    assert (batch["release"], batch["proposal"]["status"]) == (None, "APPROVED")
    with run_jobs():
        queued = client.post(base + f"{keep.pk}/approve/", {"mode": "now", "reason": "ok"}, format="json")
    assert queued.status_code == 202 and queued.json()["kind"] == "review.apply_approved"
    job = client.get(queued["Location"]).json()
    assert (job["status"], job["result"]["release"], job["result"]["applied"]) == (
        "SUCCEEDED",
        2,
        [shape.pk, keep.pk],
    )
    kept = client.get(base + f"{keep.pk}/").json()
    assert kept["status"] == "APPLIED" and kept["applied_release"] == 2
    assert [d["action"] for d in kept["decisions"]] == ["CLAIM", "CLAIM", "APPROVE", "APPLY"]
    nothing = client.post(base + "apply-approved/")
    assert nothing.status_code == 400 and nothing.json()["rules"] == ["review.nothing_approved"]


def test_an_edit_that_does_not_apply_is_refused_with_its_rule(api_as, tiny, make_proposal):
    proposal = make_proposal(tiny, changeset=weight_changeset())
    before = _state(tiny)
    resp = api_as(user("erin-expert")).post(
        API.format("tiny") + f"{proposal.pk}/edit/",
        {
            "changeset": [
                {"op": "edge_weight", "source": "N-oos", "target": "N-x", "type": "LEADS_TO", "weight": 0.5}
            ]
        },
        format="json",
    )
    assert resp.status_code == 400
    assert resp.json()["rules"] == ["review.apply_conflict"]
    assert _state(tiny) == before


@pytest.mark.parametrize(
    ("entry", "where"),
    [
        ({"title": "Re\u0000send"}, "title"),
        ({"preconditions": ["ok", "bad\ud800"]}, "preconditions[1]"),
        ({"ti\u0000tle": "Resend"}, "ti\ufffdtle"),
    ],
)
def test_an_edit_holding_a_nul_or_lone_surrogate_is_refused_with_its_place(
    api_as, tiny, make_proposal, entry, where
):
    """The changeset is stored as JSON: PostgreSQL's jsonb refuses NUL (a 500 before) and no encoding
    carries a lone surrogate; the message names the place without repeating the character."""
    proposal = make_proposal(tiny, changeset=weight_changeset())
    before = _state(tiny)
    resp = api_as(user("erin-expert")).post(
        API.format("tiny") + f"{proposal.pk}/edit/",
        # json.dumps escapes a lone surrogate as a client would; the test client's renderer cannot
        json.dumps(
            {"changeset": [{"op": "node_content", "node_id": "N-resend-invoice", **entry}], "reason": "typo"}
        ),
        content_type="application/json",
    )
    assert resp.status_code == 400, resp.content
    assert resp.json()["errors"]["changeset"] == [f"operation 0: NUL or lone surrogate character in {where}"]
    assert _state(tiny) == before


def test_experts_read_and_edit_but_do_not_decide(api_as, tiny, make_proposal):
    proposal = make_proposal(tiny, changeset=weight_changeset())
    expert = api_as(user("erin-expert"))
    base = API.format("tiny")
    assert expert.get(base).status_code == 200
    before = _state(tiny)
    for verb, data in (
        ("approve", {"mode": "now"}),
        ("reject", {"reason": "x"}),
        ("request-changes", {"reason": "x"}),
        ("defer", {}),
        ("claim", {}),
        ("assign", {"assignee": None}),
    ):
        resp = expert.post(base + f"{proposal.pk}/{verb}/", data, format="json")
        assert resp.status_code == 403, verb
    assert expert.post(base + "apply-approved/").status_code == 403
    assert _state(tiny) == before


def test_client_tokens_see_nothing_and_other_projects_get_404(
    api_as, token_client, tiny, make_proposal, make_project, make_user
):
    proposal = make_proposal(tiny, changeset=weight_changeset())
    token = token_client(tiny)
    before = _state(tiny)
    for path in (
        API.format("tiny"),
        API.format("tiny") + f"{proposal.pk}/",
        API.format("tiny") + f"{proposal.pk}/preview/",
        "/api/v1/projects/tiny/review/inbox/",
        "/api/v1/projects/tiny/review/silent-samples/",
        "/api/v1/projects/tiny/review/shadow-labels/",
        "/api/v1/projects/tiny/review/memory-merges/",
    ):
        assert token.get(path).status_code == 403, path
    assert (
        token.post(API.format("tiny") + f"{proposal.pk}/approve/", {"mode": "now"}, format="json").status_code
        == 403
    )
    outsider = api_as(make_user("mallory", "admin", make_project("globex")))
    assert outsider.get(API.format("tiny")).status_code == 404
    assert (
        outsider.post(
            API.format("tiny") + f"{proposal.pk}/reject/", {"reason": "x"}, format="json"
        ).status_code
        == 404
    )
    assert outsider.get(API.format("globex") + f"{proposal.pk}/").status_code == 404
    assert _state(tiny) == before


def test_the_openapi_schema_stays_clean_and_documents_the_review_api():
    from io import StringIO

    import yaml
    from django.core.management import call_command

    out = StringIO()
    call_command("spectacular", "--validate", "--fail-on-warn", stdout=out)
    schema = yaml.safe_load(out.getvalue())
    paths = schema["paths"]
    for path in (
        "/api/v1/projects/{project}/proposals/",
        "/api/v1/projects/{project}/proposals/{id}/approve/",
        "/api/v1/projects/{project}/proposals/{id}/request-changes/",
        "/api/v1/projects/{project}/proposals/apply-approved/",
        "/api/v1/projects/{project}/review/silent-samples/{request_id}/label/",
        "/api/v1/projects/{project}/review/memory-merges/{id}/resolve/",
        "/api/v1/projects/{project}/review/memory-evidence/{id}/detach/",
        "/api/v1/projects/{project}/review/shadow-labels/{label_id}/activate/",
    ):
        assert path in paths, path
    params = {p["name"] for p in paths["/api/v1/projects/{project}/proposals/"]["get"]["parameters"]}
    assert {
        "view",
        "kind",
        "bin",
        "cluster",
        "target",
        "min_score",
        "max_age_days",
        "assignee",
        "ordering",
    } <= params
