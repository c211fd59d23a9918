"""The trace viewer in the browser door (Django test client): try a prompt, read its decision path."""

from __future__ import annotations

import pytest

from inference.models import InferenceLog
from ontology.releases import release_publish
from taxonomy.packs import pack_import, pack_read
from tests.taxonomy.test_packs import SMALL

pytestmark = pytest.mark.django_db


@pytest.fixture
def tiny():
    project = pack_import(pack_read(SMALL)).project
    release_publish(project=project, actor=None)
    return project


def test_expert_tries_a_prompt_and_reads_its_trace(tiny, make_user, client):
    client.force_login(make_user("erin", "expert", tiny))
    resp = client.post("/p/tiny/traces/", {"prompt": "where do I download my invoice", "role": "customer"})
    assert resp.status_code == 302
    log = InferenceLog.objects.get(project=tiny)
    assert resp["Location"] == f"/p/tiny/traces/{log.request_id}/"
    page = client.get(resp["Location"]).content.decode()
    for section in (
        "step-policy",
        "step-lexical",
        "step-weaver",
        "step-landing",
        "step-path",
        "step-outcome",
        "step-timings",
    ):
        assert f'id="{section}"' in page
    assert "Download invoice" in page and "N-invoice-download" in page and "INFO" in page
    listing = client.get("/p/tiny/traces/?kind=INFO").content.decode()
    assert log.request_id in listing


def test_blocked_trace_shows_the_policy_reason(tiny, make_user, client):
    client.force_login(make_user("erin", "expert", tiny))
    client.post("/p/tiny/traces/", {"prompt": "you idiot", "role": "customer"})
    log = InferenceLog.objects.get(project=tiny)
    page = client.get(f"/p/tiny/traces/{log.request_id}/").content.decode()
    assert "BLOCK" in page and "blocked_term" in page and "REFUSE" in page


def test_reviewer_reads_but_cannot_route_and_outsiders_see_nothing(tiny, make_user, make_project, client):
    client.force_login(make_user("rob", "reviewer", tiny))
    assert client.get("/p/tiny/traces/").status_code == 200
    assert client.post("/p/tiny/traces/", {"prompt": "invoice"}).status_code == 403
    assert InferenceLog.objects.count() == 0
    other = make_project("other")
    client.force_login(make_user("mallory", "admin", other))
    assert client.get("/p/tiny/traces/").status_code == 404
