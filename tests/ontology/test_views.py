"""Graph UI (Django test client): node list and page, picture, expert edits of the draft, releases.

Pages answer every member, 404 outsiders; writes need CURATE (403 for reviewers), publishing and
activating need PUBLISH (403 for experts); a refusal shows its rule in place (422) and writes nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import unescape
from typing import Any

import pytest
from django.test import Client

from arg_platform.models import AuditEvent
from ontology import services
from ontology.graph_read import Neighbourhood
from ontology.models import Release
from ontology.releases import release_publish
from ontology.store import get_graph_store
from ontology.store.port import EdgeData, NodeData, ParameterSpec
from ontology.views.picture import picture_layout, picture_select
from taxonomy.models import Label
from taxonomy.packs import pack_import, pack_read
from tests.taxonomy.test_packs import SMALL

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
BASE = "/p/tiny/graph/"
NODE = BASE + "nodes/N-resend-invoice/"


@dataclass
class World:
    project: Any
    expert: Any
    reviewer: Any
    admin: Any
    outsider: Any


@pytest.fixture
def world(make_user: Any, make_project: Any) -> World:
    """Project "tiny" (3 nodes, 1 edge) plus a second edge, so depth 2 reaches further than depth 1."""
    project = pack_import(pack_read(SMALL)).project
    expert = make_user("erin", "expert", project)
    services.edge_add(
        project=project,
        actor=expert,
        edge=EdgeData("N-resend-invoice", "N-oos", "RELATED_TO", 0.2, "not a billing question"),
    )
    return World(
        project=project,
        expert=expert,
        reviewer=make_user("rob", "reviewer", project),
        admin=make_user("ada", "admin", project),
        outsider=make_user("mallory", "admin", make_project("globex")),
    )


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _node(project: Any, node_id: str) -> NodeData:
    node = get_graph_store().get_node(project.pk, node_id)
    assert node is not None, node_id
    return node


def _edges(project: Any, type: str) -> list[EdgeData]:
    return [e for e in get_graph_store().export_graph(project.pk).edges if e.type == type]


def _state(project: Any) -> tuple:
    """What a refused or forbidden write must leave untouched."""
    graph = get_graph_store().export_graph(project.pk)  # the draft, on whichever backend is configured
    nodes, edges = graph.nodes, graph.edges
    releases = tuple(
        Release.objects.filter(project=project).order_by("version").values_list("version", "is_active")
    )
    return nodes, edges, releases, AuditEvent.objects.filter(project=project).count()


def _text(html: str) -> str:
    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))).strip()


def _errors_of(html: str, field_id: str) -> str:
    match = re.search(rf'<div class="errors" id="{re.escape(field_id)}_error">(.*?)</div>', html, re.S)
    assert match, f"no errors next to #{field_id}"
    return _text(match.group(1))


def _form_errors(html: str) -> str:
    match = re.search(r'<div class="form-errors" role="alert">(.*?)</div>\s*</div>', html, re.S)
    assert match, "no form-level errors"
    return _text(match.group(1))


def _circles(html: str) -> int:
    return len(re.findall(r'<circle class="gnode-dot"', html))


def _pages() -> list[str]:
    return [
        BASE,
        BASE + "?type=Action&search=resend",
        BASE + "?source=release",
        BASE + "?status=ACTIVE&label=L00002&page=2",
        BASE + "new/",
        NODE,
        NODE + "?depth=2",
        NODE + "?source=release",
        BASE + "releases/",
        BASE + "releases/1/diff/",
    ]


def test_every_page_answers_each_member_and_hides_from_outsiders(world):
    release_publish(project=world.project, actor=world.admin)
    for user in (world.expert, world.reviewer, world.admin):
        client = _client(user)
        for url in _pages():
            expected = 403 if user == world.reviewer and url == BASE + "new/" else 200  # an edit page
            assert client.get(url).status_code == expected, (user.username, url)
        htmx = client.get(NODE + "picture/?depth=2", **HTMX)
        assert htmx.status_code == 200
        assert 'id="graph-picture"' in htmx.content.decode()
    outsider = _client(world.outsider)
    for url in [*_pages(), NODE + "picture/", NODE + "edges/targets/?edge-other=inv"]:
        assert outsider.get(url).status_code == 404, url
    assert Client().get(NODE).status_code == 302  # anonymous: to the login page


def test_unknown_node_or_release_is_404(world):
    client = _client(world.expert)
    assert client.get(BASE + "nodes/N-nope/").status_code == 404
    assert client.get(BASE + "releases/7/diff/").status_code == 404
    assert client.get(NODE + "?source=release").status_code == 200  # no release yet: the draft is shown


def test_node_list_filters_counts_per_type_and_draft_banner(world):
    client = _client(world.expert)
    html = client.get(BASE).content.decode()
    assert "3 nodes in the draft" in _text(html)
    assert "No active release." in html
    chips = dict(re.findall(r'type-chip nt-(\w+)[^"]*".*?<span class="count">(\d+)</span>', html, re.S))
    assert (chips["action"], chips["info"], chips["outofscope"], chips["decision"]) == ("1", "1", "1", "0")

    region = client.get(BASE + "?type=Action", HTTP_HX_TARGET="node-region", **HTMX).content.decode()
    assert region.lstrip().startswith('<section id="node-region"')
    assert "N-resend-invoice" in region and "N-invoice-download" not in region
    assert "1 node in the draft matching the filters" in _text(region)
    assert "N-oos" not in client.get(BASE + "?label=L00002").content.decode()

    release_publish(project=world.project, actor=world.admin)
    assert "The draft matches the active release v1" in client.get(BASE).content.decode()
    services.node_update(
        project=world.project, actor=world.expert, node_id="N-oos", changes={"title": "Other topics"}
    )
    html = client.get(BASE).content.decode()
    assert "The draft differs from the active release v1" in html
    released = client.get(BASE + "?source=release").content.decode()
    assert "3 nodes in the active release v1" in _text(released)
    assert "Other topics" in html and "Other topics" not in released


def test_node_page_shows_the_node_its_neighbours_picture_and_history(world):
    html = _client(world.reviewer).get(NODE).content.decode()
    assert "Resend an invoice" in html
    assert 'href="/p/tiny/taxonomy/labels/L00002/"' in html
    assert "python:billing.resend_invoice" in html
    assert "account has a billing email" in html
    assert "invoice_number" in html and "The invoice number" in html
    outgoing = re.search(r'<table class="table edge-table" id="outgoing-edges">(.*?)</table>', html, re.S)
    incoming = re.search(r'<table class="table edge-table" id="incoming-edges">(.*?)</table>', html, re.S)
    assert outgoing and "RELATED_TO" in outgoing.group(1) and "not a billing question" in outgoing.group(1)
    assert incoming and "LEADS_TO" in incoming.group(1) and "N-invoice-download" in incoming.group(1)
    # the picture: the centre and its two neighbours, links to their pages, edge types on hover
    assert _circles(html) == 3
    assert 'href="/p/tiny/graph/nodes/N-oos/"' in html
    assert "<title>RELATED_TO · weight 0.2" in html
    assert "1 hop" in html and "2 hops" in html
    # history: the edge added in the fixture, seen from both of its ends
    assert "not a billing question" in _text(
        re.search(r'id="node-history".*?</section>', html, re.S).group(0)
    )
    other_end = _client(world.reviewer).get(BASE + "nodes/N-oos/").content.decode()
    assert 'id="node-history"' in other_end and ">N-resend-invoice</a>" in other_end


def test_depth_two_reaches_further_and_the_fragment_is_the_picture_only(world):
    client = _client(world.expert)
    download = BASE + "nodes/N-invoice-download/"
    assert _circles(client.get(download).content.decode()) == 2
    fragment = client.get(download + "picture/?depth=2", **HTMX).content.decode()
    assert fragment.lstrip().startswith('<section class="card graph-card" id="graph-picture"')
    assert _circles(fragment) == 3
    assert "3 nodes · 2 edges within 2 hops" in _text(fragment)
    plain = client.get(download + "picture/?depth=2")
    assert (plain.status_code, plain["Location"]) == (302, download + "?depth=2")


def test_expert_creates_a_node_and_a_refusal_writes_nothing(world):
    client = _client(world.expert)
    before = _state(world.project)
    refused = client.post(
        BASE + "new/",
        {"node_id": "N-refund", "title": "Refund", "type": "Info", "risk": "low", "labels": "L00002, L09999"},
        **HTMX,
    )
    assert refused.status_code == 422
    html = refused.content.decode()
    assert "graph.attach_label_exists" in _errors_of(html, "id_labels")
    assert "L09999 does not exist" in _errors_of(html, "id_labels")
    assert _state(world.project) == before

    created = client.post(
        BASE + "new/",
        {
            "node_id": "N-refund",
            "title": "Refund an invoice",
            "type": "Action",
            "risk": "high",
            "chunk": "Refunds the amount.",
            "labels": "L00002",
            "clusters": "billing",
            "parameters": "invoice_number:string:true:The invoice\nreason:string:false:",
            "handler": "python:billing.refund",
        },
        **HTMX,
    )
    assert (created.status_code, created["HX-Redirect"]) == (200, BASE + "nodes/N-refund/")
    node = _node(world.project, "N-refund")
    assert (node.type, node.risk, node.handler) == ("Action", "high", "python:billing.refund")
    assert node.parameters == (
        ParameterSpec("invoice_number", "string", True, "The invoice"),
        ParameterSpec("reason", "string", False, ""),
    )
    assert AuditEvent.objects.filter(object_type="node", object_key="N-refund", action="create").count() == 1


def test_expert_edits_a_node_and_an_action_without_handler_is_refused(world):
    client = _client(world.expert)
    before = _state(world.project)
    fields = {
        "title": "Resend an invoice",
        "type": "Action",
        "risk": "medium",
        "chunk": "Sends it again.",
        "labels": "L00002",
        "clusters": "billing",
        "preconditions": "account has a billing email",
        "parameters": "invoice_number:string:true:The invoice number",
        "handler": "",
    }
    refused = client.post(NODE + "edit/", fields, **HTMX)
    assert refused.status_code == 422
    assert "graph.action_fields" in _errors_of(refused.content.decode(), "id_handler")
    assert _state(world.project) == before

    saved = client.post(NODE + "edit/", {**fields, "handler": "python:billing.resend_v2"}, **HTMX)
    assert saved.status_code == 200
    assert saved.content.decode().lstrip().startswith('<div id="node-body"')
    node = _node(world.project, "N-resend-invoice")
    assert (node.risk, node.chunk, node.handler) == ("medium", "Sends it again.", "python:billing.resend_v2")
    event = AuditEvent.objects.get(object_type="node", object_key="N-resend-invoice", action="update")
    assert event.after == {
        "chunk": "Sends it again.",
        "risk": "medium",
        "handler": "python:billing.resend_v2",
    }

    bad_params = client.post(NODE + "edit/", {**fields, "parameters": "invoice_number:string:maybe"}, **HTMX)
    assert bad_params.status_code == 422
    assert "name:type:required:description" in _errors_of(bad_params.content.decode(), "id_parameters")


def test_lifecycle_moves_need_reasons_and_an_edgeless_node_to_remove(world):
    client = _client(world.expert)
    before = _state(world.project)
    no_reason = client.post(NODE + "status/", {"status-status": "DEPRECATED", "status-reason": ""}, **HTMX)
    assert no_reason.status_code == 422
    assert "graph.status_reason" in _errors_of(no_reason.content.decode(), "id_status-reason")
    assert _state(world.project) == before

    assert (
        client.post(NODE + "status/", {"status-status": "DEPRECATED", "status-reason": "v2"}).status_code
        == 302
    )
    node = _node(world.project, "N-resend-invoice")
    assert (node.status, node.status_reason) == ("DEPRECATED", "v2")

    before = _state(world.project)
    with_edges = client.post(NODE + "status/", {"status-status": "REMOVED", "status-reason": "gone"}, **HTMX)
    assert with_edges.status_code == 422
    assert "graph.edge_endpoint_removed" in _errors_of(with_edges.content.decode(), "id_status-status")
    assert _state(world.project) == before


def test_expert_adds_changes_and_removes_edges_in_place(world):
    client = _client(world.expert)
    added = client.post(
        NODE + "edges/add/",
        {
            "edge-direction": "in",
            "edge-other": "N-oos",
            "edge-type": "ESCALATES_TO",
            "edge-weight": "0.4",
            "edge-semantics": "off topic",
        },
        HTTP_HX_CURRENT_URL="http://testserver" + NODE + "?depth=2",
        **HTMX,
    )
    assert added.status_code == 200
    html = added.content.decode()
    assert "within 2 hops" in _text(html)  # the picture keeps the depth the expert was looking at
    assert html.lstrip().startswith('<section class="card" id="edges-section"')
    assert 'id="graph-picture" aria-labelledby="picture-h" hx-swap-oob="true"' in html
    assert 'id="node-history" aria-labelledby="node-history-h" hx-swap-oob="true"' in html
    assert [e.key for e in _edges(world.project, "ESCALATES_TO")] == [
        ("N-oos", "N-resend-invoice", "ESCALATES_TO")
    ]

    key = {"source": "N-oos", "target": "N-resend-invoice", "type": "ESCALATES_TO"}
    updated = client.post(
        NODE + "edges/update/", {**key, "row": "0", "weight": "-0.5", "semantics": "inhibits"}, **HTMX
    )
    assert updated.status_code == 200
    [edge] = _edges(world.project, "ESCALATES_TO")
    assert (edge.source, edge.weight, edge.semantics) == ("N-oos", -0.5, "inhibits")

    before = _state(world.project)
    too_heavy = client.post(
        NODE + "edges/update/", {**key, "row": "0", "weight": "3", "semantics": ""}, **HTMX
    )
    assert too_heavy.status_code == 422
    assert "graph.edge_weight" in _errors_of(too_heavy.content.decode(), "in-0-weight")
    assert _state(world.project) == before

    removed = client.post(NODE + "edges/remove/", key, **HTMX)
    assert removed.status_code == 200
    assert _edges(world.project, "ESCALATES_TO") == []
    assert (
        AuditEvent.objects.filter(
            object_type="edge", object_key="N-oos|N-resend-invoice|ESCALATES_TO"
        ).count()
        == 3
    )
    assert client.post(NODE + "edges/remove/", key, **HTMX).status_code == 404
    assert (
        client.post(
            NODE + "edges/remove/", {**key, "source": "N-oos", "target": "N-invoice-download"}
        ).status_code
        == 404
    )


@pytest.mark.parametrize(
    ("other", "edge_type", "weight", "rule", "field"),
    [
        ("N-resend-invoice", "LEADS_TO", "1", "graph.self_loop", "id_edge-other"),
        ("N-nowhere", "LEADS_TO", "1", "graph.edge_endpoint_exists", "id_edge-other"),
        ("N-oos", "RELATED_TO", "0.5", "graph.edge_unique", "id_edge-type"),
        ("N-invoice-download", "LEADS_TO", "1.5", "graph.edge_weight", "id_edge-weight"),
    ],
)
def test_edge_refusals_are_shown_in_place_and_write_nothing(world, other, edge_type, weight, rule, field):
    client = _client(world.expert)
    before = _state(world.project)
    resp = client.post(
        NODE + "edges/add/",
        {"edge-direction": "out", "edge-other": other, "edge-type": edge_type, "edge-weight": weight},
        **HTMX,
    )
    assert resp.status_code == 422
    html = resp.content.decode()
    assert rule in _errors_of(html, field)
    assert 'id="graph-picture"' not in html and 'id="node-history"' not in html
    assert _state(world.project) == before


def test_target_suggestions_leave_out_the_node_itself(world):
    html = _client(world.expert).get(NODE + "edges/targets/?edge-other=invoice", **HTMX).content.decode()
    assert html.startswith('<datalist id="edge-other-options">')
    assert re.findall(r'<option value="([^"]+)"', html) == ["N-invoice-download"]


def test_a_late_suggestion_answer_leaves_the_flash_of_an_edge_just_added_alone(world):
    """Suggestions are fetched while the expert types; one answered after the add-edge post must not
    carry an (empty) out-of-band flash area that would wipe the post's "Edge … added" message."""
    client = _client(world.expert)
    added = client.post(
        NODE + "edges/add/",
        {"edge-direction": "out", "edge-other": "N-oos", "edge-type": "ESCALATES_TO", "edge-weight": "0.3"},
        **HTMX,
    ).content.decode()
    late = client.get(NODE + "edges/targets/?edge-other=N-oos", **HTMX).content.decode()
    assert 'id="messages"' in added and "Edge ESCALATES_TO added to the draft." in added
    assert 'id="messages"' not in late and "hx-swap-oob" not in late


