"""The memory UI: browser with filters, item and InfoUnit pages, the UNSURE staging list resolved by a
reviewer (not by an expert, not across projects), promotion refused on weak signals."""

from __future__ import annotations

from typing import Any

import pytest

from memory import services
from memory.models import InfoUnit, RegistryAttempt

pytestmark = pytest.mark.django_db

GREY_A = "The customer wants maintenance windows on Sunday nights."
GREY_B = "Schedule this customer's maintenance for Sunday night."


@pytest.fixture
def staged(mem: Any) -> RegistryAttempt:
    common = {"scope": "USER", "user_id": "u-1", "label_ids": ["L00001"], "info_type": "UserPreference"}
    services.memory_write(project=mem, text=GREY_A, session_id="s-1", **common)
    services.memory_write(
        project=mem, text="Invoices go to the finance manager, Jane Doe.", session_id="s-1", **common
    )
    return services.memory_write(project=mem, text=GREY_B, session_id="s-2", **common).registry.attempt


def test_the_browser_lists_and_filters_memories(client, mem, staged, make_user):
    client.force_login(make_user("viv", "reviewer", mem))
    services.memory_write(project=mem, text="Our fiscal year starts in April.", scope="ORG", org_id="o-1")

    page = client.get("/p/mem/memory/")
    orgs = client.get("/p/mem/memory/?org_id=o-1")
    flagged = client.get("/p/mem/memory/?flag=MISSING_LABEL_CANDIDATE")

    assert page.status_code == 200
    html = page.content.decode()
    assert "Schedule this customer" in html and "Invoices go to the finance manager, &lt;PERSON&gt;." in html
    assert 'id="staging-count">1<' in html
    assert "fiscal year" in orgs.content.decode() and "Sunday" not in orgs.content.decode()
    assert "fiscal year" in flagged.content.decode() and "Sunday" not in flagged.content.decode()


def test_infounit_and_item_pages_show_evidence_history_and_edges(client, mem, staged, make_user):
    client.force_login(make_user("viv", "reviewer", mem))
    unit = InfoUnit.objects.order_by("id").first()

    unit_page = client.get(f"/p/mem/memory/units/{unit.pk}/").content.decode()
    item_page = client.get(f"/p/mem/memory/items/{staged.episode_id}/").content.decode()
    units = client.get("/p/mem/memory/units/?label=L00001").content.decode()

    assert unit.info_key.key in unit_page and "Billing › Invoices" in unit_page
    assert "CREATED" in unit_page and "EVIDENCE" in unit_page
    assert "UNSURE" in item_page and "edited:" in item_page
    assert "TEMPORAL" not in item_page or "CATEGORICAL" in item_page
    assert f"#{unit.pk}" in units


def test_a_reviewer_resolves_an_unsure_item(client, mem, staged, make_user):
    reviewer = make_user("viv", "reviewer", mem)
    client.force_login(reviewer)

    resp = client.post(
        f"/p/mem/memory/staging/{staged.pk}/resolve/", {"decision": "SAME", "reason": "same window"}
    )

    assert resp.status_code == 302 and resp["Location"] == "/p/mem/memory/staging/"
    staged.refresh_from_db()
    assert (staged.review_status, staged.resolved_by, staged.resolution_reason) == (
        "SAME",
        reviewer,
        "same window",
    )
    follow = client.get("/p/mem/memory/staging/").content.decode()
    assert "Nothing waits for review." in follow
    again = client.post(f"/p/mem/memory/staging/{staged.pk}/resolve/", {"decision": "DIFFERENT"})
    assert again.status_code == 422 and "memory.review_state" in again.content.decode()


def test_an_expert_may_read_but_not_resolve(client, mem, staged, make_user):
    client.force_login(make_user("erin", "expert", mem))

    assert client.get("/p/mem/memory/staging/").status_code == 200
    assert client.post(f"/p/mem/memory/staging/{staged.pk}/resolve/", {"decision": "SAME"}).status_code == 403
    staged.refresh_from_db()
    assert staged.review_status == "PENDING"


def test_other_projects_cannot_see_or_resolve(client, mem, staged, make_user, make_project):
    client.force_login(make_user("mallory", "admin", make_project("globex")))

    assert client.get("/p/mem/memory/").status_code == 404
    assert client.post(f"/p/mem/memory/staging/{staged.pk}/resolve/", {"decision": "SAME"}).status_code == 404
    assert (
        client.post(f"/p/globex/memory/staging/{staged.pk}/resolve/", {"decision": "SAME"}).status_code == 404
    )
    staged.refresh_from_db()
    assert staged.review_status == "PENDING"


def test_promotion_on_weak_signals_is_refused_on_the_page(client, mem, staged, make_user):
    client.force_login(make_user("viv", "reviewer", mem))
    unit = InfoUnit.objects.order_by("id").first()

    resp = client.post(f"/p/mem/memory/units/{unit.pk}/promote/", {"reason": "looks right"})

    assert resp.status_code == 422
    assert "memory.weak_signals_only" in resp.content.decode()
    assert InfoUnit.objects.get(pk=unit.pk).status == "ACTIVE"
