"""End to end in real Chromium: a reviewer works the review queue.

* On the demo pack, a SPLIT and a MERGE wait in the queue with their replay predictions (computed the
  way replay computes them: the real pipeline on a shadow release). The reviewer approves the split for
  the next release (batch) and the merge now; release v2 is published with both, and the requests the
  replay said would route differently now route there — through the public infer API.
* On the tiny pack, a reviewer rejects one proposal (a reason is required) and requests changes on
  another; a domain expert edits it; the reviewer approves it; an admin rolls the release back.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from ontology.models import Release
from review.models import Proposal, ProposalStatus
from tests.browser.conftest import PASSWORD, job_done
from tests.review.queue_fixtures import (
    DEMO_PACK,
    MERGE_AB,
    MERGE_DUPLICATE,
    SMALL_PACK,
    SPLIT_BULK,
    SPLIT_PARENT,
    SPLIT_PDF,
    member,
    merge_changeset,
    replay_metrics,
    split_changeset,
    weight_changeset,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SPLIT_PROMPTS = (
    "our finance team needs all 2023 invoices in one go, is there a bulk download",
    "how do I get a PDF of my invoice",
)
MERGE_PROMPTS = ("certificate pending for 2 days",)


def _store(
    project: Any, kind: str, changeset: list[dict[str, Any]], title: str, prompts: tuple[str, ...]
) -> Any:
    """Store a MID_CONF proposal whose replay section lists where ``prompts`` land before and after, as
    the replay measures it: the real pipeline on the active release and on the candidate's shadow."""
    from inference.contracts import RequestContext
    from inference.pipeline import InferenceRequest, run_inference
    from ontology.releases import release_active
    from review.changeset import changeset_fingerprint, changeset_load, changeset_targets
    from review.loop.shadow import BaseRelease, shadow_build

    ops = changeset_load(changeset)
    base = BaseRelease.load(release_active(project_id=project.pk))
    shadow = shadow_build(base, ops, kind=kind)

    def target(prompt: str, snapshot: Any) -> str:
        result = run_inference(
            InferenceRequest(
                request_id="replay-preview",
                project=project,
                prompt=prompt,
                context=RequestContext(),
                default_role="customer",
                dry_run=True,
                snapshot=snapshot,
            )
        )
        return (result.route.target if result.route else None) or (
            result.landing.node_start if result.landing else ""
        )

    replay = replay_metrics(confirmed=0.07, uncertain=0.03, lowconf=0.02)
    replay["rerouted"] = [
        {
            "prompt": p,
            "before": target(p, base.snapshot),
            "after": target(p, shadow.snapshot),
            "outcome": "INFO_UNCERTAIN_SUCCESS",
        }
        for p in prompts
    ]
    replay["bin_reason"] = "score in the MID band"
    return Proposal.objects.create(
        project=project,
        kind=kind,
        status=ProposalStatus.PENDING_REVIEW,
        confidence_bin="MID_CONF",
        title=title,
        summary="",
        fingerprint=changeset_fingerprint(kind, ops),
        changeset=changeset,
        target_keys=changeset_targets(ops),
        score=0.41 if kind == "SPLIT" else 0.36,
        replay=replay,
        evidence={"interactions": 64},
        generator={"name": kind.lower()},
    )


@pytest.fixture
def demo_queue(db: Any) -> dict[str, Any]:
    from ontology.releases import release_publish
    from taxonomy.packs import pack_import, pack_read

    project = pack_import(pack_read(DEMO_PACK)).project
    member("rob-reviewer", "reviewer", project, password=PASSWORD)
    release_publish(project=project, actor=None)
    split = _store(
        project,
        "SPLIT",
        split_changeset(),
        "Split “Download an invoice”: one PDF vs. bulk export",
        SPLIT_PROMPTS,
    )
    merge = _store(
        project,
        "MERGE",
        merge_changeset(project),
        "Merge the pending-certificate FAQ into HTTPS certificates",
        MERGE_PROMPTS,
    )
    return {"project": project, "split": split, "merge": merge}


