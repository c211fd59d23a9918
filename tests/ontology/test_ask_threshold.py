"""The curator's ask threshold on the small pack: set on the Releases page (experts and admins only,
a value in [0, 1) or empty), logged, versioned with the next release, and read-only in the API."""

from __future__ import annotations

from typing import Any

import pytest

from arg_platform.models import AuditEvent
from ontology.ask_threshold import DEFAULT_THRESHOLD, ask_override_get, threshold_in_force
from ontology.models import Release
from ontology.releases import release_activate, release_get, release_publish
from taxonomy.packs import pack_import, pack_read
from tests.taxonomy.test_packs import SMALL

pytestmark = pytest.mark.django_db
PAGE = "/p/tiny/graph/releases/"
SET = PAGE + "ask-threshold/"
API = "/api/v1/projects/tiny/releases/"


@pytest.fixture
def tiny(make_user: Any) -> Any:
    project = pack_import(pack_read(SMALL)).project
    project.people = {role: make_user(f"{role}-1", role, project) for role in ("expert", "reviewer", "admin")}
    release_publish(project=project, actor=project.people["admin"])
    return project


def test_the_threshold_in_force_is_the_curators_else_the_calibrated_else_the_default():
    curve = [{"threshold": 0.0, "coverage": 1.0, "precision": 0.8}]
    calibrated = {"low_confidence": {"threshold": 0.3, "method": "cross_validation", "curve": curve}}
    assert threshold_in_force(calibrated) == {
        "value": 0.3,
        "source": "calibrated",
        "calibrated": 0.3,
        "curve": curve,
    }
    overridden = threshold_in_force({**calibrated, "ask_override": {"threshold": 0.45}})
    assert (overridden["value"], overridden["source"], overridden["calibrated"]) == (0.45, "curator", 0.3)
    small = threshold_in_force({"low_confidence": {"threshold": 0.2, "method": "default", "reason": "few"}})
    assert (small["value"], small["source"], small["calibrated"], small["curve"]) == (
        0.2,
        "default",
        None,
        [],
    )
    assert threshold_in_force({})["value"] == DEFAULT_THRESHOLD


def test_an_expert_sets_the_drafts_threshold_logged_and_frozen_by_the_next_release(tiny, client):
    expert, admin = tiny.people["expert"], tiny.people["admin"]
    revision = tiny.knowledge_revision
    client.force_login(expert)

    resp = client.post(SET, {"ask_threshold": "0.35"})

    assert resp.status_code == 302
    assert ask_override_get(project=tiny) == 0.35
    tiny.refresh_from_db()
    assert tiny.knowledge_revision == revision + 1  # the draft differs from the active release
    event = AuditEvent.objects.get(project=tiny, object_type="ask_threshold")
    assert (event.actor, event.before["value"], event.after["value"]) == (expert, None, 0.35)
    page = client.get(PAGE).content.decode()
    assert "The draft asks below <strong>0.35</strong>" in page
    assert '<strong id="ask-threshold-value">0.20</strong>' in page  # v1 still applies the default

    client.force_login(admin)  # the admin's publish page names the change
    review = client.get(PAGE + "publish/").content.decode()
    assert 'id="ask-threshold-change"' in review and "0.20 (default) → <strong>0.35</strong>" in review
    client.force_login(expert)
    v1 = release_get(project=tiny, version=1)
    assert v1.ask_threshold["value"] == DEFAULT_THRESHOLD and v1.ask_threshold["source"] == "default"
    v2 = release_publish(project=tiny, actor=admin)
    assert v2.version == 2  # the override alone is a change to publish
    assert (v2.ask_threshold["value"], v2.ask_threshold["source"]) == (0.35, "curator")
    page = client.get(PAGE).content.decode()
    assert '<strong id="ask-threshold-value">0.35</strong>' in page and "A curator set it" in page

    # clearing it (empty) goes back to the calibrated threshold at the next publication
    assert client.post(SET, {"ask_threshold": ""}).status_code == 302
    assert ask_override_get(project=tiny) is None
    assert release_publish(project=tiny, actor=admin).ask_threshold["source"] == "default"
    assert AuditEvent.objects.filter(project=tiny, object_type="ask_threshold").count() == 2


@pytest.mark.parametrize("value", ["1", "1.5", "-0.1", "abc", "nan"])
def test_a_threshold_outside_0_to_1_is_refused_on_its_field_and_changes_nothing(tiny, client, value):
    client.force_login(tiny.people["admin"])
    client.post(SET, {"ask_threshold": "0.3"})

    resp = client.post(SET, {"ask_threshold": value})

    assert resp.status_code == 422
    body = resp.content.decode()
    assert "from 0 up to (not including) 1" in body and 'id="id_ask_threshold_error"' in body
    assert ask_override_get(project=tiny) == 0.3
    assert AuditEvent.objects.filter(project=tiny, object_type="ask_threshold").count() == 1


def test_a_reviewer_cannot_set_the_threshold(tiny, client):
    client.force_login(tiny.people["reviewer"])

    assert client.post(SET, {"ask_threshold": "0.4"}).status_code == 403
    assert ask_override_get(project=tiny) is None
    assert 'id="ask-threshold-draft"' not in client.get(PAGE).content.decode()  # no form to fill


def test_the_api_shows_each_releases_threshold_read_only_and_a_rollback_restores_it(
    tiny, client, api_as, token_client
):
    from ontology.ask_threshold import ask_threshold_set

    admin = tiny.people["admin"]
    ask_threshold_set(project=tiny, actor=admin, value=0.5)
    release_publish(project=tiny, actor=admin)
    api = api_as(admin)

    listed = {r["version"]: r["ask_threshold"] for r in api.get(API).json()}
    assert listed[1] == {"value": DEFAULT_THRESHOLD, "source": "default", "calibrated": None, "curve": []}
    assert listed[2]["value"] == 0.5 and listed[2]["source"] == "curator"
    reader = token_client(tiny)
    assert reader.get(API + "2/").json()["ask_threshold"]["value"] == 0.5

    for method in ("put", "patch"):
        resp = getattr(api, method)(API + "2/", {"ask_threshold": {"value": 0.9}}, format="json")
        assert resp.status_code == 405
    assert api.post(API + "2/", {"ask_threshold": {"value": 0.9}}, format="json").status_code == 405
    assert Release.objects.get(project=tiny, version=2).ask_threshold["value"] == 0.5

    release_activate(release=release_get(project=tiny, version=1), actor=admin)
    client.force_login(admin)
    assert '<strong id="ask-threshold-value">0.20</strong>' in client.get(PAGE).content.decode()


def test_a_release_stored_before_releases_recorded_it_is_read_from_its_bundle(tiny, api_as):
    Release.objects.filter(project=tiny, version=1).update(ask_threshold={})

    body = api_as(tiny.people["admin"]).get(API + "1/").json()

    assert (
        body["ask_threshold"]["value"] == DEFAULT_THRESHOLD and body["ask_threshold"]["source"] == "default"
    )