def test_reviewers_see_no_edit_controls_and_their_posts_are_refused(world):
    client = _client(world.reviewer)
    for url in (BASE, NODE, BASE + "releases/"):
        html = client.get(url).content.decode()
        forms = re.findall(r'<form[^>]*method="post"[^>]*>', html)
        assert [f for f in forms if 'class="logout"' not in f] == [], url
        assert "Add edge" not in html and "New node" not in html and "Publish release" not in html
    release_publish(project=world.project, actor=world.admin)
    before = _state(world.project)
    posts = {
        BASE + "new/": {"node_id": "N-x", "title": "X", "type": "Info", "risk": "low"},
        NODE + "edit/": {"title": "pwned", "type": "Info", "risk": "low"},
        NODE + "status/": {"status-status": "DEPRECATED", "status-reason": "x"},
        NODE + "edges/add/": {
            "edge-direction": "out",
            "edge-other": "N-oos",
            "edge-type": "LEADS_TO",
            "edge-weight": "1",
        },
        NODE + "edges/update/": {
            "source": "N-resend-invoice",
            "target": "N-oos",
            "type": "RELATED_TO",
            "weight": "1",
        },
        NODE + "edges/remove/": {"source": "N-resend-invoice", "target": "N-oos", "type": "RELATED_TO"},
        BASE + "releases/publish/": {"notes": "x"},
        BASE + "releases/1/activate/": {"reason": "x"},
    }
    for url, data in posts.items():
        assert client.post(url, data, **HTMX).status_code == 403, url
    assert _state(world.project) == before