def test_reviewer_approves_a_split_and_a_merge_and_the_release_routes_as_replayed(
    ui, login, live_server, demo_queue, screenshot, worker
):
    from projects.services import api_token_create
    from taxonomy.models import Role

    page = ui.page
    project, split, merge = demo_queue["project"], demo_queue["split"], demo_queue["merge"]
    predicted = {row["prompt"]: row["after"] for row in split.replay["rerouted"] + merge.replay["rerouted"]}
    assert predicted == {
        SPLIT_PROMPTS[0]: SPLIT_BULK,
        SPLIT_PROMPTS[1]: SPLIT_PDF,
        MERGE_PROMPTS[0]: MERGE_AB,
    }
    assert {row["before"] for row in split.replay["rerouted"]} == {SPLIT_PARENT}
    assert merge.replay["rerouted"][0]["before"] == MERGE_DUPLICATE

    # Given the reviewer signs in, the nav says two proposals await review.
    login("rob-reviewer")
    page.get_by_role("link", name="Acme Cloud support").first.click()
    expect(page.locator("#review-badge")).to_have_text("2")
    page.locator("#nav-review").click()
    expect(page.get_by_role("heading", name="Review queue")).to_be_visible()
    expect(page.locator("#queue-table tbody tr")).to_have_count(2)
    screenshot("review-queue")

    # When they move down the queue with the keyboard and open the split (best score first),
    page.wait_for_load_state("load")  # the keyboard script is deferred: the table can show before it runs
    page.keyboard.press("j")
    expect(page.locator(f"#proposal-row-{split.pk} a.row-link")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name=re.compile("Split"), level=1)).to_be_visible()

    # then the page shows what changes (before/after pictures, new nodes and the child label), why
    # (replay metrics and the requests that route differently) and the risks.
    expect(page.locator("#pictures-before svg.graph-svg").first).to_be_visible()
    expect(
        page.locator(f'#pictures-after .gnode[data-node="{SPLIT_BULK}"][data-diff="added"]').first
    ).to_be_visible()
    expect(page.locator("#label-changes")).to_contain_text("Bulk invoice export")
    expect(page.locator("#replay-metrics")).to_contain_text("Info confirmed")
    expect(page.locator("#rerouted")).to_contain_text(SPLIT_BULK)
    expect(page.locator("#risk-findings")).to_contain_text("integrity test")
    screenshot("review-split")

    # When the reviewer approves the split for the next release (batch),
    page.get_by_label("Approve for the next release (batch)").check()
    page.get_by_role("button", name="Approve", exact=True).click()
    expect(page.locator(".flash")).to_contain_text("approved; it will be applied with the next release")
    expect(page.locator("#approved-waiting")).to_be_visible()
    assert Release.objects.filter(project=project).count() == 1

    # and then opens the merge and approves it now,
    page.locator("#nav-review").click()
    page.locator(f"#proposal-row-{merge.pk} a.row-link").click()
    expect(page.locator(f'#pictures-before .gnode[data-node="{MERGE_DUPLICATE}"]').first).to_be_visible()
    page.get_by_role("button", name="Approve", exact=True).click()

    # then a worker publishes release v2 with both proposals, while the job's progress row shows it,
    job_done(page, 2)
    expect(page.locator("#job-result")).to_contain_text(
        f"published with proposal(s) #{split.pk}, #{merge.pk}"
    )
    # and the proposal's page links the release and the rollback.
    page.goto(f"{live_server.url}/p/{project.slug}/review/proposals/{merge.pk}/")
    expect(page.locator("#applied-release")).to_contain_text("release v2")
    expect(page.locator("#rollback-link")).to_contain_text("roll back to v1")
    split.refresh_from_db()
    merge.refresh_from_db()
    assert (split.status, merge.status) == (ProposalStatus.APPLIED, ProposalStatus.APPLIED)
    assert split.applied_release.version == merge.applied_release.version == 2
    page.locator("#release-diff-link").click()
    expect(page.get_by_role("heading", name="v1 → v2")).to_be_visible()
    expect(page.locator("#diff-summary")).to_contain_text("3 nodes added")  # the split's two children, AB
    screenshot("review-release-diff")

    # And the requests the replay said would route differently now land where it predicted (public API).
    _, key = api_token_create(
        project=project, name="support-widget", role=Role.objects.get(project=project, key="customer")
    )
    from inference.models import InferenceLog

    for prompt, expected in predicted.items():
        response = page.request.post(
            f"{live_server.url}/api/v1/infer",
            headers={"Authorization": f"Bearer {key}"},
            data={"prompt": prompt},
        )
        assert response.status == 200, response.text()
        body = response.json()
        assert body["release"]["version"] == 2
        assert InferenceLog.objects.get(request_id=body["request_id"]).target_node == expected, prompt
    assert ui.external_requests == []


@pytest.fixture
def tiny_queue(db: Any) -> dict[str, Any]:
    from ontology.releases import release_publish
    from taxonomy.packs import pack_import, pack_read

    project = pack_import(pack_read(SMALL_PACK)).project
    for username, role in (("rob-reviewer", "reviewer"), ("erin-expert", "expert"), ("ada-admin", "admin")):
        member(username, role, project, password=PASSWORD)
    release_publish(project=project, actor=None)
    from review.changeset import changeset_fingerprint, changeset_load, changeset_targets

    def store(title: str, weight: float, score: float) -> Any:
        changeset = weight_changeset(weight)
        ops = changeset_load(changeset)
        return Proposal.objects.create(
            project=project,
            kind="EDGE_WEIGHT",
            status=ProposalStatus.PENDING_REVIEW,
            confidence_bin="MID_CONF",
            title=title,
            fingerprint=changeset_fingerprint("EDGE_WEIGHT", ops),
            changeset=changeset,
            target_keys=changeset_targets(ops),
            score=score,
            replay=replay_metrics(confirmed=0.04, uncertain=0.06, lowconf=0.0),
        )

    return {
        "project": project,
        "too_strong": store("Make resending the default", 0.99, 0.52),
        "reinforce": store("Reinforce resend after a missing PDF", 0.9, 0.33),
    }


