"""In real Chromium: an expert moves the ask threshold's operating point, an admin publishes, and the
Releases page draws the held-out curve with the moved point (and the calibrated one) marked.

The demo pack is published once (calibrated on held-out examples); the expert first types a value
outside [0, 1) and gets it back on its field, then sets one; the publish page names the change; the
publication is a job a real Celery worker runs, as on a fresh ``make run``.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from ontology.models import AskThresholdOverride, Release
from tests.browser.conftest import demo_published, job_done

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def demo(db: Any) -> Any:
    return demo_published(**{"erin-expert": "expert", "ada-admin": "admin"})


def test_an_expert_moves_the_operating_point_and_the_published_release_draws_it(
    ui, login, live_server, demo, screenshot, worker
):
    page, base = ui.page, live_server.url
    releases = f"{base}/p/{demo.slug}/graph/releases/"
    calibrated = Release.objects.get(project=demo, version=1).ask_threshold
    assert calibrated["source"] == "calibrated" and calibrated["curve"]
    moved = round(calibrated["value"] + 0.15, 2)

    # The expert sees the curve with the calibrated operating point, and moves it.
    login("erin-expert")
    page.goto(releases)
    curve = page.get_by_role("img", name=re.compile(r"precision and coverage against the ask threshold"))
    expect(curve).to_be_visible()
    expect(page.locator("#ask-operating-point")).to_have_attribute("data-threshold", str(calibrated["value"]))
    expect(page.locator("#ask-calibrated-point")).to_have_count(0)
    field = page.get_by_label("Ask threshold for the next release")
    field.fill("1.2")
    page.get_by_role("button", name="Save for the next release").click()
    expect(page.locator("#id_ask_threshold_error")).to_contain_text("from 0 up to (not including) 1")
    assert not AskThresholdOverride.objects.filter(project=demo).exists()
    page.get_by_label("Ask threshold for the next release").fill(str(moved))
    page.get_by_role("button", name="Save for the next release").click()
    expect(page.locator("#ask-draft-value")).to_contain_text(f"The draft asks below {moved:.2f}")
    expect(page.locator("#ask-threshold-value")).to_have_text(f"{calibrated['value']:.2f}")  # not yet
    page.get_by_role("button", name="Log out").click()

    # The admin reviews the draft (the change is named) and publishes it.
    login("ada-admin")
    page.goto(releases)
    page.locator("#review-draft").click()
    expect(page.locator("#ask-threshold-change")).to_contain_text(f"→ {moved:.2f} (set by a curator)")
    page.get_by_role("button", name="Publish release").click()
    job_done(page, 2)
    page.locator("#job-release").click()

    # The release page draws the curve with the moved point, labelled, and the calibrated one.
    expect(page.locator("#ask-threshold-value")).to_have_text(f"{moved:.2f}")
    expect(page.locator("#ask-threshold-source")).to_contain_text("A curator set it")
    point = page.locator("#ask-operating-point")
    expect(point).to_have_attribute("data-threshold", str(moved))
    expect(point).to_contain_text(f"in force {moved:.2f} (curator)")
    expect(page.locator("#ask-calibrated-point")).to_contain_text(f"calibrated {calibrated['value']:.2f}")
    expect(page.locator("#ask-curve-title")).to_contain_text("against the ask threshold")
    expect(page.locator("#ask-operating-figures")).to_contain_text(f"At the threshold in force ({moved:.2f}")
    expect(page.locator("#ask-curve polyline.ask-series")).to_have_count(2)
    screenshot("ask-threshold-curve")
    v2 = Release.objects.get(project=demo, version=2)
    assert (v2.ask_threshold["value"], v2.ask_threshold["source"]) == (moved, "curator")
    assert ui.external_requests == []
