"""Packs and typology templates in the browser (Django test client)."""

from __future__ import annotations

import pytest
import yaml
from django.core.files.uploadedfile import SimpleUploadedFile

from taxonomy.models import ContextTypology, Label
from taxonomy.packs import pack_import, pack_read
from tests.taxonomy.test_packs import SMALL

pytestmark = pytest.mark.django_db


@pytest.fixture
def tiny():
    return pack_import(pack_read(SMALL)).project


def test_expert_downloads_and_uploads_a_pack(tiny, make_user, client):
    client.force_login(make_user("pat", "expert", tiny))
    page = client.get("/p/tiny/packs/")
    assert page.status_code == 200 and b"Import pack" in page.content
    resp = client.get("/p/tiny/packs/download/")
    assert resp["Content-Disposition"] == 'attachment; filename="tiny-pack.yaml"'
    data = yaml.safe_load(resp.content)
    data["labels"][1]["name"] = "Invoice PDF"
    upload = SimpleUploadedFile("tiny.yaml", yaml.safe_dump(data).encode())
    resp = client.post("/p/tiny/packs/", {"file": upload})
    assert resp.status_code == 302
    assert Label.objects.get(project=tiny, label_id="L00002").name == "Invoice PDF"


def test_a_refused_upload_lists_rules_and_locations_and_changes_nothing(tiny, make_user, client):
    client.force_login(make_user("pat", "expert", tiny))
    data = yaml.safe_load(client.get("/p/tiny/packs/download/").content)
    data["labels"][0]["parent"] = "L00002"
    data["labels"][1]["name"] = "Renamed"
    resp = client.post(
        "/p/tiny/packs/", {"file": SimpleUploadedFile("bad.yaml", yaml.safe_dump(data).encode())}
    )
    assert resp.status_code == 422
    html = resp.content.decode()
    assert "taxonomy.no_cycles" in html and "bad.yaml:" in html and "nothing was changed" in html
    assert Label.objects.get(project=tiny, label_id="L00002").name == "Download invoice"


def test_reviewer_downloads_but_cannot_upload(tiny, make_user, client):
    client.force_login(make_user("rae", "reviewer", tiny))
    assert client.get("/p/tiny/packs/download/").status_code == 200
    assert b"Import pack" not in client.get("/p/tiny/packs/").content
    upload = SimpleUploadedFile("x.yaml", b"format: arg-pack/1\n")
    assert client.post("/p/tiny/packs/", {"file": upload}).status_code == 403


def test_expert_copies_a_shared_typology_template(tiny, make_user, client):
    client.force_login(make_user("pat", "expert", tiny))
    page = client.get("/p/tiny/typologies/")
    assert b"Copy a shared template" in page.content and b"guided-troubleshooting" in page.content
    resp = client.post("/p/tiny/typologies/copy-template/", {"template": "guided-troubleshooting"})
    assert resp.status_code == 302 and resp["Location"] == "/p/tiny/typologies/guided-troubleshooting/"
    assert (
        ContextTypology.objects.get(project=tiny, key="guided-troubleshooting").response_style
        == "step_by_step"
    )
    again = client.post(
        "/p/tiny/typologies/copy-template/", {"template": "guided-troubleshooting"}, follow=True
    )
    assert b"typology.unique_key" in again.content
