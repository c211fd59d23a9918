"""The review queue and the proposal page in the web UI: who sees what, who decides, what is shown."""

from __future__ import annotations

import re

import pytest

from arg_platform.models import AuditEvent
from ontology.models import Release
from review.models import Proposal, ProposalDecision, ProposalStatus

from .queue_fixtures import (
    SPLIT_BULK,
    SPLIT_PARENT,
    SPLIT_PDF,
    replay_metrics,
    split_changeset,
    user,
    weight_changeset,
)

pytestmark = pytest.mark.django_db


def _client(client, username):
    client.force_login(user(username))
    return client


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


def test_the_queue_lists_open_proposals_with_counts_and_a_nav_badge(client, tiny, make_proposal):
    top = make_proposal(tiny, changeset=weight_changeset(0.9), title="Reinforce resend", score=0.61)
    low = make_proposal(tiny, changeset=weight_changeset(0.8), title="Nudge resend", score=0.22)
    make_proposal(
        tiny, changeset=weight_changeset(0.75), title="Old and rejected", status=ProposalStatus.REJECTED
    )
    make_proposal(tiny, changeset=weight_changeset(0.3), title="Weak one", status=ProposalStatus.BACKLOG)

    resp = _client(client, "rob-reviewer").get("/p/tiny/review/")

    html = resp.content.decode()
    assert resp.status_code == 200
    rows = re.findall(r'id="proposal-row-(\d+)"', html)
    assert rows == [str(top.pk), str(low.pk)]  # open only, best score first
    assert 'id="review-badge"' in html and ">2</span>" in html
    assert 'Awaiting review <span class="count">2</span>' in html
    assert 'Rejected <span class="count">1</span>' in html
    assert 'Backlog (LOW_CONF) <span class="count">1</span>' in html


def test_the_backlog_shows_why_each_item_is_there_best_expected_benefit_first(
    client, api_as, tiny, make_proposal
):
    def backlog(title, score, reason):
        return make_proposal(
            tiny,
            changeset=weight_changeset(score),
            title=title,
            score=score,
            status=ProposalStatus.BACKLOG,
            confidence_bin="LOW_CONF",
            replay={"score": score, "bin_reason": reason},
        )

    weak = backlog("Weak one", 0.004, "Score(C) 0.0040 < 0.01")
    flagged = backlog("Flagged one", 0.3, "1 validator/integrity violation(s)")
    make_proposal(
        tiny, changeset=weight_changeset(0.9), title="Open one", score=0.5, replay={"bin_reason": "x"}
    )

    html = _client(client, "rob-reviewer").get("/p/tiny/review/?view=backlog").content.decode()

    assert re.findall(r'id="proposal-row-(\d+)"', html) == [str(flagged.pk), str(weak.pk)]
    assert re.findall(r'class="muted small bin-reason">([^<]+)<', html) == [
        "1 validator/integrity violation(s)",
        "Score(C) 0.0040 &lt; 0.01",
    ]
    body = api_as(user("rob-reviewer")).get("/api/v1/projects/tiny/proposals/?view=backlog").json()
    assert [(p["id"], p["bin_reason"]) for p in body["results"]] == [
        (flagged.pk, "1 validator/integrity violation(s)"),
        (weak.pk, "Score(C) 0.0040 < 0.01"),
    ]


def test_an_expert_sees_the_queue_without_a_badge_and_cannot_decide(client, tiny, make_proposal):
    proposal = make_proposal(tiny, changeset=weight_changeset(), title="Reinforce resend")
    expert = _client(client, "erin-expert")

    html = expert.get("/p/tiny/review/").content.decode()
    assert f'id="proposal-row-{proposal.pk}"' in html
    assert 'id="review-badge"' not in html
    page = expert.get(f"/p/tiny/review/proposals/{proposal.pk}/").content.decode()
    assert 'id="approve-form"' not in page and 'id="edit-link"' in page
    before = _state(tiny)
    for verb in ("approve", "reject", "request-changes", "defer", "claim", "assign"):
        resp = expert.post(f"/p/tiny/review/proposals/{proposal.pk}/{verb}/", {"reason": "x", "mode": "now"})
        assert resp.status_code == 403, verb
    assert expert.post("/p/tiny/review/publish-approved/").status_code == 403
    assert _state(tiny) == before


