"""End to end in real Chromium and over HTTP: what a reviewer approves is exactly what clients get.

An expert edits a node title in the draft; a reviewer approves a proposal "now"; a client reading the
active release sees the proposal's change and **not** the expert's edit; the admin then reviews the
draft's diff and publishes it, and the client sees both. The release list shows the lineage.

Approving "now" and publishing are jobs: a real Celery worker (the embedded filesystem broker) runs
them while the browser follows the job's progress row, as on a fresh ``make run``.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from ontology.models import Release
from review.models import Proposal, ProposalStatus
from tests.browser.conftest import PASSWORD, job_done
from tests.review.queue_fixtures import SMALL_PACK, member, replay_metrics, weight_changeset

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
NEW_TITLE = "Questions we cannot answer here"


@pytest.fixture
def governed(db: Any) -> dict[str, Any]:
    from ontology.releases import release_publish
    from projects.services import api_token_create
    from review.changeset import changeset_fingerprint, changeset_load, changeset_targets
    from taxonomy.models import Role
    from taxonomy.packs import pack_import, pack_read

    project = pack_import(pack_read(SMALL_PACK)).project
    for username, role in (("rob-reviewer", "reviewer"), ("erin-expert", "expert"), ("ada-admin", "admin")):
        member(username, role, project, password=PASSWORD)
    release_publish(project=project, actor=None)
    changeset = weight_changeset(0.85)
    ops = changeset_load(changeset)
    proposal = Proposal.objects.create(
        project=project,
        kind="EDGE_WEIGHT",
        status=ProposalStatus.PENDING_REVIEW,
        confidence_bin="MID_CONF",
        title="Reinforce resend after a missing PDF",
        fingerprint=changeset_fingerprint("EDGE_WEIGHT", ops),
        changeset=changeset,
        target_keys=changeset_targets(ops),
        score=0.4,
        replay=replay_metrics(confirmed=0.04, uncertain=0.06, lowconf=0.0),
    )
    _, key = api_token_create(
        project=project, name="widget", role=Role.objects.get(project=project, key="customer")
    )
    return {"project": project, "proposal": proposal, "key": key}


def _served(page: Any, base: str, key: str) -> tuple[str, float]:
    """What a client reads from the active release: N-oos's title and the invoice → resend weight."""
    headers = {"Authorization": f"Bearer {key}"}
    node = page.request.get(f"{base}/api/v1/projects/tiny/nodes/N-oos/", headers=headers)
    assert node.status == 200, node.text()
    around = page.request.get(
        f"{base}/api/v1/projects/tiny/nodes/N-invoice-download/neighbourhood/?direction=out", headers=headers
    )
    assert around.status == 200, around.text()
    weight = next(e["weight"] for e in around.json()["edges"] if e["target"] == "N-resend-invoice")
    return node.json()["title"], round(weight, 2)


def test_an_approval_publishes_only_the_proposal_and_the_admin_publishes_the_reviewed_draft(
    ui, login, live_server, governed, screenshot, worker
):
    page, base, key = ui.page, live_server.url, governed["key"]
    proposal = governed["proposal"]
    old_title, _ = _served(page, base, key)
    assert _served(page, base, key) == (old_title, 0.7)

    # An expert edits a node title in the draft.
    login("erin-expert")
    page.goto(f"{base}/p/tiny/graph/nodes/N-oos/")
    page.get_by_text("Edit node fields").click()
    page.locator("#node-edit-form").get_by_label("Title").fill(NEW_TITLE)
    page.get_by_role("button", name="Save node").click()
    expect(page.locator(".flash")).to_contain_text("Node saved to the draft.")
    page.get_by_role("button", name="Log out").click()

    # A reviewer approves the proposal now: v2 is the active release plus the proposal, nothing else.
    login("rob-reviewer")
    page.goto(f"{base}/p/tiny/review/proposals/{proposal.pk}/")
    page.get_by_role("button", name="Approve", exact=True).click()
    expect(page.locator(".flash")).to_contain_text(f"Proposal #{proposal.pk} approved; job #")
    expect(page.locator("progress")).to_be_visible()  # the job's progress row, polled while it runs
    job_done(page, 2)
    expect(page.locator("#job-result")).to_contain_text(f"published with proposal(s) #{proposal.pk}")
    screenshot("approve-now-job")
    assert _served(page, base, key) == (old_title, 0.85)  # the proposal's change, not the expert's edit
    page.locator("#job-release").click()
    expect(page.locator("#lineage-v2")).to_contain_text(f"v1 + approved #{proposal.pk}")
    page.get_by_role("button", name="Log out").click()

    # The admin sees the lineage, reviews the draft's diff (the expert's edit) and publishes it.
    login("ada-admin")
    page.goto(f"{base}/p/tiny/graph/releases/")
    expect(page.locator("#lineage-v2")).to_contain_text(f"v1 + approved #{proposal.pk}")
    expect(page.locator("#lineage-v2")).to_contain_text("by rob-reviewer")
    page.locator("#review-draft").click()
    expect(page.get_by_role("heading", name="Publish the draft", level=1)).to_be_visible()
    expect(page.locator("#diff-summary")).to_contain_text("1 node changed")
    expect(page.locator("#diff-nodes")).to_contain_text("N-oos")
    expect(page.locator("#diff-edges")).not_to_contain_text("N-resend-invoice")  # already released
    screenshot("publish-draft-diff")
    page.get_by_role("button", name="Publish release").click()
    expect(page.locator(".flash")).to_contain_text("Publication queued as job #")
    job_done(page, 3)
    expect(page.locator("#job-result")).to_contain_text("release v3 published and active")
    page.locator("#job-release").click()
    expect(page.locator("#lineage-v3")).to_contain_text("draft publication after v2")
    assert _served(page, base, key) == (NEW_TITLE, 0.85)
    assert list(Release.objects.filter(project=governed["project"]).values_list("version", "source")) == [
        (3, "DRAFT"),
        (2, "CHANGESETS"),
        (1, "DRAFT"),
    ]

    # Publishing again finds nothing to publish.
    page.locator("#review-draft").click()
    expect(page.locator("#draft-unchanged")).to_contain_text("identical to the active release v3")
    assert ui.external_requests == []
