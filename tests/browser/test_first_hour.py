"""The first hour in real Chromium, at 1280 px wide, on the demo pack: "Try a request" starts on the
project's default role and is answered; a request refused as invalid shows as REJECTED (not ERROR) on
Traces and the dashboard, and the Outcome filter finds it; the traces table is not clipped; the node list
names its labels; an expert sees who publishes and asks them, and the admin sees the request; the API
reference (Swagger UI, Redoc) renders from the platform's own files — nothing is fetched from outside
and the Content-Security-Policy refuses nothing (the ``ui`` fixture asserts both)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from inference.models import InferenceLog
from projects.models import PublishRequest
from tests.browser.conftest import demo_published

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def acme(db: Any, token_client: Any) -> Any:
    from taxonomy.models import Role

    project = demo_published(**{"erin-expert": "expert", "ada-admin": "admin"})
    # the client app of the project, as bootstrap_demo makes it: its role is the project's default
    project.client = token_client(project, role=Role.objects.get(project=project, key="customer"))
    return project


def test_try_a_request_starts_on_the_default_role_and_invalid_requests_are_rejected(
    ui, login, live_server, acme, screenshot
):
    page = ui.page
    page.set_viewport_size({"width": 1280, "height": 900})
    # a client app sends a number as the prompt: refused as invalid, logged
    refused = acme.client.post("/api/v1/infer", {"prompt": 42}, format="json")
    assert refused.status_code == 400
    login("erin-expert")
    page.goto(f"{live_server.url}/p/{acme.slug}/traces/")

    # "Try a request" is ready on the project's default role: the first try is answered
    page.locator("#try-request summary").click()
    expect(page.locator("#try-role")).to_have_value("customer")
    page.get_by_label("Prompt").fill("how do I download my invoice")
    page.get_by_role("button", name="Route it").click()
    expect(page.locator("#trace-outcome")).to_have_text("INFO")
    tried = InferenceLog.objects.get(request_id=page.url.rstrip("/").rsplit("/", 1)[1])
    assert tried.role_key == "customer" and tried.error == ""

    # on Traces the refused request is REJECTED, not ERROR, and the Outcome filter finds it
    page.goto(f"{live_server.url}/p/{acme.slug}/traces/")
    table = page.locator("#trace-table")
    expect(table.locator(".badge-rejected")).to_have_count(1)
    expect(table).not_to_contain_text("ERROR")
    # the table and the filters fit 1280 px: nothing clipped, nothing scrolls sideways
    wrap = page.locator("#trace-table").locator("xpath=..")
    assert wrap.evaluate("w => w.scrollWidth <= w.clientWidth"), "the traces table is clipped"
    box = page.get_by_role("columnheader", name="Release").bounding_box()
    assert box is not None and box["x"] + box["width"] <= 1280
    assert page.locator("#trace-filters select").evaluate("e => getComputedStyle(e).borderRadius") != "0px"
    screenshot("traces-1280")
    page.locator("#kind").select_option("REJECTED")
    page.wait_for_url("**kind=REJECTED**")
    expect(page.locator("#trace-table tbody tr")).to_have_count(1)
    expect(page.locator("#trace-table tbody .badge-rejected")).to_have_attribute(
        "title", re.compile("the prompt must be text")
    )
    page.get_by_label("Flag").fill("no-such-flag")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator(".empty")).to_contain_text("No request matches these filters")

    # the dashboard counts it as REJECTED
    page.goto(f"{live_server.url}/p/{acme.slug}/dashboard/")
    expect(page.locator("#table-outcomes")).to_contain_text("REJECTED")
    expect(page.locator("#table-outcomes")).not_to_contain_text("ERROR")


def test_node_list_names_labels(ui, login, live_server, acme):
    page = ui.page
    page.set_viewport_size({"width": 1280, "height": 900})
    login("erin-expert")
    page.goto(f"{live_server.url}/p/{acme.slug}/graph/?search=invoice")
    first = page.locator(".node-table tbody tr").first.locator(".label-ref").first
    expect(first).to_be_visible()
    label_id = first.locator("code").inner_text()
    from taxonomy.models import Label

    name = Label.objects.get(project=acme, label_id=label_id).name
    expect(first).to_contain_text(name)


def test_an_expert_asks_the_admins_to_publish_and_they_see_it(ui, login, live_server, acme, browser):
    page = ui.page
    page.set_viewport_size({"width": 1280, "height": 900})
    login("erin-expert")
    page.goto(f"{live_server.url}/p/{acme.slug}/graph/releases/")
    expect(page.locator("#review-draft")).to_have_count(0)  # an expert cannot publish
    expect(page.locator("#publishers")).to_contain_text("ada-admin")
    page.get_by_label("Note for the administrators").fill("new refund wording is ready")
    page.get_by_role("button", name="Ask an administrator to publish").click()
    expect(page.locator("#publish-asked")).to_be_visible()
    asked = PublishRequest.objects.get(project=acme)
    assert asked.requested_by.username == "erin-expert" and asked.note == "new refund wording is ready"

    # the admin sees a badge beside "Releases" and the request on the page
    page.get_by_role("button", name="Log out").click()
    login("ada-admin")
    page.goto(f"{live_server.url}/p/{acme.slug}/traces/")
    expect(page.locator("#publish-badge")).to_have_text("1")
    page.locator("#nav-releases").click()
    expect(page.locator("#publish-requests")).to_contain_text("erin-expert")
    expect(page.locator("#publish-requests")).to_contain_text("new refund wording is ready")
    page.locator("#publish-requests").get_by_role("button", name="Dismiss").click()
    expect(page.locator("#publish-requests")).to_have_count(0)
    expect(page.locator("#publish-badge")).to_have_count(0)


def test_the_api_reference_renders_from_local_files(ui, live_server):
    page = ui.page
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/api/v1/docs/")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("ARG knowledge platform API")
    expect(page.locator(".opblock-tag").first).to_be_visible()
    page.goto(f"{live_server.url}/api/v1/redoc/")
    expect(page.locator("h1").first).to_contain_text("ARG knowledge platform API")
    expect(page.get_by_text("infer", exact=True).first).to_be_visible()
    assert ui.external_requests == []
