"""End to end in real Chromium: an expert explores and edits the graph draft; an admin publishes and
rolls back releases."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from ontology import services
from ontology.models import OntologyEdge, Release
from ontology.store.port import EdgeData
from taxonomy.packs import pack_import, pack_read
from tests.browser.conftest import job_done
from tests.taxonomy.test_packs import SMALL

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def tiny(make_user):
    """Project "tiny": N-invoice-download -[LEADS_TO]-> N-resend-invoice, and N-oos on its own."""
    project = pack_import(pack_read(SMALL)).project
    make_user("erin-expert", "expert", project)
    make_user("ada-admin", "admin", project)
    return project


def test_expert_explores_the_picture_and_edits_edges_in_place(ui, login, live_server, tiny, screenshot):
    page = ui.page
    login("erin-expert")
    page.get_by_role("link", name="Tiny support").first.click()
    page.get_by_role("navigation", name="Project sections").get_by_role("link", name="Graph").click()
    expect(page.get_by_role("heading", name="Ontology graph")).to_be_visible()
    page.get_by_role("link", name="Resend an invoice").click()

    # Given the node page, the picture shows the node and its one neighbour, coloured by type.
    expect(page.get_by_role("heading", name="Resend an invoice", level=1)).to_be_visible()
    picture = page.locator("#graph-picture svg.graph-svg")
    expect(picture.locator("circle.gnode-dot")).to_have_count(2)
    expect(picture.locator(".gnode.is-center")).to_have_attribute("data-node", "N-resend-invoice")
    expect(page.locator("#graph-picture .graph-legend")).to_contain_text("Action")
    picture.locator('a.gnode[data-node="N-invoice-download"]').hover()
    expect(picture.locator(".gedge.is-hl")).to_have_count(1)
    screenshot("graph-node")

    # When the expert clicks the neighbour in the picture, its page opens.
    picture.locator('a.gnode[data-node="N-invoice-download"]').click()
    expect(page).to_have_url(f"{live_server.url}/p/tiny/graph/nodes/N-invoice-download/")
    expect(page.get_by_role("heading", name="Download an invoice", level=1)).to_be_visible()
    expect(page.locator("#graph-picture circle.gnode-dot")).to_have_count(2)

    # When the expert adds an edge to N-oos in place (picking it from the suggestions),
    page.wait_for_load_state("load")  # htmx (a deferred script) binds the suggestion input by then
    page.evaluate("window.__sameDocument = true")
    form = page.locator("#edge-add-form")
    form.get_by_label("Other node").fill("out of")
    expect(page.locator('#edge-other-options option[value="N-oos"]')).to_have_count(1)
    form.get_by_label("Other node").fill("N-oos")
    form.get_by_label("Edge type").select_option("ESCALATES_TO")
    form.get_by_label("Weight").fill("0.3")
    form.get_by_label("Semantics").fill("not about invoices")
    form.get_by_role("button", name="Add edge").click()

    # then the neighbours, the picture and the history refresh without a page load.
    expect(page.locator("#outgoing-edges")).to_contain_text("Out of scope")
    expect(page.locator("#graph-picture circle.gnode-dot")).to_have_count(3)
    expect(page.locator("#node-history")).to_contain_text("not about invoices")
    expect(page.locator(".flash")).to_contain_text("Edge ESCALATES_TO added to the draft.")
    assert page.evaluate("window.__sameDocument") is True
    assert OntologyEdge.objects.filter(
        project=tiny, source__node_id="N-invoice-download", target__node_id="N-oos", type="ESCALATES_TO"
    ).exists()

    # When the expert tries an edge from the node to itself,
    edges_before = OntologyEdge.objects.filter(project=tiny).count()
    form = page.locator("#edge-add-form")
    form.get_by_label("Other node").fill("N-invoice-download")
    form.get_by_role("button", name="Add edge").click()

    # then the refusal is shown next to the field, naming the rule, and nothing is written.
    error = page.locator("#id_edge-other_error")
    expect(error).to_contain_text("graph.self_loop")
    expect(form.get_by_label("Other node")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#graph-picture circle.gnode-dot")).to_have_count(3)
    assert page.evaluate("window.__sameDocument") is True
    assert OntologyEdge.objects.filter(project=tiny).count() == edges_before
    screenshot("graph-refusal")

    # The depth toggle swaps the picture in place.
    page.get_by_role("navigation", name="Depth of the picture").get_by_role("link", name="2 hops").click()
    expect(page.locator("#picture-summary")).to_contain_text("within 2 hops")
    expect(page).to_have_url(re.compile(r"\?depth=2$"))
    assert ui.external_requests == []


def _active_badges(page):
    return page.locator("#release-table .active-badge")


def test_admin_publishes_then_rolls_back_and_the_active_badge_moves(
    ui, login, live_server, tiny, screenshot, worker
):
    page = ui.page
    login("ada-admin")
    page.goto(f"{live_server.url}/p/tiny/graph/releases/")
    expect(page.get_by_role("heading", name="No release yet")).to_be_visible()

    # When the admin reviews the draft (everything is new) and publishes it,
    page.locator("#review-draft").click()
    expect(page.locator("#diff-summary")).to_contain_text("3 nodes added")
    page.get_by_label("Release notes").fill("first cut")
    page.get_by_role("button", name="Publish release").click()

    # then a worker publishes it while the job's page shows the progress, and v1 is the active release.
    job_done(page, 1)
    page.locator("#job-release").click()
    expect(page.locator("#release-v1 .active-badge")).to_be_visible()
    expect(page.locator("#draft-banner")).to_contain_text("matches the active release v1")

    # Given a change of the draft, when the admin publishes again, v2 becomes the active one.
    services.edge_add(project=tiny, actor=None, edge=EdgeData("N-resend-invoice", "N-oos", "RELATED_TO", 0.2))
    page.reload()
    expect(page.locator("#draft-banner")).to_contain_text("differs from the active release v1")
    page.locator("#review-draft").click()
    expect(page.locator("#diff-edges")).to_contain_text("N-resend-invoice")
    page.get_by_label("Release notes").fill("related topics")
    page.get_by_role("button", name="Publish release").click()
    job_done(page, 2)
    page.locator("#job-release").click()
    expect(page.locator("#release-v2 .active-badge")).to_be_visible()
    expect(_active_badges(page)).to_have_count(1)
    screenshot("graph-releases")

    # When the admin rolls back to v1 (and confirms),
    row = page.locator("#release-v1")
    row.get_by_text("Roll back to v1").click()
    row.get_by_label("Why").fill("related edge was wrong")
    row.get_by_role("button", name="Confirm: activate v1").click()

    # then the badge moves back to v1, and the database agrees.
    expect(page.locator("#release-v1 .active-badge")).to_be_visible()
    expect(_active_badges(page)).to_have_count(1)
    expect(page.locator(".flash")).to_contain_text("Rolled back from v2 to v1")
    assert list(Release.objects.filter(project=tiny, is_active=True).values_list("version", flat=True)) == [1]

    # The diff of v2 against v1 names the edge it added.
    page.locator("#release-v2").get_by_role("link", name="Diff vs v1").click()
    expect(page.get_by_role("heading", name="v1 → v2")).to_be_visible()
    expect(page.locator("#diff-edges")).to_contain_text("N-resend-invoice RELATED_TO → N-oos")
    screenshot("graph-diff")
    assert ui.external_requests == []