def test_filters_sorting_and_pagination(client, tiny, make_proposal):
    a = make_proposal(
        tiny, kind="EDGE_WEIGHT", changeset=weight_changeset(0.9), title="A", score=0.5, cluster_key="billing"
    )
    b = make_proposal(
        tiny, kind="EDGE_WEIGHT", changeset=weight_changeset(0.8), title="B", score=0.3, age_days=10
    )
    c = make_proposal(
        tiny,
        kind="EDGE_ADD",
        changeset=[
            {
                "op": "edge_add",
                "source": "N-oos",
                "target": "N-invoice-download",
                "type": "RELATED_TO",
                "weight": 0.2,
                "semantics": "",
            }
        ],
        title="C",
        score=0.7,
        assignee=user("rob-reviewer"),
    )
    reviewer = _client(client, "rob-reviewer")

    def ids(query):
        html = reviewer.get(f"/p/tiny/review/?{query}").content.decode()
        return [int(i) for i in re.findall(r'id="proposal-row-(\d+)"', html)]

    assert ids("") == [c.pk, a.pk, b.pk]
    assert ids("kind=EDGE_WEIGHT") == [a.pk, b.pk]
    assert ids("kind=EDGE_WEIGHT&kind=EDGE_ADD&ordering=score") == [b.pk, a.pk, c.pk]
    assert ids("cluster=billing") == [a.pk]
    assert ids("target=N-oos") == [c.pk]
    assert ids("target=N-resend-invoice") == [a.pk, b.pk]
    assert ids("min_score=0.4") == [c.pk, a.pk]
    assert ids("min_age_days=5") == [b.pk]
    assert ids("max_age_days=5") == [c.pk, a.pk]
    assert ids("assignee=me") == [c.pk]
    assert ids("assignee=none") == [a.pk, b.pk]
    assert ids("ordering=age") == [b.pk, a.pk, c.pk]
    assert ids("q=b") == [b.pk]
    bad = reviewer.get("/p/tiny/review/?min_score=lots")
    assert bad.status_code == 200 and "review.filter" in bad.content.decode()


def test_pagination_of_a_long_queue(client, tiny, make_proposal):
    for i in range(27):
        make_proposal(tiny, changeset=weight_changeset(round(0.01 * i, 2)), title=f"P{i}", score=i / 100)
    reviewer = _client(client, "rob-reviewer")
    first = reviewer.get("/p/tiny/review/").content.decode()
    second = reviewer.get("/p/tiny/review/?page=2").content.decode()
    assert len(re.findall(r'id="proposal-row-', first)) == 25
    assert len(re.findall(r'id="proposal-row-', second)) == 2
    assert "page 1 of 2" in first and 'rel="next"' in first


def test_htmx_filtering_answers_the_queue_body_only(client, tiny, make_proposal):
    make_proposal(tiny, changeset=weight_changeset(), title="Reinforce resend")
    resp = _client(client, "rob-reviewer").get("/p/tiny/review/?kind=SPLIT", HTTP_HX_REQUEST="true")
    html = resp.content.decode()
    assert html.startswith('<div id="queue-body">')
    assert "Nothing here" in html and "<html" not in html