def _sign_out(page: Any) -> None:
    page.get_by_role("button", name="Log out").click()


def test_reject_request_changes_edit_approve_and_roll_back(
    ui, login, live_server, tiny_queue, screenshot, worker
):
    from review.queue.selectors import proposal_fingerprint_rejected

    page = ui.page
    project, too_strong, reinforce = tiny_queue["project"], tiny_queue["too_strong"], tiny_queue["reinforce"]

    # The reviewer rejects the first proposal (keyboard: r); without a reason the form does not go out.
    login("rob-reviewer")
    page.goto(f"{live_server.url}/p/tiny/review/proposals/{too_strong.pk}/")
    page.keyboard.press("r")
    reject = page.locator("#reject-form")
    expect(reject.get_by_label("Why reject it?")).to_be_focused()
    reject.get_by_role("button", name="Reject proposal").click()
    expect(page.locator("#reject-form textarea:invalid")).to_have_count(1)
    assert Proposal.objects.get(pk=too_strong.pk).status == ProposalStatus.PENDING_REVIEW
    page.locator("#reject-form").get_by_label("Why reject it?").fill("resending must stay the second choice")
    page.locator("#reject-form").get_by_role("button", name="Reject proposal").click()
    expect(page.locator(".label-title .proposal-status")).to_have_text("REJECTED")
    expect(page.locator("#decision-history")).to_contain_text("resending must stay the second choice")
    assert proposal_fingerprint_rejected(project=project, fingerprint=too_strong.fingerprint) is True

    # It requests changes on the second one.
    page.goto(f"{live_server.url}/p/tiny/review/proposals/{reinforce.pk}/")
    page.get_by_text("Request changes…").click()
    page.locator("#changes-form").get_by_label("What should change?").fill("0.9 is too strong: use 0.8")
    page.locator("#changes-form").get_by_role("button", name="Request changes").click()
    expect(page.locator(".label-title .proposal-status")).to_have_text("CHANGES_REQUESTED")
    _sign_out(page)

    # A domain expert edits the weight and the title; the proposal goes back to review.
    login("erin-expert")
    page.goto(f"{live_server.url}/p/tiny/review/proposals/{reinforce.pk}/")
    expect(page.locator("#approve-form")).to_have_count(0)
    page.locator("#edit-link").click()
    page.get_by_label("Title").fill("Reinforce resend a little")
    page.get_by_label("Weight").fill("0.8")
    page.get_by_label("What did you change, and why?").first.fill("as requested")
    page.get_by_role("button", name="Save proposal").click()
    expect(page.locator(".flash")).to_contain_text(f"Proposal #{reinforce.pk} updated.")
    expect(page.locator(".label-title .proposal-status")).to_have_text("PENDING_REVIEW")
    expect(page.locator("#edge-changes")).to_contain_text("0.80")
    screenshot("review-edited")
    _sign_out(page)

    # The reviewer approves it now: release v2 carries the edited weight.
    login("rob-reviewer")
    page.goto(f"{live_server.url}/p/tiny/review/proposals/{reinforce.pk}/")
    page.get_by_role("button", name="Approve", exact=True).click()
    job_done(page, 2)
    reinforce.refresh_from_db()
    assert (reinforce.status, reinforce.applied_release.version) == (ProposalStatus.APPLIED, 2)
    actions = list(reinforce.decisions.values_list("action", "actor_name"))
    assert actions == [
        ("REQUEST_CHANGES", "rob-reviewer"),
        ("EDIT", "erin-expert"),
        ("APPROVE", "rob-reviewer"),
        ("APPLY", "rob-reviewer"),
    ]
    _sign_out(page)

    # The decision is reversible: an admin follows the proposal's rollback link and re-activates v1.
    login("ada-admin")
    page.goto(f"{live_server.url}/p/tiny/review/proposals/{reinforce.pk}/")
    page.locator("#rollback-link").click()
    page.locator("#release-v1").get_by_text("Roll back to v1").click()
    page.locator("#release-v1").get_by_role("button", name="Confirm: activate v1").click()
    expect(page.locator(".flash")).to_contain_text("Rolled back from v2 to v1")
    assert Release.objects.get(project=project, is_active=True).version == 1
    assert ui.external_requests == []
