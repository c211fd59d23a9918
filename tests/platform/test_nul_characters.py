"""A NUL character in a URL is a clear 400 on every database (on PostgreSQL it used to be a 500: its
text type cannot hold NUL, found by schemathesis on the PostgreSQL pass), and nothing else changes."""

from __future__ import annotations

import pytest

from ontology.releases import release_publish
from taxonomy.packs import pack_import, pack_read
from tests.taxonomy.test_packs import SMALL

pytestmark = pytest.mark.django_db
BASE = "/api/v1/projects/tiny/"


@pytest.fixture
def tiny():
    project = pack_import(pack_read(SMALL)).project
    release_publish(project=project, actor=None)
    return project


@pytest.mark.parametrize(
    "url,field",
    [
        (BASE + "nodes/?status=%00", "query_string"),  # the case schemathesis found
        (BASE + "nodes/?type=Action&search=a%00b", "query_string"),
        (BASE + "labels/L0%0001/", "path"),
        (BASE + "nodes/N-%00/neighbourhood/", "path"),
    ],
)
def test_the_api_refuses_a_nul_in_the_url_with_its_error_shape(tiny, token_client, url, field):
    resp = token_client(tiny).get(url)
    assert resp.status_code == 400
    body = resp.json()
    assert body["rules"] == ["request.nul_character"]
    assert field in body["errors"]
    assert body["request_id"] == resp["X-Request-ID"]


def test_a_web_page_refuses_it_with_a_page(tiny, make_user, client):
    client.force_login(make_user("ed", "expert", tiny))
    resp = client.get("/p/tiny/taxonomy/?q=%00")
    assert resp.status_code == 400
    assert resp["Content-Type"].startswith("text/html")
    assert b"NUL character" in resp.content
    assert client.get("/p/tiny/taxonomy/?q=invoice").status_code == 200


def test_urls_without_nul_are_untouched(tiny, token_client):
    client = token_client(tiny)
    assert client.get(BASE + "nodes/?type=Action").json()["count"] == 1
    assert client.get(BASE + "nodes/?search=%2500").status_code == 200  # "%00" as text, encoded once more