def test_the_proposal_page_shows_what_changes_why_and_the_risks(client, demo, make_proposal):
    from inference.models import InferenceLog

    log = InferenceLog.objects.create(
        project=demo,
        request_id="req-bulk-1",
        prompt="our finance team needs all 2023 invoices in one go",
        target_node=SPLIT_PARENT,
        outcome_kind="INFO",
        outcome_status="INFO_UNCERTAIN_SUCCESS",
    )
    replay = replay_metrics(confirmed=0.08, uncertain=0.02, lowconf=0.03)
    replay["plan"] = {"zone_log_ids": [log.pk], "zone_size": 64, "lineage": {}, "guard": {}}
    replay["bin_reason"] = "score 0.41 in the MID band"
    replay["answer_fit"] = {"before": 0.412, "after": 0.587, "requests": 31}
    replay["modelled_confirmed"] = 0.05
    proposal = make_proposal(
        demo,
        kind="SPLIT",
        changeset=split_changeset(),
        title="Split Download an invoice",
        replay=replay,
        evidence={
            "node": SPLIT_PARENT,
            "landings": 64,
            "silhouette": 0.42,
            "groups": [
                {
                    "child": SPLIT_PDF,
                    "size": 40,
                    "dominant_label": "L00002",
                    "outcomes": {"INFO_CONFIRMED": 12},
                    "examples": ["invoice pdf for march"],
                },
                {
                    "child": SPLIT_BULK,
                    "size": 24,
                    "dominant_label": "L00002",
                    "outcomes": {"INFO_UNCERTAIN": 20},
                    "examples": ["all 2023 invoices"],
                },
            ],
        },
    )

    resp = _client(client, "rob-reviewer").get(f"/p/acme-support/review/proposals/{proposal.pk}/")

    html = resp.content.decode()
    assert resp.status_code == 200
    # what: before/after pictures centred on the split parent and its children, diffs of nodes, edges, labels
    assert f'id="picture-before-0" data-center="{SPLIT_PARENT}"' in html
    assert f'data-center="{SPLIT_PDF}"' in html and f'data-center="{SPLIT_BULK}"' in html
    after = html[html.index('id="pictures-after"') :]
    assert f'data-node="{SPLIT_PDF}" data-diff="added"' in after
    new_edge = (
        f'data-source="N-billing-triage" data-target="{SPLIT_PDF}" data-type="LEADS_TO" data-diff="added"'
    )
    assert new_edge in after
    before = html[html.index('id="pictures-before"') : html.index('id="pictures-after"')]
    old_edge = f'data-source="N-billing-triage" data-target="{SPLIT_PARENT}" data-type="LEADS_TO" data-diff="removed"'
    assert old_edge in before
    assert "Bulk invoice export" in html and "new child label" in html
    assert f'<code class="lid">{SPLIT_PARENT}</code> → <code class="lid">{SPLIT_PDF}</code>' in html
    # why: replay metrics, silence penalty, geDIG, the zone's logged requests, the generator's groups
    assert 'id="replay-metrics"' in html and "Info confirmed" in html and "+0.080" in html
    assert "Silence penalty" in html and 'id="gedig"' in html
    gate = html.split('id="gedig-gate"', 1)[1].split("</p>", 1)[0]
    assert "percentiles of 42 earlier gauges (kind history)" in gate
    assert "-0.0500" in gate and "does not confirm" not in gate and "was not consulted" in gate
    assert "our finance team needs all 2023 invoices in one go" in html
    assert 'id="evidence-groups"' in html and "all 2023 invoices" in html
    assert "score 0.41 in the MID band" in html
    # the children's outcomes are estimated from answer fit, and the page says so
    fit = html[html.index('id="answer-fit"') :]
    assert fit.startswith('id="answer-fit">31 replayed requests move to new nodes')
    assert "0.412" in fit and "0.587" in fit and "+0.050" in fit and "not counted as confirmed" in fit
    # risks: the checks pass, the Action nodes reachable through new paths are listed
    assert "The validators and the integrity test" in html
    assert 'id="risk-actions"' in html


