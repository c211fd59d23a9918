"""Playwright (sync API) against pytest-django's live server, in the Debian Chromium.

Nothing is downloaded: the browser is ``/usr/bin/chromium`` and every request that does not go to
the live server is aborted (and recorded, so a test can assert the UI fetched nothing from outside).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

# Playwright's sync API runs an event loop in the main thread; the ORM calls of the fixtures and of
# the DB assertions run there too, which Django would otherwise refuse as "async unsafe".
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
PASSWORD = "pw-Secret-123"


def demo_published(**people: str) -> Any:
    """The demo pack imported and published, with ``people`` (username → platform role) as members
    who sign in with ``PASSWORD``."""
    from ontology.releases import release_publish
    from taxonomy.packs import pack_import, pack_read
    from tests.review.queue_fixtures import DEMO_PACK, member

    project = pack_import(pack_read(DEMO_PACK)).project
    for username, role in people.items():
        member(username, role, project, password=PASSWORD)
    release_publish(project=project, actor=None)
    return project


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@dataclass
class BrowserPage:
    """A page plus the requests that tried to leave the live server and what the page's
    Content-Security-Policy refused (every browser test ends by asserting it refused nothing)."""

    page: Any
    external_requests: list[str]
    csp_violations: list[str]


@pytest.fixture
def ui(browser: Any, live_server: Any) -> Iterator[BrowserPage]:
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    external: list[str] = []

    def only_live_server(route: Any) -> None:
        if route.request.url.startswith(live_server.url):
            route.continue_()
        else:
            external.append(route.request.url)
            route.abort()

    context.route("**/*", only_live_server)
    page = context.new_page()
    page.set_default_timeout(15_000)
    refused: list[str] = []
    page.on(
        "console",
        lambda message: refused.append(message.text) if "Content Security Policy" in message.text else None,
    )
    yield BrowserPage(page, external, refused)
    context.close()
    assert refused == [], "the page's Content-Security-Policy refused something it does"


@pytest.fixture
def screenshot(ui: BrowserPage) -> Callable[[str], None]:
    """Save ``/tmp/ui-<name>.png`` (full page) when ``ARG_UI_SCREENSHOTS`` is set, to look at the layout."""

    def take(name: str) -> None:
        if os.environ.get("ARG_UI_SCREENSHOTS"):
            ui.page.screenshot(path=f"/tmp/ui-{name}.png", full_page=True)

    return take


@pytest.fixture
def login(ui: BrowserPage, live_server: Any) -> Callable[[str], None]:
    """Sign in through the login form, as a person would."""

    def sign_in(username: str) -> None:
        page = ui.page
        page.goto(f"{live_server.url}/accounts/login/")
        page.get_by_label("Username").fill(username)
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(f"{live_server.url}/")

    return sign_in


@dataclass
class Seed:
    project: Any
    billing: Any
    accounts: Any
    invoices: Any
    refunds: Any
    late_fees: Any
    login_help: Any


@pytest.fixture
def seed(project: Any, expert: Any, reviewer: Any) -> Seed:
    """A small taxonomy of project "acme", written through the services like any other write."""
    from taxonomy import services

    billing = services.cluster_create(project=project, actor=expert, key="billing", name="Billing & payments")
    accounts = services.cluster_create(
        project=project, actor=expert, key="accounts", name="Accounts & access"
    )
    invoices = services.label_create(
        project=project,
        actor=expert,
        name="Invoices",
        cluster_key="billing",
        description="Finding, downloading and understanding invoices.",
        examples=["where is my invoice"],
    )
    refunds = services.label_create(
        project=project,
        actor=expert,
        name="Refunds",
        cluster_key="billing",
        description="Asking for money back.",
    )
    late_fees = services.label_create(
        project=project,
        actor=expert,
        name="Late fees",
        cluster_key="billing",
        parent_id=invoices.label_id,
        synonyms=["penalty"],
    )
    login_help = services.label_create(
        project=project, actor=expert, name="Sign-in problems", cluster_key="accounts", status="SHADOW"
    )
    return Seed(project, billing, accounts, invoices, refunds, late_fees, login_help)


JOB_TIMEOUT = 180_000  # a publication job: the worker loads the embedding model on its first one


@pytest.fixture
def worker() -> Iterator[Any]:
    """A real Celery worker (embedded filesystem broker, the live server's test database): it runs the
    jobs the browser queues (publishing, applying approved proposals), as on a fresh ``make run``."""
    from tests.celery_worker import celery_worker

    with celery_worker(pool="solo") as proc:
        yield proc


def job_done(page: Any, release: int) -> None:
    """On a job's page: the progress row polls until the job succeeded, then links to the release."""
    from playwright.sync_api import expect

    expect(page.locator("#job-status")).to_have_text("SUCCEEDED", timeout=JOB_TIMEOUT)
    expect(page.locator("#job-release")).to_have_text(f"Release v{release}")
