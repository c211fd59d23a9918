"""End to end in real Chromium: a domain expert tries an ambiguous request in the trace viewer, is asked
"Do you mean X or Y?", answers it as the user would from the trace page and reads the continuation's
decision path, which links back to the question."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from inference.models import Feedback, InferenceLog
from tests.browser.conftest import demo_published

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def acme(db: Any) -> Any:
    return demo_published(**{"erin-expert": "expert"})


def test_an_expert_answers_a_clarify_from_its_trace_and_reads_the_continuation(
    ui, login, live_server, acme, screenshot
):
    page = ui.page
    login("erin-expert")
    page.goto(f"{live_server.url}/p/{acme.slug}/traces/")

    # Given an ambiguous request tried as a customer,
    page.locator("#try-request summary").click()
    page.get_by_label("Prompt").fill("how do I set up single sign on")
    page.locator("#try-role").select_option("customer")
    page.get_by_role("button", name="Route it").click()

    # it is asked which of two labels it means, with the options as buttons,
    expect(page.locator("#trace-outcome")).to_have_text("CLARIFY")
    expect(page.locator("#step-outcome blockquote")).to_contain_text(
        "Do you mean SSO & SAML login or Set up 2FA?"
    )
    asked = page.url.rstrip("/").rsplit("/", 1)[1]
    screenshot("trace-clarify")

    # and when the expert answers as the user would,
    page.locator("#answer-question").get_by_role("button", name="SSO & SAML login").click()
    page.wait_for_url(lambda url: asked not in url)

    # the continuation is answered for that label and links back to the question.
    expect(page.locator("#trace-outcome")).to_have_text("INFO")
    expect(page.locator("#trace-chosen")).to_contain_text("The user chose SSO & SAML login")
    answered = page.url.rstrip("/").rsplit("/", 1)[1]
    log = InferenceLog.objects.get(request_id=answered)
    assert log.labels_final == {"L00028": 1.0} and log.weaver["chosen"]["request_id"] == asked
    assert not Feedback.objects.exists()  # an expert's try is not a user's answer
    screenshot("trace-continuation")
    page.locator("#trace-chosen a").click()
    page.wait_for_url(f"**/traces/{asked}/")
    expect(page.locator("#trace-outcome")).to_have_text("CLARIFY")
    assert ui.external_requests == []


def test_the_trace_filter_applies_itself_under_the_pages_csp(ui, login, live_server, acme):
    """The outcome filter submits on change through the site's script (no inline handler: the CSP
    allows none), and the page declares that policy."""
    page = ui.page
    login("erin-expert")
    response = page.goto(f"{live_server.url}/p/{acme.slug}/traces/")
    policy = response.headers["content-security-policy"]
    assert (
        "script-src 'self'" in policy and "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]
    )
    page.locator("#kind").select_option("CLARIFY")
    page.wait_for_url("**/traces/?kind=CLARIFY*")
    expect(page.locator("#kind")).to_have_value("CLARIFY")
    assert ui.csp_violations == []