def test_the_proposal_page_says_when_an_action_outcome_is_the_action_prior(client, demo, make_proposal):
    replay = replay_metrics(confirmed=0.0, uncertain=0.0, lowconf=0.0)
    replay["estimates"] = {"logged": 93, "action_prior": 22}
    replay["modelled_action"] = 0.1234
    with_prior = make_proposal(
        demo, kind="SPLIT", changeset=split_changeset(), title="With prior", replay=replay, evidence={}
    )
    replay = {**replay, "estimates": {"logged": 115}, "modelled_action": 0.0}
    without = make_proposal(
        demo, kind="SPLIT", changeset=split_changeset(), title="Without prior", replay=replay, evidence={}
    )
    reviewer = _client(client, "rob-reviewer")

    html = reviewer.get(f"/p/acme-support/review/proposals/{with_prior.pk}/").content.decode()
    prior = html[html.index('id="action-prior"') :].split("</p>", 1)[0]
    assert prior.startswith(
        'id="action-prior">22 replayed requests reach an action with no outcomes of similar'
    )
    assert "+0.123" in prior and "not evidence for auto-commit" in prior
    html = reviewer.get(f"/p/acme-support/review/proposals/{without.pk}/").content.decode()
    assert 'id="action-prior"' not in html


def test_a_stale_changeset_is_flagged_on_its_page(client, tiny, make_proposal):
    from review.changeset import EdgeSetWeight, changeset_dump

    proposal = make_proposal(
        tiny, changeset=changeset_dump([EdgeSetWeight("N-oos", "N-resend-invoice", "LEADS_TO", 0.5, 0.2)])
    )
    html = _client(client, "rob-reviewer").get(f"/p/tiny/review/proposals/{proposal.pk}/").content.decode()
    assert 'id="changeset-problems"' in html and "review.apply_conflict" in html


def test_reject_without_a_reason_is_refused_in_place(client, tiny, make_proposal):
    proposal = make_proposal(tiny, changeset=weight_changeset())
    before = _state(tiny)
    resp = _client(client, "rob-reviewer").post(
        f"/p/tiny/review/proposals/{proposal.pk}/reject/", {"reason": ""}, HTTP_HX_REQUEST="true"
    )
    assert resp.status_code == 422
    html = resp.content.decode()
    assert html.startswith('<div id="proposal-body"')
    assert 'id="reject-panel" open' in html and "This field is required." in html
    assert _state(tiny) == before


def test_reject_approve_batch_and_publish_through_the_ui(client, tiny, make_proposal, run_jobs):
    rejected = make_proposal(tiny, changeset=weight_changeset(0.95), title="Too strong")
    batched = make_proposal(tiny, changeset=weight_changeset(0.8), title="Reinforce resend")
    reviewer = _client(client, "rob-reviewer")

    resp = reviewer.post(
        f"/p/tiny/review/proposals/{rejected.pk}/reject/", {"reason": "resend is a second choice"}
    )
    assert resp.status_code == 302
    resp = reviewer.post(f"/p/tiny/review/proposals/{batched.pk}/approve/", {"mode": "batch", "reason": ""})
    assert resp.status_code == 302
    batched.refresh_from_db()
    assert batched.status == ProposalStatus.APPROVED
    queue = reviewer.get("/p/tiny/review/?view=approved").content.decode()
    assert 'id="publish-approved"' in queue

    with run_jobs():
        resp = reviewer.post("/p/tiny/review/publish-approved/")
    job_page = reviewer.get(resp["Location"]).content.decode()

    batched.refresh_from_db()
    assert batched.status == ProposalStatus.APPLIED and batched.applied_release.version == 2
    assert f"release v2 published with proposal(s) #{batched.pk}" in job_page
    assert 'href="/p/tiny/graph/releases/#release-v2"' in job_page
    page = reviewer.get(f"/p/tiny/review/proposals/{batched.pk}/").content.decode()
    assert 'id="applied-release"' in page
    assert "/p/tiny/graph/releases/2/diff/?against=1" in page
    assert "roll back to v1" in page


