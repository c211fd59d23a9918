"""End to end in real Chromium: a reviewer browses memory by user and InfoType, opens an InfoUnit with
its evidence, resolves an UNSURE item from the staging list, then undoes that merge on the unit page,
naming the terms that differ, and finds (and forgets) the distinction it taught."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from memory import services
from memory.models import InfoUnit, RegistryAttempt

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def staged(make_user):
    from taxonomy.packs import pack_import, pack_read
    from tests.memory.conftest import MEMORY_PACK

    project = pack_import(pack_read(MEMORY_PACK)).project
    make_user("viv-reviewer", "reviewer", project)
    common = {"project": project, "scope": "USER", "label_ids": ["L00001"], "info_type": "UserPreference"}
    services.memory_write(
        text="The customer wants maintenance windows on Sunday nights.", user_id="u-1", **common
    )
    services.memory_write(text="Invoices go to Jane Doe in finance.", user_id="u-2", **common)
    return services.memory_write(
        text="Schedule this customer's maintenance for Sunday night.", user_id="u-1", **common
    ).registry.attempt


def test_reviewer_browses_memory_and_resolves_an_unsure_item(ui, login, live_server, staged, screenshot):
    page = ui.page
    login("viv-reviewer")
    page.goto(f"{live_server.url}/p/mem/taxonomy/")
    page.get_by_role("navigation", name="Project sections").get_by_role("link", name="Memory").click()

    # The browser lists episodic items; PII was scrubbed before anything was stored.
    expect(page.get_by_role("heading", name="Memory", level=1)).to_be_visible()
    table = page.locator("#memory-table")
    expect(table.locator("tbody tr")).to_have_count(3)
    expect(table).to_contain_text("Invoices go to <PERSON> in finance.")
    expect(page.locator("#staging-count")).to_have_text("1")

    # Filtering by user keeps that user's items only.
    page.get_by_label("User").fill("u-2")
    page.get_by_role("button", name="Filter").click()
    expect(table.locator("tbody tr")).to_have_count(1)
    screenshot("memory-browser")

    # The InfoUnit page shows the InfoKey, the current label path and the evidence.
    page.get_by_role("link", name="InfoUnits").click()
    unit = InfoUnit.objects.order_by("id").first()
    page.get_by_role("link", name=f"#{unit.pk}", exact=True).click()
    expect(page.locator("#unit-info-key")).to_have_text(unit.info_key.key)
    expect(page.locator("#unit-label-path")).to_have_text("Billing › Invoices")
    expect(page.locator("#evidence-table tbody tr")).to_have_count(1)

    # The staging list shows the undecided fact beside its candidate; the reviewer says SAME.
    page.get_by_role("navigation", name="Project sections").get_by_role("link", name="Memory").click()
    page.get_by_role("link", name="UNSURE staging").click()
    item = page.locator(f"#attempt-{staged.pk}")
    expect(item.locator(".staged-fact")).to_have_text(
        "Schedule this customer's maintenance for Sunday night."
    )
    expect(item.locator(".candidate-fact")).to_contain_text("maintenance windows on sunday nights")
    item.get_by_label("Reason").fill("same maintenance window")
    # Nothing reviewed yet: the merge-bar curve waits for decisions.
    expect(page.locator("#merge-curve-empty")).to_be_visible()
    screenshot("memory-staging")
    item.get_by_role("button", name="Same fact").click()

    expect(page.locator(".flash-success")).to_contain_text("Resolved as SAME")
    expect(page.get_by_text("Nothing waits for review.")).to_be_visible()
    expect(page.locator("#staging-count")).to_have_text("0")
    # The decision is a point of the merge-bar curve: drawn, with the bar in force marked.
    curve = page.locator("#merge-curve")
    expect(curve).to_be_visible()
    expect(curve.locator("polyline[data-series='recall']")).to_have_count(1)
    expect(page.locator("#merge-operating-point")).to_have_attribute("data-slack", "2")
    expect(page.locator("#merge-operating-figures")).to_contain_text(
        "On the 1 most recent pair reviewers resolved"
    )
    screenshot("memory-merge-bar")
    staged.refresh_from_db()
    assert (staged.review_status, staged.resolution_reason) == (
        RegistryAttempt.Review.SAME,
        "same maintenance window",
    )
    assert staged.resolved_by.username == "viv-reviewer"
    assert InfoUnit.objects.get(pk=unit.pk).evidence_count == 2

    page.goto(f"{live_server.url}/p/mem/memory/units/{unit.pk}/")
    expect(page.locator("#evidence-table tbody tr")).to_have_count(2)
    expect(page.locator("#unit-history")).to_contain_text("REVIEWED by viv-reviewer")

    # Second thoughts: it was another fact after all. The reviewer detaches it on the InfoUnit page.
    rows = page.locator("#evidence-table tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.filter(has_text="maintenance windows")).to_contain_text("founded the unit")
    row = rows.filter(has_text="Schedule this customer")
    row.get_by_label("Reason").fill("a one-off schedule, not the standing preference")
    row.get_by_label("Unit's term").fill("windows")  # what differs: taught to the registry
    row.get_by_label("Fact's term").fill("schedule")
    screenshot("memory-detach-terms")
    row.get_by_role("button", name="Detach").click()

    expect(page.locator("#evidence-table tbody tr")).to_have_count(1)  # the page after the redirect
    new = InfoUnit.objects.exclude(pk=unit.pk).get(founding_text__startswith="Schedule this customer")
    expect(page.locator(".flash-success")).to_contain_text(f"it is InfoUnit #{new.pk} now")
    expect(page.locator("#unit-history")).to_contain_text("DETACHED")
    screenshot("memory-detach")
    staged.refresh_from_db()
    assert (staged.review_status, staged.unit_id) == (RegistryAttempt.Review.DIFFERENT, new.pk)

    # The distinction it taught is listed under Distinctions, where a reviewer can forget it.
    page.get_by_role("navigation", name="Project sections").get_by_role("link", name="Memory").click()
    page.get_by_role("link", name="Distinctions").click()
    taught = page.locator("#distinction-table tbody tr")
    expect(taught).to_have_count(1)
    expect(taught).to_contain_text("schedule")
    expect(taught).to_contain_text("windows")
    expect(taught).to_contain_text("viv-reviewer")
    screenshot("memory-distinctions")
    taught.get_by_role("button", name="Forget schedule ≠ windows").click()
    expect(page.locator(".flash-success")).to_contain_text("Forgot the distinction schedule ≠ windows")
    expect(page.get_by_text("No distinction taught yet.")).to_be_visible()
    assert ui.external_requests == []


def test_admin_moves_the_merge_bar_and_the_marked_point_follows(ui, login, live_server, staged, make_user):
    from memory.models import MergeBar

    admin = make_user("ada-admin", "admin", staged.project)
    services.registry_unsure_resolve(attempt=staged, decision="SAME", actor=admin, reason="")
    page = ui.page
    login("ada-admin")
    page.goto(f"{live_server.url}/p/mem/memory/staging/")
    expect(page.locator("#merge-operating-point")).to_have_attribute("data-slack", "2")
    bar = page.get_by_label("Merge automatically when at most")
    expect(bar).to_have_value("2")

    # Out of range: refused next to the field, nothing saved.
    bar.fill("9")
    page.locator("#merge-bar-form").get_by_role("button", name="Save").click()
    expect(page.locator("#merge-bar-errors")).to_contain_text("less than or equal to 8")
    expect(page.locator("#merge-operating-point")).to_have_attribute("data-slack", "2")
    assert not MergeBar.objects.exists()

    # Bar 0: the marked operating point moves to 0 and the figures follow.
    page.get_by_label("Merge automatically when at most").fill("0")
    page.locator("#merge-bar-form").get_by_role("button", name="Save").click()
    expect(page.locator(".flash-success")).to_contain_text("Merge bar set to 0")
    expect(page.locator("#merge-operating-point")).to_have_attribute("data-slack", "0")
    expect(page.locator("#merge-bar-slack")).to_have_text("0")
    expect(page.locator("#merge-operating-figures")).to_contain_text("the gate at a bar of 0 lets")
    expect(page.get_by_label("Merge automatically when at most")).to_have_value("0")
    assert MergeBar.objects.get(project=staged.project).identity_slack == 0
    assert ui.external_requests == []