def test_experts_may_not_publish_or_activate(world):
    release_publish(project=world.project, actor=world.admin)
    client = _client(world.expert)
    html = client.get(BASE + "releases/").content.decode()
    assert "Publish release" not in html and "Roll back" not in html
    before = _state(world.project)
    assert client.post(BASE + "releases/publish/", {"notes": "mine"}).status_code == 403
    assert client.post(BASE + "releases/1/activate/", {"reason": "x"}).status_code == 403
    assert _state(world.project) == before


def _job_page(client, response) -> str:
    """The job page a publication (or an htmx one's ``HX-Redirect``) leads to, as the admin sees it."""
    url = response.headers.get("HX-Redirect") or response.headers["Location"]
    assert re.fullmatch(r"/p/tiny/jobs/\d+/", url), url
    page = client.get(url)
    assert page.status_code == 200
    return page.content.decode()


def test_admin_publishes_rolls_back_and_compares_releases_through_the_ui(world, run_jobs):
    client = _client(world.admin)
    with run_jobs():
        first = client.post(BASE + "releases/publish/", {"notes": "first cut"}, **HTMX)
    assert first.status_code == 200
    job = _job_page(client, first)
    assert re.search(r'id="job-status">SUCCEEDED<', job)
    assert 'href="/p/tiny/graph/releases/#release-v1"' in job
    assert "release v1 published and active" in job
    services.edge_add(
        project=world.project,
        actor=world.expert,
        edge=EdgeData("N-invoice-download", "N-oos", "ESCALATES_TO", 0.1),
    )
    services.edge_update(
        project=world.project,
        actor=world.expert,
        source="N-invoice-download",
        target="N-resend-invoice",
        type="LEADS_TO",
        weight=0.9,
        semantics="",
    )
    assert "The draft differs from the active release v1" in client.get(BASE + "releases/").content.decode()
    with run_jobs():
        assert client.post(BASE + "releases/publish/", {"notes": "more escalations"}).status_code == 302
    assert list(
        Release.objects.filter(project=world.project, is_active=True).values_list("version", flat=True)
    ) == [2]

    html = client.get(BASE + "releases/").content.decode()
    assert re.search(r'id="release-v2"[^>]*>.*?ACTIVE', html, re.S)
    assert "Roll back to v1" in html and "more escalations" in html and "first cut" in html
    rolled = client.post(BASE + "releases/1/activate/", {"reason": "bad escalation"}, **HTMX)
    assert rolled.status_code == 200
    assert "Rolled back from v2 to v1: v1 is active." in rolled.content.decode()
    assert list(
        Release.objects.filter(project=world.project, is_active=True).values_list("version", flat=True)
    ) == [1]
    assert re.search(r'id="release-v1"[^>]*>.*?ACTIVE', rolled.content.decode(), re.S)
    assert AuditEvent.objects.get(object_type="release", action="activate").reason == "bad escalation"

    diff = _text(client.get(BASE + "releases/2/diff/?against=1").content.decode())
    assert "v1 → v2" in diff
    assert "1 edge added 1 edge reweighted" in diff
    assert "N-invoice-download ESCALATES_TO → N-oos" in diff
    assert "N-invoice-download LEADS_TO → N-resend-invoice 0.7 → 0.9" in diff
    reversed_diff = _text(client.get(BASE + "releases/1/diff/?against=2").content.decode())
    assert "v1 → v2" in reversed_diff