def test_claim_and_assign_through_the_ui(client, tiny, make_proposal):
    proposal = make_proposal(tiny, changeset=weight_changeset())
    reviewer = _client(client, "rob-reviewer")
    resp = reviewer.post(f"/p/tiny/review/proposals/{proposal.pk}/claim/", HTTP_HX_REQUEST="true")
    assert (
        resp.status_code == 200
        and '<strong id="proposal-assignee">rob-reviewer</strong>' in resp.content.decode()
    )
    rita = user("rita-reviewer")
    resp = reviewer.post(f"/p/tiny/review/proposals/{proposal.pk}/assign/", {"assignee": rita.pk})
    proposal.refresh_from_db()
    assert resp.status_code == 302 and proposal.assignee == rita
    erin = user("erin-expert")
    resp = reviewer.post(f"/p/tiny/review/proposals/{proposal.pk}/assign/", {"assignee": erin.pk})
    assert resp.status_code == 422  # not a reviewer: not even among the choices
    proposal.refresh_from_db()
    assert proposal.assignee == rita


def test_an_expert_edits_a_proposal_and_a_bad_edit_is_refused(client, demo, make_proposal):
    proposal = make_proposal(demo, kind="SPLIT", changeset=split_changeset(), title="Split invoices")
    expert = _client(client, "erin-expert")
    form = expert.get(f"/p/acme-support/review/proposals/{proposal.pk}/edit/").content.decode()
    assert 'name="op-0-name"' in form and 'name="op-2-labels"' in form and 'name="op-3-weight"' in form

    data = {
        "title": "Split invoices: one PDF vs. bulk export",
        "summary": "",
        "reason": "clearer names",
        "op-0-name": "Invoice exports",
        "op-0-parent": "L00002",
        "op-0-description": "Many invoices at once.",
        "op-1-title": "One invoice as PDF",
        "op-1-labels": "L00002",
        "op-1-clusters": "billing",
        "op-2-title": "Invoice exports (ZIP)",
        "op-2-labels": "L00002, new:bulk",
        "op-2-clusters": "billing",
    }
    for index, op in enumerate(proposal.changeset):
        if op["op"] == "edge_add":
            data[f"op-{index}-weight"] = op["weight"]
    resp = expert.post(f"/p/acme-support/review/proposals/{proposal.pk}/edit/", data)

    assert resp.status_code == 302
    proposal.refresh_from_db()
    assert proposal.title == "Split invoices: one PDF vs. bulk export"
    assert proposal.changeset[0]["name"] == "Invoice exports"
    assert proposal.changeset[2]["title"] == "Invoice exports (ZIP)"
    assert proposal.decisions.get().actor == user("erin-expert")

    before = _state(demo)
    bad = dict(data, **{"op-2-labels": "L00002, new:nothing"})
    resp = expert.post(f"/p/acme-support/review/proposals/{proposal.pk}/edit/", bad)
    assert resp.status_code == 422
    assert "review.changeset" in resp.content.decode() and "new:nothing" in resp.content.decode()
    resp = expert.post(
        f"/p/acme-support/review/proposals/{proposal.pk}/edit/",
        {"changeset_json": "[{not json", "reason": ""},
    )
    assert resp.status_code == 422 and "not valid JSON" in resp.content.decode()
    assert _state(demo) == before


def test_pages_of_another_project_are_not_found(client, tiny, make_proposal, make_project, make_user):
    proposal = make_proposal(tiny, changeset=weight_changeset())
    outsider_project = make_project("globex")
    outsider = make_user("mallory", "admin", outsider_project)
    client.force_login(outsider)
    assert client.get("/p/tiny/review/").status_code == 404
    assert client.get(f"/p/tiny/review/proposals/{proposal.pk}/").status_code == 404
    assert client.post(f"/p/tiny/review/proposals/{proposal.pk}/approve/", {"mode": "now"}).status_code == 404
    assert client.get(f"/p/globex/review/proposals/{proposal.pk}/").status_code == 404
