"""End to end in real Chromium: an expert tags a node with the products it is specific to, sees them
on the node page, and a malformed product key is refused with its field message."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from ontology.store import get_graph_store
from taxonomy.packs import pack_import, pack_read
from tests.taxonomy.test_packs import SMALL

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def tiny(make_user):
    project = pack_import(pack_read(SMALL)).project
    make_user("erin-expert", "expert", project)
    return project


def test_expert_tags_a_node_with_products_and_sees_them(ui, login, live_server, tiny):
    page = ui.page
    login("erin-expert")
    page.goto(f"{live_server.url}/p/tiny/graph/nodes/N-invoice-download/")
    expect(page.locator("#node-products")).to_have_text("Every product.")

    page.get_by_text("Edit node fields").click()
    form = page.locator("#node-edit-form")
    form.get_by_label("Products").fill("Not OK")
    form.get_by_role("button", name="Save node").click()
    expect(page.locator("#node-edit-form")).to_contain_text("product keys are 1–63 characters")
    assert get_graph_store().get_node(tiny.pk, "N-invoice-download").products == ()

    form = page.locator("#node-edit-form")
    form.get_by_label("Products").fill("cli, dashboard")
    form.get_by_role("button", name="Save node").click()
    expect(page.locator("#node-products li")).to_have_text(["cli", "dashboard"])
    assert get_graph_store().get_node(tiny.pk, "N-invoice-download").products == ("cli", "dashboard")