def test_publishing_an_invalid_draft_shows_the_rules_and_creates_nothing(world, run_jobs):
    client = _client(world.admin)
    # a draft can only become invalid behind the services' back (e.g. a raw SQL fix-up)
    Label.objects.filter(project=world.project, label_id="L00002").update(status="DEPRECATED")
    before = _state(world.project)
    with run_jobs():
        resp = client.post(BASE + "releases/publish/", {"notes": "broken"})
    assert resp.status_code == 302
    job = _job_page(client, resp)
    assert re.search(r'id="job-status">FAILED<', job)
    error = _text(job.split('id="job-error"')[1])
    assert "graph.attach_label_deprecated" in error and "Nothing was changed" in error
    assert _state(world.project) == before and not Release.objects.filter(project=world.project).exists()


def test_the_admin_reviews_the_draft_diff_and_publishes_exactly_what_was_shown(world, run_jobs):
    release_publish(project=world.project, actor=world.admin)
    admin = _client(world.admin)
    services.node_update(
        project=world.project, actor=world.expert, node_id="N-oos", changes={"title": "Out of scope (new)"}
    )
    page = admin.get(BASE + "releases/publish/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "1 node changed" in _text(html)
    assert re.search(r'href="/p/tiny/graph/nodes/N-oos/".*?title', html, re.S)
    digest = re.search(r'name="draft_digest" value="([0-9a-f]{64})"', html).group(1)
    assert _client(world.expert).get(BASE + "releases/publish/").status_code == 403

    # the draft moves after the admin looked: what they reviewed is no longer what would be published
    services.node_update(
        project=world.project, actor=world.expert, node_id="N-oos", changes={"chunk": "Changed after review."}
    )
    before = _state(world.project)
    with run_jobs():
        refused = admin.post(BASE + "releases/publish/", {"notes": "reviewed", "draft_digest": digest})
    assert "release.draft_moved" in _text(_job_page(admin, refused).split('id="job-error"')[1])
    assert _state(world.project) == before and Release.objects.filter(project=world.project).count() == 1

    digest = re.search(
        r'name="draft_digest" value="([0-9a-f]{64})"', admin.get(BASE + "releases/publish/").content.decode()
    ).group(1)
    with run_jobs():
        assert (
            admin.post(BASE + "releases/publish/", {"notes": "ok", "draft_digest": digest}).status_code == 302
        )
    assert Release.objects.get(project=world.project, is_active=True).version == 2

    # now the draft is the active release: the page says so, and publishing again creates nothing
    assert "identical to the active release v2" in _text(
        admin.get(BASE + "releases/publish/").content.decode()
    )
    with run_jobs():
        again = admin.post(BASE + "releases/publish/", {"notes": "again"})
    assert "nothing to publish" in _text(_job_page(admin, again))
    assert Release.objects.filter(project=world.project).count() == 2


# --- the picture's layout, on its own -------------------------------------------------------------


def _star(spokes: int, fan: int = 0) -> Neighbourhood:
    """A hub with ``spokes`` nodes pointing at it; the first spoke also points at ``fan`` others."""
    nodes = [NodeData("hub", "Decision", "The hub", "")]
    edges = []
    for i in range(spokes):
        nodes.append(NodeData(f"s{i:02d}", "Info", f"Spoke number {i} with a rather long title", ""))
        edges.append(EdgeData(f"s{i:02d}", "hub", "ESCALATES_TO"))
    nodes.append(NodeData("m", "MemoryRead", "Memory", ""))
    edges.append(EdgeData("hub", "m", "READS_MEMORY"))
    for j in range(fan):
        nodes.append(NodeData(f"f{j:02d}", "FAQ", f"Fan {j}", ""))
        edges.append(EdgeData("s00", f"f{j:02d}", "LEADS_TO"))
    return Neighbourhood("hub", "draft", tuple(nodes), tuple(edges))


def test_the_picture_is_capped_keeps_rare_edge_types_and_never_stacks_labels():
    hood = _star(70)
    shown, more = picture_select(hood, cap=40)
    assert (len(shown.nodes), more) == (40, 32)
    assert "m" in {n.node_id for n in shown.nodes}  # the one READS_MEMORY beats 70 ESCALATES_TO
    picture = picture_layout(shown, depth=1, more=more, node_url=lambda n: f"/n/{n}/")
    assert picture.circle_count == 40 and picture.more == 32
    assert {e.source for e in picture.edges} <= {n.node_id for n in picture.nodes}
    columns: dict[tuple[float, str], list[float]] = {}
    for node in picture.nodes:
        if node.ring:
            columns.setdefault((round(node.x / abs(node.x)), node.anchor), []).append(node.label_y)
    assert len(columns) == 2  # balanced on both sides
    for ys in columns.values():
        ys.sort()
        assert min(b - a for a, b in zip(ys, ys[1:], strict=False)) >= 18  # 12px labels never overlap


def test_a_hub_neighbour_does_not_flood_the_second_ring():
    hood = _star(3, fan=30)
    shown, more = picture_select(hood, cap=40, per_parent=12)
    fans = [n for n in shown.nodes if n.node_id.startswith("f")]
    assert (len(fans), more) == (12, 18)
    picture = picture_layout(shown, depth=2, node_url=lambda n: f"/n/{n}/")
    rings = sorted(n.ring for n in picture.nodes)
    assert rings == [0] + [1] * 4 + [2] * 12
    fan_x = {n.x > 0 for n in picture.nodes if n.node_id.startswith("f")}
    spoke = next(n for n in picture.nodes if n.node_id == "s00")
    assert fan_x == {spoke.x > 0}  # children stand on their parent's side
