"""The label page's "what would route here" panel (inference.views_preview): a label's examples and its
neighbours' are routed by the active release in dry run, and an example that lands on another label is
marked as a collision — on both labels' panels. Nothing is written by the preview."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from inference.models import InferenceLog
from tests.review.queue_fixtures import member

pytestmark = pytest.mark.django_db

SMALL_PACK = Path(__file__).resolve().parents[1] / "taxonomy" / "fixtures" / "small_pack.yaml"
ROW = re.compile(
    r'<tr class="preview-row( lands-elsewhere)?" data-source="(L\d+)" data-landed="(L\d*|)">\s*<td>([^<]*)</td>'
)


@pytest.fixture
def small(db: Any) -> Any:
    from ontology.releases import release_publish
    from taxonomy.packs import pack_import, pack_read

    project = pack_import(pack_read(SMALL_PACK)).project
    release_publish(project=project, actor=None)
    return project


def rows(html: str) -> list[tuple[bool, str, str, str]]:
    return [(bool(m[1]), m[2], m[3], m[4]) for m in ROW.finditer(html)]


def test_preview_routes_examples_with_the_active_release_and_marks_collisions(small, api_as):
    expert = api_as(member("erin-expert", "expert", small))
    preview_url = f"/p/{small.slug}/traces/label-preview/"

    # Before: "Download invoice" routes its own example to itself and collides with nothing.
    html = expert.get(preview_url + "L00002/").content.decode()
    assert "active release v1" in html
    before = rows(html)
    assert (False, "L00002", "L00002", "get invoice pdf") in before
    assert {source for _, source, _, _ in before} >= {"L00002", "L00001"}  # its neighbours' examples too
    assert not any(collides for collides, *_ in before)

    # When an expert confirms an example very close to one of "Download invoice",
    resp = expert.patch(
        f"/api/v1/projects/{small.slug}/labels/L00003/",
        {"examples": ["I cannot log in", "get the invoice pdf"], "accept_similar": True},
        format="json",
    )
    assert resp.status_code == 200, resp.content
    assert [w["label_id"] for w in resp.json()["warnings"]] == ["L00002"]

    # the preview of "Login problems" shows it landing on an invoice label: a collision,
    after = rows(expert.get(preview_url + "L00003/").content.decode())
    [moved] = [r for r in after if r[3] == "get the invoice pdf"]
    assert moved[0] is True and moved[1] == "L00003" and moved[2] in {"L00001", "L00002"}

    # and "Download invoice" lists the neighbour's example, a collision when it lands there.
    theirs = rows(expert.get(preview_url + "L00002/").content.decode())
    [row] = [r for r in theirs if r[1] == "L00003" and r[3] == "get the invoice pdf"]
    assert row[0] is (row[2] == "L00002")
    assert len(theirs) <= 12
    assert InferenceLog.objects.count() == 0  # dry run: no log row


def test_preview_of_an_unknown_label_is_404_and_readers_may_look(small, api_as):
    reviewer = api_as(member("rita-reviewer", "reviewer", small))
    assert reviewer.get(f"/p/{small.slug}/traces/label-preview/L09999/").status_code == 404
    assert reviewer.get(f"/p/{small.slug}/traces/label-preview/L00001/").status_code == 200
