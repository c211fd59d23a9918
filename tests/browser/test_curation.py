"""End to end in real Chromium: a domain expert curates the taxonomy; a reviewer only reads it."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from arg_platform.models import AuditEvent
from taxonomy.models import Label, Policy

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_expert_creates_moves_and_enriches_a_label_and_meets_a_validator_refusal(
    ui, login, live_server, seed, screenshot
):
    page = ui.page
    login("erin-expert")
    page.goto(f"{live_server.url}/p/acme/taxonomy/")
    expect(page.get_by_role("heading", name="Taxonomy", exact=True)).to_be_visible()
    screenshot("taxonomy")

    # Given the tree, when the expert adds a child under "Invoices" in place,
    page.get_by_role("link", name="Add a child label under Invoices").click()
    form = page.locator(f"#slot-{seed.invoices.label_id}-form")
    form.get_by_label("Name").fill("Disputed invoices")
    form.get_by_label("Description").fill("The customer does not agree with an invoice.")
    form.get_by_role("button", name="Create label").click()

    # then the tree is refreshed with the new label highlighted under its parent.
    created = page.locator("#tree-region .is-highlight")
    expect(created).to_contain_text("Disputed invoices")
    label = Label.objects.get(project=seed.project, name="Disputed invoices")
    assert label.parent_id == seed.invoices.pk
    assert label.path == "Billing & payments › Invoices › Disputed invoices"
    expect(page.locator(f"#node-{seed.invoices.label_id}")).to_contain_text("Disputed invoices")
    screenshot("taxonomy-created")

    # When the expert opens it and moves it under "Refunds",
    created.get_by_role("link", name="Disputed invoices", exact=True).click()
    expect(page.get_by_role("heading", name="Disputed invoices", level=1)).to_be_visible()
    page.get_by_label("New place").select_option(f"label:{seed.refunds.label_id}")
    page.locator("#move-section").get_by_label("Why (for the history)").fill("disputes lead to refunds")
    page.get_by_role("button", name="Move label").click()

    # then the page shows the new place and the database agrees.
    expect(page.locator("#label-parent")).to_contain_text("Refunds")
    expect(page.locator("#label-path")).to_have_text("Billing & payments › Refunds › Disputed invoices")
    label.refresh_from_db()
    assert label.parent_id == seed.refunds.pk
    assert AuditEvent.objects.filter(object_key=label.label_id, action="move").count() == 1

    # When the expert adds two examples in place (no page load),
    page.evaluate("window.__sameDocument = true")
    examples = page.locator("#examples-section")
    for text in ("I was charged twice this month", "this invoice amount is wrong"):
        examples.get_by_label("New example").fill(text)
        examples.get_by_role("button", name="Add example").click()
        expect(examples.locator("li", has_text=text)).to_be_visible()
    expect(examples.get_by_label("New example")).to_have_value("")

    # then both are listed, saved, recorded in the history, and the page never reloaded.
    expect(examples.locator("li")).to_have_count(2)
    assert page.evaluate("window.__sameDocument") is True
    label.refresh_from_db()
    assert label.examples == ["I was charged twice this month", "this invoice amount is wrong"]
    expect(page.locator("#label-history")).to_contain_text("examples")
    screenshot("label")

    # When the expert adds a sibling with the same name under "Refunds",
    page.goto(f"{live_server.url}/p/acme/taxonomy/")
    labels_before = Label.objects.filter(project=seed.project).count()
    page.get_by_role("link", name="Add a child label under Refunds").click()
    form = page.locator(f"#slot-{seed.refunds.label_id}-form")
    form.get_by_label("Name").fill("disputed invoices")
    form.get_by_role("button", name="Create label").click()

    # then the validator refuses it in place, naming the rule, and nothing is created.
    error = form.locator(".errors")
    expect(error).to_contain_text("taxonomy.sibling_unique")
    expect(form.get_by_label("Name")).to_have_attribute("aria-invalid", "true")
    screenshot("refusal")
    assert Label.objects.filter(project=seed.project).count() == labels_before
    assert Label.objects.filter(project=seed.project, name__iexact="disputed invoices").count() == 1
    assert ui.external_requests == []


def test_expert_filters_the_tree_live(ui, login, live_server, seed, screenshot):
    page = ui.page
    login("erin-expert")
    page.goto(f"{live_server.url}/p/acme/taxonomy/")
    page.get_by_role("searchbox", name="Search labels").fill("late")
    results = page.locator("#tree-region table")
    expect(results.locator("tbody tr")).to_have_count(1)
    expect(results).to_contain_text("Late fees")
    expect(page).to_have_url(re.compile(r"\?q=late$"))
    page.get_by_role("searchbox", name="Search labels").fill("")
    expect(page.locator(f"#cluster-{seed.billing.key}")).to_be_visible()


def test_reviewer_reads_the_taxonomy_without_edit_controls(ui, login, live_server, seed, screenshot):
    page = ui.page
    login("rob-reviewer")
    page.goto(f"{live_server.url}/p/acme/taxonomy/")
    expect(page.locator(f"#node-{seed.late_fees.label_id}")).to_contain_text("Late fees")
    expect(page.locator(".role-badge")).to_have_text("reviewer")
    expect(page.get_by_text("+ New cluster")).to_have_count(0)
    expect(page.locator(".add-child, .add-root")).to_have_count(0)
    expect(page.locator("form[method=post]:not(.logout)")).to_have_count(0)

    page.get_by_role("link", name="Late fees").click()
    expect(page.get_by_role("heading", name="Late fees", level=1)).to_be_visible()
    expect(page.locator("#synonyms-section")).to_contain_text("penalty")
    expect(page.locator("form[method=post]:not(.logout)")).to_have_count(0)
    expect(page.get_by_role("button", name=re.compile("Move|Add|Remove|Change status"))).to_have_count(0)
    screenshot("label-reviewer")
    assert ui.external_requests == []


def test_expert_meets_a_policy_refusal_in_place_then_saves(ui, login, live_server, seed, screenshot):
    page = ui.page
    login("erin-expert")
    page.get_by_role("link", name="Acme").first.click()
    page.get_by_role("navigation", name="Project sections").get_by_role("link", name="Policies").click()
    expect(page.get_by_role("heading", name="Policies", level=1)).to_be_visible()
    page.get_by_text("+ New policy").click()
    form = page.locator("#editor-form")
    form.get_by_label("Key").fill("agent")
    form.get_by_label("Name").fill("Support agent")
    form.get_by_label("Allowed labels").fill(f"{seed.invoices.label_id}\nL09999")
    form.get_by_label("Sensitive topics").fill("legal-advice: lawsuit, sue -> REFOCUS")
    form.get_by_role("button", name="Create policy").click()

    error = page.locator("#new-policy-allowed_labels_error")
    expect(error).to_contain_text("policy.label_refs")
    expect(error).to_contain_text("L09999 does not exist")
    expect(page.locator("#new-policy-sensitive_topics")).to_have_value(
        "legal-advice: lawsuit, sue -> REFOCUS"
    )
    screenshot("policy-refusal")
    assert not Policy.objects.filter(project=seed.project, key="agent").exists()

    page.locator("#new-policy-allowed_labels").fill(seed.invoices.label_id)
    page.get_by_role("button", name="Create policy").click()
    expect(page).to_have_url(f"{live_server.url}/p/acme/policies/agent/")
    expect(page.locator(".flash")).to_have_text("Policy “Support agent” created.")
    policy = Policy.objects.get(project=seed.project, key="agent")
    assert policy.allowed_labels == [seed.invoices.label_id]
    assert policy.sensitive_topics == [
        {"topic": "legal-advice", "terms": ["lawsuit", "sue"], "action": "REFOCUS"}
    ]
    page.goto(f"{live_server.url}/p/acme/history/")
    expect(page.locator("#history-table tbody tr").first).to_contain_text("agent")
    screenshot("history")
    assert ui.external_requests == []
