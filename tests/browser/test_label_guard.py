"""End to end in real Chromium on the demo pack: an expert reads a label's nearest competing labels and
where its prompts and its neighbours' land on the active release, then meets the term guard in the
example form — refused for an example another label already has, warned (and confirms) for a very
close one."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from taxonomy.models import Label
from tests.browser.conftest import demo_published

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def acme(db: Any) -> Any:
    return demo_published(**{"erin-expert": "expert"})


def test_label_page_shows_competitors_and_routing_preview_and_the_form_guards_terms(
    ui, login, live_server, acme, screenshot
):
    page = ui.page
    login("erin-expert")

    # Given "Platform outage", which shares the synonym "outage" with "Service status",
    page.goto(f"{live_server.url}/p/{acme.slug}/taxonomy/labels/L00061/")

    # its page lists the nearest competing labels with their similarity, "Service status" among them,
    competing = page.locator("#competing-section")
    expect(competing.locator("li.competing").first).to_be_visible(timeout=60_000)
    status_row = competing.locator("li.competing[data-label='L00060']")
    expect(status_row).to_contain_text("Service status")
    expect(status_row.locator(".similarity")).to_have_text(re.compile(r"^0\.\d\d$"))

    # and routes its examples and its neighbours' with the active release, showing where each lands.
    preview = page.locator("#preview-section")
    expect(preview.locator("#preview-summary")).to_contain_text("active release v1")
    rows = preview.locator("tr.preview-row")
    assert 2 <= rows.count() <= 12
    expect(preview.locator("tr.preview-row[data-source='L00061']").first).to_be_visible()
    others = preview.locator("tr.preview-row:not([data-source='L00061'])")
    assert others.count() >= 1
    landed = {rows.nth(i).get_attribute("data-landed") for i in range(rows.count())}
    assert landed - {""}, "at least one prompt lands on a label"
    screenshot("label-preview")

    # When the expert adds to "Runtime & scaling" an example "Crashes & out-of-memory" already has,
    page.goto(f"{live_server.url}/p/{acme.slug}/taxonomy/labels/L00052/")
    examples = page.locator("#examples-section")
    examples.get_by_label("New example").fill("My app keeps restarting every few minutes!")
    examples.get_by_role("button", name="Add example").click()

    # it is refused at once, naming the other label, with no way to save it anyway.
    conflicts = page.locator("#examples-conflicts")
    expect(conflicts).to_contain_text("Crashes & out-of-memory")
    expect(conflicts).to_contain_text("L00054")
    expect(conflicts.locator(".similarity")).to_have_text("1.00")
    expect(conflicts.get_by_role("button", name="Save anyway")).to_have_count(0)
    expect(examples.locator(".errors")).to_contain_text("taxonomy.term_duplicate")

    # When the expert words it a little differently,
    close = "app keeps restarting every few minutes"
    examples.get_by_label("New example").fill(close)
    examples.get_by_role("button", name="Add example").click()

    # the form warns that it is very close to the other label's example, with the similarity,
    expect(conflicts).to_contain_text("very close to the example")
    expect(conflicts).to_contain_text("L00054")
    similarity = float(conflicts.locator(".similarity").inner_text())
    assert 0.9 <= similarity < 1.0
    screenshot("label-term-warning")
    assert close not in Label.objects.get(project=acme, label_id="L00052").examples

    # and the expert may confirm: the example is saved and listed.
    conflicts.get_by_role("button", name="Save anyway").click()
    expect(examples.locator("li", has_text=close)).to_be_visible()
    expect(page.locator("#examples-conflicts")).to_have_count(0)
    assert close in Label.objects.get(project=acme, label_id="L00052").examples
    assert ui.external_requests == []
