"""Curation UI (Django test client): pages, permissions, htmx fragments, and refusals shown in place."""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import unescape
from typing import Any

import pytest
from django.test import Client

from arg_platform.audit import audit_record
from arg_platform.models import AuditEvent
from taxonomy import services
from taxonomy.models import Cluster, ContextTypology, Label, LabelIncompatibility, Policy, Role

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@dataclass
class Tax:
    project: Any
    invoices: Label
    refunds: Label
    late_fees: Label
    sign_in: Label
    incompat: LabelIncompatibility


@pytest.fixture
def tax(project: Any, expert: Any) -> Tax:
    services.cluster_create(project=project, actor=expert, key="billing", name="Billing")
    services.cluster_create(project=project, actor=expert, key="accounts", name="Accounts")
    invoices = services.label_create(
        project=project,
        actor=expert,
        name="Invoices",
        cluster_key="billing",
        description="Invoices and receipts",
        synonyms=["bill"],
        examples=["my invoice"],
    )
    refunds = services.label_create(project=project, actor=expert, name="Refunds", cluster_key="billing")
    late_fees = services.label_create(
        project=project, actor=expert, name="Late fees", cluster_key="billing", parent_id=invoices.label_id
    )
    sign_in = services.label_create(
        project=project, actor=expert, name="Sign-in", cluster_key="accounts", status="SHADOW"
    )
    incompat = services.incompatibility_create(
        project=project,
        actor=expert,
        label_a=refunds.label_id,
        label_b=sign_in.label_id,
        reason="different journeys",
    )
    services.typology_save(project=project, actor=expert, data={"key": "quick", "name": "Quick answer"})
    services.policy_save(project=project, actor=expert, data={"key": "customer", "name": "Customer"})
    services.role_save(
        project=project,
        actor=expert,
        key="customer",
        name="Customer",
        policy_key="customer",
        default_typology_key="quick",
    )
    return Tax(project, invoices, refunds, late_fees, sign_in, incompat)


def _state(project: Any) -> tuple:
    """Everything a refused write must leave untouched."""
    counts = tuple(
        m.objects.filter(project=project).count()
        for m in (Cluster, Label, LabelIncompatibility, ContextTypology, Policy, Role, AuditEvent)
    )
    labels = tuple(
        Label.objects.filter(project=project)
        .order_by("label_id")
        .values_list(
            "label_id", "name", "description", "parent_id", "cluster_id", "status", "synonyms", "examples"
        )
    )
    others = tuple(
        (t.key, t.name, t.weight_alpha, t.complexity_budget)
        for t in ContextTypology.objects.filter(project=project)
    ) + tuple(
        (p.key, p.name, tuple(p.allowed_labels), p.max_hops) for p in Policy.objects.filter(project=project)
    )
    return counts, labels, others


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _field_error(html: str, field_id: str) -> str:
    """The text of the errors rendered next to the field with id ``field_id``."""
    match = re.search(rf'<div class="errors" id="{re.escape(field_id)}_error">(.*?)</div>', html, re.S)
    assert match, f"no errors next to #{field_id}"
    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", match.group(1))).strip())


def _form_errors(html: str) -> str:
    match = re.search(r'<div class="form-errors" role="alert">(.*?)</div>\s*</div>', html, re.S)
    assert match, "no form-level errors"
    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", match.group(1))).strip())


def _pages(tax: Tax) -> list[str]:
    label = tax.late_fees.label_id
    return [
        "/p/acme/taxonomy/",
        "/p/acme/taxonomy/?q=late",
        f"/p/acme/taxonomy/labels/{label}/",
        "/p/acme/typologies/",
        "/p/acme/typologies/quick/",
        "/p/acme/policies/",
        "/p/acme/policies/customer/",
        "/p/acme/roles/",
        "/p/acme/roles/customer/",
        "/p/acme/history/",
        "/p/acme/history/?object_type=label",
    ]


def _writes(tax: Tax) -> list[tuple[str, dict[str, Any]]]:
    """Every write endpoint with data that an expert could save."""
    label, other = tax.late_fees.label_id, tax.refunds.label_id
    base = f"/p/acme/taxonomy/labels/{label}/"
    return [
        ("/p/acme/taxonomy/clusters/new/", {"key": "privacy", "name": "Privacy"}),
        ("/p/acme/taxonomy/labels/new/", {"parent": label, "name": "Waivers", "status": "ACTIVE"}),
        (base + "edit/", {"edit-name": "Late payment fees", "edit-description": "x"}),
        (base + "move/", {"move-target": f"label:{other}"}),
        (base + "status/", {"status-status": "DEPRECATED", "status-reason": "merged"}),
        (base + "synonyms/add/", {"synonym-text": "overdue fee"}),
        (base + "examples/add/", {"example-text": "why was I charged a late fee"}),
        (f"/p/acme/taxonomy/labels/{tax.invoices.label_id}/synonyms/remove/", {"text": "bill"}),
        (f"/p/acme/taxonomy/labels/{tax.invoices.label_id}/examples/remove/", {"text": "my invoice"}),
        (base + "incompatibilities/add/", {"incompat-other": tax.sign_in.label_id}),
        (f"/p/acme/taxonomy/labels/{other}/incompatibilities/{tax.incompat.pk}/remove/", {}),
        (
            "/p/acme/typologies/",
            {
                "key": "deep",
                "name": "Deep",
                "complexity_budget": 5,
                "max_depth": 4,
                "max_hops": 5,
                "beam_width": 4,
                "response_style": "detailed",
                **{f"weight_{w}": 0.2 for w in ("alpha", "beta", "gamma", "delta", "epsilon")},
            },
        ),
        (
            "/p/acme/typologies/quick/",
            {
                "name": "Quick!",
                "complexity_budget": 2,
                "max_depth": 2,
                "max_hops": 3,
                "beam_width": 3,
                "response_style": "concise",
                **{f"weight_{w}": 0.2 for w in ("alpha", "beta", "gamma", "delta", "epsilon")},
            },
        ),
        ("/p/acme/policies/", {"key": "agent", "name": "Agent", "memory_scopes": ["USER"]}),
        ("/p/acme/policies/customer/", {"name": "Customer 2", "memory_scopes": ["USER"]}),
        ("/p/acme/roles/", {"key": "agent", "name": "Agent", "policy": "customer"}),
        ("/p/acme/roles/customer/", {"name": "Customer 2", "policy": "customer"}),
    ]


# --- access ---------------------------------------------------------------------------------------


def test_anonymous_visitors_are_sent_to_login(client, tax):
    for url in _pages(tax):
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/accounts/login/?next=")


def test_anonymous_htmx_requests_reload_the_page_on_the_login_form(client, tax):
    before = _state(tax.project)
    page = f"http://testserver/p/acme/taxonomy/labels/{tax.invoices.label_id}/"
    response = client.post(
        f"/p/acme/taxonomy/labels/{tax.invoices.label_id}/examples/add/",
        {"example-text": "hello"},
        HTTP_HX_CURRENT_URL=page,
        **HTMX,
    )
    assert response.status_code == 200
    assert (
        response["HX-Redirect"]
        == f"/accounts/login/?next=%2Fp%2Facme%2Ftaxonomy%2Flabels%2F{tax.invoices.label_id}%2F"
    )
    assert _state(tax.project) == before


@pytest.mark.parametrize("who", ["expert", "reviewer"])
def test_members_read_every_page(request, who, tax):
    client = _client(request.getfixturevalue(who))
    for url in _pages(tax):
        response = client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        assert 'hx-headers=\'{"X-CSRFToken": "' in html
        assert "Acme support" in html
        assert f'<span class="role-badge role-{who}">{who}</span>' in html


def test_the_projects_own_address_opens_its_taxonomy(expert, make_user, other_project, tax):
    response = _client(expert).get("/p/acme/", follow=True)
    assert response.redirect_chain == [("/p/acme/taxonomy/", 302)]
    assert response.status_code == 200
    outsider = _client(make_user("olga", "expert", other_project))
    assert outsider.get("/p/acme/").status_code == 404  # like every page of a project not theirs


def test_the_nav_marks_the_current_section(expert, tax):
    html = _client(expert).get("/p/acme/policies/").content.decode()
    assert re.search(r'href="/p/acme/policies/" aria-current="page"', html)
    assert not re.search(r'href="/p/acme/taxonomy/" aria-current="page"', html)


def test_non_members_and_other_projects_get_404(make_user, other_project, tax):
    outsider = _client(make_user("olga", "expert", other_project))
    for url in _pages(tax):
        assert outsider.get(url).status_code == 404, url
    before = _state(tax.project)
    for url, data in _writes(tax):
        assert outsider.post(url, data).status_code == 404, url
    assert _state(tax.project) == before


def test_a_label_of_another_project_is_404(expert, other_project, tax):
    services.cluster_create(project=other_project, actor=None, key="x", name="X")
    foreign = [
        services.label_create(project=other_project, actor=None, name=f"G{i}", cluster_key="x")
        for i in range(5)
    ][-1]
    assert foreign.label_id == "L00005"
    assert not Label.objects.filter(project=tax.project, label_id="L00005").exists()
    client = _client(expert)
    assert client.get("/p/acme/taxonomy/labels/L00005/").status_code == 404
    assert client.get("/p/globex/taxonomy/").status_code == 404
    response = client.post("/p/acme/taxonomy/labels/L00005/examples/add/", {"example-text": "hello"})
    assert response.status_code == 404
    foreign.refresh_from_db()
    assert foreign.examples == []


def test_reviewers_get_403_on_every_write_and_nothing_changes(reviewer, tax):
    client = _client(reviewer)
    before = _state(tax.project)
    for url, data in _writes(tax):
        assert client.post(url, data).status_code == 403, url
        assert client.post(url, data, **HTMX).status_code == 403, url
    assert _state(tax.project) == before


def test_reviewers_see_no_edit_controls(reviewer, tax):
    client = _client(reviewer)
    for url in _pages(tax):
        html = client.get(url).content.decode()
        assert "hx-post" not in html, url
        assert len(re.findall(r'method="post"', html)) == 1, url  # the logout button only
    tree = client.get("/p/acme/taxonomy/").content.decode()
    assert "+ child" not in tree and "+ New cluster" not in tree and "+ Root label" not in tree
    label = client.get(f"/p/acme/taxonomy/labels/{tax.invoices.label_id}/").content.decode()
    assert "Move label" not in label and "Add example" not in label and "Change status" not in label
    assert "my invoice" in label and "bill" in label


def test_experts_see_edit_controls(expert, tax):
    client = _client(expert)
    tree = client.get("/p/acme/taxonomy/").content.decode()
    assert f'aria-label="Add a child label under {tax.invoices.name}"' in tree
    assert "+ New cluster" in tree
    label = client.get(f"/p/acme/taxonomy/labels/{tax.invoices.label_id}/").content.decode()
    for control in (
        "Move label",
        "Add example",
        "Add synonym",
        "Change status",
        "Declare incompatible",
        'aria-label="Remove example “my invoice”"',
    ):
        assert control in label


def test_htmx_requests_carry_the_csrf_token_from_the_page(expert, tax):
    client = Client(enforce_csrf_checks=True)
    client.force_login(expert)
    html = client.get(f"/p/acme/taxonomy/labels/{tax.late_fees.label_id}/").content.decode()
    token = re.search(r'hx-headers=\'\{"X-CSRFToken": "([^"]+)"\}\'', html).group(1)
    url = f"/p/acme/taxonomy/labels/{tax.late_fees.label_id}/examples/add/"
    assert client.post(url, {"example-text": "no token"}, **HTMX).status_code == 403
    response = client.post(url, {"example-text": "with token"}, HTTP_X_CSRFTOKEN=token, **HTMX)
    assert response.status_code == 200
    tax.late_fees.refresh_from_db()
    assert tax.late_fees.examples == ["with token"]


# --- taxonomy page --------------------------------------------------------------------------------


def test_the_tree_shows_clusters_labels_statuses_and_children(expert, tax):
    html = _client(expert).get("/p/acme/taxonomy/").content.decode()
    assert "4 labels in 2 clusters" in html
    assert html.index('id="cluster-accounts"') < html.index('id="cluster-billing"')
    node = html[html.index(f'id="node-{tax.invoices.label_id}"') :]
    assert node.index("Invoices") < node.index(f'id="node-{tax.late_fees.label_id}"')
    assert '<span class="badge status-shadow" title="Status: SHADOW">SHADOW</span>' in html
    assert f'href="/p/acme/taxonomy/labels/{tax.late_fees.label_id}/"' in html


def test_search_filters_labels_and_htmx_gets_only_the_region(expert, tax):
    client = _client(expert)
    response = client.get("/p/acme/taxonomy/?q=fees", **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<section id="tree-region"')
    assert "<html" not in html
    assert "1 label match “fees”" in html
    assert "Late fees" in html and "Refunds" not in html
    by_id = client.get(f"/p/acme/taxonomy/?q={tax.refunds.label_id}", **HTMX).content.decode()
    assert f"1 label match “{tax.refunds.label_id}”" in by_id and "Refunds" in by_id
    full = client.get("/p/acme/taxonomy/?q=fees").content.decode()
    assert "<html" in full and 'value="fees"' in full


def test_create_a_cluster_in_place(expert, tax):
    response = _client(expert).post(
        "/p/acme/taxonomy/clusters/new/", {"key": "privacy", "name": "Data & privacy"}, **HTMX
    )
    assert response.status_code == 200
    assert response["HX-Retarget"] == "#tree-region"
    assert 'id="cluster-privacy"' in response.content.decode()
    assert Cluster.objects.get(project=tax.project, key="privacy").name == "Data & privacy"


def test_a_duplicate_cluster_key_is_refused_in_place(expert, tax):
    before = _state(tax.project)
    response = _client(expert).post(
        "/p/acme/taxonomy/clusters/new/", {"key": "billing", "name": "Other"}, **HTMX
    )
    assert response.status_code == 422
    html = response.content.decode()
    assert html.lstrip().startswith('<form id="cluster-form"')
    assert _field_error(html, "id_key") == "cluster.unique_key cluster key 'billing' already exists"
    assert _state(tax.project) == before


def test_the_add_child_form_opens_in_place(expert, tax):
    response = _client(expert).get(f"/p/acme/taxonomy/labels/new/?parent={tax.invoices.label_id}", **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    assert "New child of “Invoices”" in html
    assert f'name="parent" value="{tax.invoices.label_id}"' in html
    assert f'id="slot-{tax.invoices.label_id}-name"' in html
    assert "<html" not in html
    assert _client(expert).get("/p/acme/taxonomy/labels/new/?parent=L09999", **HTMX).status_code == 404


def test_create_a_child_label_from_the_tree(expert, tax):
    response = _client(expert).post(
        "/p/acme/taxonomy/labels/new/",
        {
            "parent": tax.invoices.label_id,
            "name": "Disputes",
            "description": "Wrong amounts",
            "status": "SHADOW",
        },
        **HTMX,
    )
    assert response.status_code == 200
    assert response["HX-Retarget"] == "#tree-region"
    label = Label.objects.get(project=tax.project, name="Disputes")
    assert (label.label_id, label.parent_id, label.cluster.key, label.status) == (
        "L00005",
        tax.invoices.pk,
        "billing",
        "SHADOW",
    )
    html = response.content.decode()
    assert 'class="node is-highlight" id="node-L00005"' in html
    assert "Label L00005 “Disputes” created under Invoices." in html


def test_create_a_root_label_from_the_full_page_form(expert, tax):
    client = _client(expert)
    assert client.get("/p/acme/taxonomy/labels/new/").status_code == 200
    response = client.post(
        "/p/acme/taxonomy/labels/new/",
        {"cluster": "accounts", "parent": "", "name": "2FA", "status": "ACTIVE"},
    )
    label = Label.objects.get(project=tax.project, name="2FA")
    assert response.status_code == 302
    assert response["Location"] == f"/p/acme/taxonomy/labels/{label.label_id}/"
    assert label.parent is None and label.cluster.key == "accounts"


def test_a_duplicate_sibling_is_refused_with_the_rule_and_nothing_is_saved(expert, tax):
    before = _state(tax.project)
    response = _client(expert).post(
        "/p/acme/taxonomy/labels/new/",
        {"parent": tax.invoices.label_id, "name": "late FEES", "status": "ACTIVE"},
        **HTMX,
    )
    assert response.status_code == 422
    html = response.content.decode()
    assert html.lstrip().startswith(f'<form class="inline-form card" id="slot-{tax.invoices.label_id}-form"')
    error = _field_error(html, f"slot-{tax.invoices.label_id}-name")
    assert error.startswith("taxonomy.sibling_unique labels L00003")
    assert '<code class="rule">taxonomy.sibling_unique</code>' in html
    assert 'aria-invalid="true"' in html
    assert _state(tax.project) == before


def test_an_unknown_parent_is_refused_next_to_the_parent_field(expert, tax):
    before = _state(tax.project)
    response = _client(expert).post(
        "/p/acme/taxonomy/labels/new/",
        {"cluster": "billing", "parent": "L09999", "name": "Orphan", "status": "ACTIVE"},
    )
    assert response.status_code == 422
    html = response.content.decode()
    assert "<html" in html
    assert _field_error(html, "id_parent").startswith("taxonomy.parent_exists")
    assert _state(tax.project) == before


# --- label page -----------------------------------------------------------------------------------


def test_the_label_page_shows_the_label(expert, tax):
    services.label_set_status(label=tax.sign_in, actor=expert, status="ACTIVE", reason="reviewed on traffic")
    html = _client(expert).get(f"/p/acme/taxonomy/labels/{tax.sign_in.label_id}/").content.decode()
    assert "<h1>Sign-in</h1>" in html
    assert '<dd id="label-path">Accounts › Sign-in</dd>' in html
    assert "by erin-expert" in html and "<q>reviewed on traffic</q>" in html
    assert f'href="/p/acme/taxonomy/labels/{tax.refunds.label_id}/">Refunds</a>' in html
    assert "different journeys" in html
    assert "No ontology nodes attached." in html
    assert html.count('<span class="action action-status">status</span>') == 1
    assert html.count('<span class="action action-create">create</span>') == 1


def test_the_label_page_lists_the_nodes_attached_to_it_in_the_graph(expert, tax):
    from ontology.services import node_create
    from ontology.store.port import NodeData

    node = NodeData(
        node_id="N-invoice-download",
        type="Info",
        title="Download an invoice",
        chunk="Go to Billing.",
        labels=(tax.invoices.label_id,),
    )
    node_create(project=tax.project, actor=expert, node=node)
    client = _client(expert)
    html = client.get(f"/p/acme/taxonomy/labels/{tax.invoices.label_id}/").content.decode()
    section = html[html.index('id="ontology-section"') : html.index('id="label-history"')]
    assert '<code class="key">N-invoice-download</code> Download an invoice' in section
    assert '<span class="badge badge-neutral">Info</span>' in section
    other = client.get(f"/p/acme/taxonomy/labels/{tax.refunds.label_id}/").content.decode()
    assert "No ontology nodes attached." in other


def test_rename_refreshes_the_path_of_the_subtree(expert, tax):
    response = _client(expert).post(
        f"/p/acme/taxonomy/labels/{tax.invoices.label_id}/edit/",
        {
            "edit-name": "Invoices & receipts",
            "edit-description": "All about invoices",
            "edit-reason": "clearer",
        },
        **HTMX,
    )
    assert response.status_code == 200
    assert response.content.decode().lstrip().startswith('<div id="label-body"')
    tax.late_fees.refresh_from_db()
    assert tax.late_fees.path == "Billing › Invoices & receipts › Late fees"
    assert AuditEvent.objects.filter(
        object_key=tax.invoices.label_id, action="update", reason="clearer"
    ).exists()


def test_rename_to_a_sibling_name_is_refused(expert, tax):
    before = _state(tax.project)
    response = _client(expert).post(
        f"/p/acme/taxonomy/labels/{tax.refunds.label_id}/edit/",
        {"edit-name": "invoices", "edit-description": ""},
        **HTMX,
    )
    assert response.status_code == 422
    assert _field_error(response.content.decode(), "id_edit-name").startswith("taxonomy.sibling_unique")
    assert _state(tax.project) == before


def test_move_under_another_parent_and_to_a_cluster_root(expert, tax):
    client = _client(expert)
    url = f"/p/acme/taxonomy/labels/{tax.late_fees.label_id}/move/"
    response = client.post(
        url, {"move-target": f"label:{tax.refunds.label_id}", "move-reason": "fees are refunded"}, **HTMX
    )
    assert response.status_code == 200
    assert '<dd id="label-path">Billing › Refunds › Late fees</dd>' in response.content.decode()
    tax.late_fees.refresh_from_db()
    assert tax.late_fees.parent_id == tax.refunds.pk
    response = client.post(url, {"move-target": "root:accounts"})
    assert response.status_code == 302
    tax.late_fees.refresh_from_db()
    assert (tax.late_fees.parent_id, tax.late_fees.cluster.key, tax.late_fees.path) == (
        None,
        "accounts",
        "Accounts › Late fees",
    )


def test_the_move_form_offers_neither_the_label_nor_its_subtree(expert, tax):
    html = _client(expert).get(f"/p/acme/taxonomy/labels/{tax.invoices.label_id}/").content.decode()
    select = html[
        html.index('name="move-target"') : html.index("</select>", html.index('name="move-target"'))
    ]
    assert f'value="label:{tax.refunds.label_id}"' in select and 'value="root:accounts"' in select
    assert f'value="label:{tax.invoices.label_id}"' not in select
    assert f'value="label:{tax.late_fees.label_id}"' not in select


def test_a_move_into_a_name_clash_is_refused_next_to_the_target(expert, tax):
    services.label_create(
        project=tax.project,
        actor=expert,
        name="Late fees",
        cluster_key="billing",
        parent_id=tax.refunds.label_id,
    )
    before = _state(tax.project)
    response = _client(expert).post(
        f"/p/acme/taxonomy/labels/{tax.late_fees.label_id}/move/",
        {"move-target": f"label:{tax.refunds.label_id}"},
        **HTMX,
    )
    assert response.status_code == 422
    assert _field_error(response.content.decode(), "id_move-target").startswith("taxonomy.sibling_unique")
    assert _state(tax.project) == before


def test_status_changes_record_who_when_why(expert, tax):
    response = _client(expert).post(
        f"/p/acme/taxonomy/labels/{tax.sign_in.label_id}/status/",
        {"status-status": "ACTIVE", "status-reason": "good shadow results"},
        **HTMX,
    )
    assert response.status_code == 200
    tax.sign_in.refresh_from_db()
    assert (tax.sign_in.status, tax.sign_in.status_reason, tax.sign_in.status_changed_by) == (
        "ACTIVE",
        "good shadow results",
        expert,
    )


@pytest.mark.parametrize(
    ("data", "field", "rule"),
    [
        ({"status-status": "DEPRECATED", "status-reason": ""}, "id_status-reason", "taxonomy.status_reason"),
        (
            {"status-status": "CANDIDATE", "status-reason": "x"},
            "id_status-status",
            "taxonomy.status_transition",
        ),
        (
            {"status-status": "DEPRECATED", "status-reason": "children first"},
            "id_status-status",
            "taxonomy.parent_status",
        ),
    ],
)
def test_refused_status_changes_name_the_rule(expert, tax, data, field, rule):
    before = _state(tax.project)
    label = tax.invoices if rule == "taxonomy.parent_status" else tax.refunds
    response = _client(expert).post(f"/p/acme/taxonomy/labels/{label.label_id}/status/", data, **HTMX)
    assert response.status_code == 422
    html = response.content.decode()
    text = _field_error(html, field) if field else _form_errors(html)
    assert text.startswith(rule)
    assert _state(tax.project) == before


def test_examples_and_synonyms_are_added_and_removed_in_place(expert, tax):
    client = _client(expert)
    base = f"/p/acme/taxonomy/labels/{tax.invoices.label_id}/"
    response = client.post(
        base + "examples/add/", {"example-text": "  send me last month's invoice "}, **HTMX
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<section class="card terms terms-examples" id="examples-section"')
    assert '<section class="card" id="label-history" aria-labelledby="history-h" hx-swap-oob="true">' in html
    assert '<div id="messages" class="messages" role="status" aria-live="polite" hx-swap-oob="true">' in html
    assert "Example added." in html
    response = client.post(base + "synonyms/add/", {"synonym-text": "receipt"}, **HTMX)
    assert 'id="synonyms-section"' in response.content.decode()
    tax.invoices.refresh_from_db()
    assert tax.invoices.examples == ["my invoice", "send me last month's invoice"]
    assert tax.invoices.synonyms == ["bill", "receipt"]

    assert client.post(base + "examples/remove/", {"text": "my invoice"}, **HTMX).status_code == 200
    response = client.post(base + "synonyms/remove/", {"text": "bill"})
    assert response.status_code == 302
    assert response["Location"] == base + "#synonyms-section"
    tax.invoices.refresh_from_db()
    assert (tax.invoices.examples, tax.invoices.synonyms) == (["send me last month's invoice"], ["receipt"])
    assert client.post(base + "examples/remove/", {"text": "never there"}, **HTMX).status_code == 404


def test_an_oversize_example_is_refused_in_place(expert, tax):
    before = _state(tax.project)
    response = _client(expert).post(
        f"/p/acme/taxonomy/labels/{tax.invoices.label_id}/examples/add/", {"example-text": "x" * 501}, **HTMX
    )
    assert response.status_code == 422
    html = response.content.decode()
    assert html.lstrip().startswith('<section class="card terms terms-examples"')
    assert _field_error(html, "id_example-text").startswith("taxonomy.field_size")
    assert _state(tax.project) == before


def test_incompatibilities_are_declared_and_removed(expert, tax):
    client = _client(expert)
    base = f"/p/acme/taxonomy/labels/{tax.late_fees.label_id}/"
    response = client.post(
        base + "incompatibilities/add/",
        {"incompat-other": tax.sign_in.label_id, "incompat-reason": "never together"},
        **HTMX,
    )
    assert response.status_code == 200
    assert (
        response.content.decode().lstrip().startswith('<section class="card" id="incompatibilities-section"')
    )
    inc = LabelIncompatibility.objects.get(project=tax.project, reason="never together")
    assert {inc.label_a_id, inc.label_b_id} == {tax.late_fees.pk, tax.sign_in.pk}
    # an incompatibility that does not involve this label cannot be removed from its page
    assert client.post(base + f"incompatibilities/{tax.incompat.pk}/remove/", **HTMX).status_code == 404
    assert client.post(base + f"incompatibilities/{inc.pk}/remove/", **HTMX).status_code == 200
    assert not LabelIncompatibility.objects.filter(pk=inc.pk).exists()
    assert LabelIncompatibility.objects.filter(pk=tax.incompat.pk).exists()


def test_an_incompatibility_within_a_lineage_is_refused(expert, tax):
    before = _state(tax.project)
    response = _client(expert).post(
        f"/p/acme/taxonomy/labels/{tax.late_fees.label_id}/incompatibilities/add/",
        {"incompat-other": tax.invoices.label_id},
        **HTMX,
    )
    assert response.status_code == 422
    assert _field_error(response.content.decode(), "id_incompat-other").startswith(
        "taxonomy.incompatible_lineage"
    )
    assert _state(tax.project) == before


# --- typologies, policies, roles ------------------------------------------------------------------

TYPOLOGY = {
    "key": "deep-dive",
    "name": "Deep dive",
    "description": "Long answers",
    "access_constraints": "channels: chat, web\nroles:",
    "preferred_node_types": "Info\nFAQ",
    "complexity_budget": 6,
    "max_depth": 5,
    "max_hops": 6,
    "beam_width": 5,
    "response_style": "detailed",
    "fast_path_eligible": "",
    "is_default": "on",
    "weight_alpha": 0.3,
    "weight_beta": 0.3,
    "weight_gamma": 0.2,
    "weight_delta": 0.1,
    "weight_epsilon": 0.1,
}


def test_create_and_edit_a_typology(expert, tax):
    client = _client(expert)
    response = client.post("/p/acme/typologies/", TYPOLOGY, **HTMX)
    assert response.status_code == 200
    assert response["HX-Redirect"] == "/p/acme/typologies/deep-dive/"
    typology = ContextTypology.objects.get(project=tax.project, key="deep-dive")
    assert services.typology_as_data(typology) == {
        "key": "deep-dive",
        "name": "Deep dive",
        "description": "Long answers",
        "access_constraints": {"channels": ["chat", "web"], "roles": []},
        "preferred_node_types": ["Info", "FAQ"],
        "complexity_budget": 6,
        "max_depth": 5,
        "max_hops": 6,
        "beam_width": 5,
        "response_style": "detailed",
        "fast_path_eligible": False,
        "is_default": True,
        "weights": {"alpha": 0.3, "beta": 0.3, "gamma": 0.2, "delta": 0.1, "epsilon": 0.1},
    }
    edit = client.get("/p/acme/typologies/deep-dive/").content.decode()
    assert "channels: chat, web" in edit and 'value="deep-dive"' in edit and "disabled" in edit
    response = client.post("/p/acme/typologies/deep-dive/", {**TYPOLOGY, "key": "ignored", "beam_width": 8})
    assert response.status_code == 302
    typology.refresh_from_db()
    assert (typology.key, typology.beam_width) == ("deep-dive", 8)


@pytest.mark.parametrize(
    ("change", "field", "rule"),
    [
        (
            {f"weight_{w}": 0 for w in ("alpha", "beta", "gamma", "delta", "epsilon")},
            None,
            "typology.weights",
        ),
        ({"weight_beta": 1.5}, "new-typology-weight_beta", "typology.weights"),
        ({"complexity_budget": 11}, "new-typology-complexity_budget", "typology.range"),
        (
            {"preferred_node_types": "Info\nTeleporter"},
            "new-typology-preferred_node_types",
            "typology.node_types",
        ),
        ({"key": "quick"}, "new-typology-key", "typology.unique_key"),
    ],
)
def test_a_bad_typology_is_refused_in_place(expert, tax, change, field, rule):
    before = _state(tax.project)
    response = _client(expert).post("/p/acme/typologies/", {**TYPOLOGY, **change}, **HTMX)
    assert response.status_code == 422
    html = response.content.decode()
    assert html.lstrip().startswith('<form id="editor-form"')
    assert (_field_error(html, field) if field else _form_errors(html)).startswith(rule)
    assert _state(tax.project) == before


POLICY = {
    "key": "agent",
    "name": "Support agent",
    "allowed_labels": "",
    "forbidden_labels": "",
    "allowed_node_types": "",
    "forbidden_node_types": "Action",
    "max_hops": "4",
    "blocked_terms": "Password\n\n  wire transfer ",
    "blocked_patterns": r"\bssn\b",
    "sensitive_topics": "legal-advice: lawsuit, sue -> REFOCUS\nhealth: diagnosis",
    "scope_statement": "Acme support",
    "refusal_template": "Sorry.",
    "refocus_template": "Let us focus.",
    "memory_scopes": ["USER", "ORG"],
    "language_messages": "fr: Je ne parle que {languages}.\ndefault: I only speak {languages}.",
}


def test_create_and_edit_a_policy(expert, tax):
    client = _client(expert)
    data = {**POLICY, "forbidden_labels": f"{tax.refunds.label_id}\n"}
    response = client.post("/p/acme/policies/", data)
    assert response.status_code == 302
    assert response["Location"] == "/p/acme/policies/agent/"
    policy = Policy.objects.get(project=tax.project, key="agent")
    assert services.policy_as_data(policy) == {
        "key": "agent",
        "name": "Support agent",
        "description": "",
        "allowed_labels": [],
        "forbidden_labels": [tax.refunds.label_id],
        "allowed_node_types": [],
        "forbidden_node_types": ["Action"],
        "max_hops": 4,
        "blocked_terms": ["password", "wire transfer"],
        "blocked_patterns": [r"\bssn\b"],
        "sensitive_topics": [
            {"topic": "legal-advice", "terms": ["lawsuit", "sue"], "action": "REFOCUS"},
            {"topic": "health", "terms": ["diagnosis"], "action": "REFOCUS"},
        ],
        "scope_statement": "Acme support",
        "refusal_template": "Sorry.",
        "refocus_template": "Let us focus.",
        "memory_scopes": ["USER", "ORG"],
        "language_messages": {"fr": "Je ne parle que {languages}.", "default": "I only speak {languages}."},
    }
    edit = client.get("/p/acme/policies/agent/").content.decode()
    assert "legal-advice: lawsuit, sue -&gt; REFOCUS\nhealth: diagnosis -&gt; REFOCUS" in edit
    assert f'href="/p/acme/taxonomy/labels/{tax.refunds.label_id}/">Billing › Refunds</a>' in edit
    assert "Every label." in edit
    response = client.post(
        "/p/acme/policies/agent/", {**data, "max_hops": "", "allowed_labels": tax.invoices.label_id}, **HTMX
    )
    assert response["HX-Redirect"] == "/p/acme/policies/agent/"
    policy.refresh_from_db()
    assert (policy.max_hops, policy.allowed_labels) == (None, [tax.invoices.label_id])


@pytest.mark.parametrize(
    ("change", "field", "rule"),
    [
        ({"allowed_labels": "L00001\nL09999"}, "new-policy-allowed_labels", "policy.label_refs"),
        ({"blocked_patterns": "(unclosed"}, "new-policy-blocked_patterns", "policy.pattern"),
        ({"forbidden_node_types": "Teleporter"}, "new-policy-forbidden_node_types", "policy.node_types"),
        (
            {"sensitive_topics": "legal: sue -> IGNORE"},
            "new-policy-sensitive_topics",
            "policy.sensitive_topic",
        ),
        ({"max_hops": "99"}, "new-policy-max_hops", "policy.max_hops"),
        ({"key": "customer"}, "new-policy-key", "policy.unique_key"),
    ],
)
def test_a_bad_policy_is_refused_in_place(expert, tax, change, field, rule):
    before = _state(tax.project)
    response = _client(expert).post("/p/acme/policies/", {**POLICY, **change}, **HTMX)
    assert response.status_code == 422
    assert _field_error(response.content.decode(), field).startswith(rule)
    assert _state(tax.project) == before


def test_a_malformed_sensitive_topic_line_is_a_form_error(expert, tax):
    before = _state(tax.project)
    response = _client(expert).post("/p/acme/policies/", {**POLICY, "sensitive_topics": "no colon here"})
    assert response.status_code == 422
    error = _field_error(response.content.decode(), "new-policy-sensitive_topics")
    assert error == "line 1: write 'topic: term1, term2 -> ACTION'"
    assert _state(tax.project) == before


def test_create_and_edit_a_role(expert, tax):
    client = _client(expert)
    response = client.post(
        "/p/acme/roles/", {"key": "agent", "name": "Agent", "policy": "customer", "default_typology": "quick"}
    )
    assert response.status_code == 302
    role = Role.objects.get(project=tax.project, key="agent")
    assert (role.name, role.policy.key, role.default_typology.key) == ("Agent", "customer", "quick")
    assert "Agent" in client.get("/p/acme/roles/").content.decode()
    response = client.post(
        "/p/acme/roles/agent/", {"name": "Human agent", "policy": "customer", "default_typology": ""}, **HTMX
    )
    assert response["HX-Redirect"] == "/p/acme/roles/agent/"
    role.refresh_from_db()
    assert (role.name, role.default_typology) == ("Human agent", None)


@pytest.mark.parametrize(
    ("data", "field", "rule"),
    [
        ({"key": "customer", "name": "Again", "policy": "customer"}, "new-role-key", "role.unique_key"),
        ({"key": "x", "name": "X", "policy": "nope"}, "new-role-policy", "role.policy_exists"),
        (
            {"key": "x", "name": "X", "policy": "customer", "default_typology": "nope"},
            "new-role-default_typology",
            "role.typology_exists",
        ),
        ({"key": "Not A Key", "name": "X", "policy": "customer"}, "new-role-key", "role.field"),
    ],
)
def test_a_bad_role_is_refused_in_place(expert, tax, data, field, rule):
    before = _state(tax.project)
    response = _client(expert).post("/p/acme/roles/", data, **HTMX)
    assert response.status_code == 422
    assert _field_error(response.content.decode(), field).startswith(rule)
    assert _state(tax.project) == before


# --- history --------------------------------------------------------------------------------------


def test_history_is_newest_first_filtered_and_paginated(expert, tax):
    for i in range(55):
        audit_record(
            project=tax.project,
            actor=expert,
            action="update",
            object_type="label",
            object_key=tax.refunds.label_id,
            before={"name": f"n{i}"},
            after={"name": f"n{i + 1}"},
        )
    client = _client(expert)
    html = client.get("/p/acme/history/").content.decode()
    total = AuditEvent.objects.filter(project=tax.project).count()
    assert f"{total} events" in html
    assert html.index("n54") < html.index("n53")
    assert "Page 1 of 2" in html
    page2 = client.get("/p/acme/history/?page=2").content.decode()
    assert "Page 2 of 2" in page2 and "typology" in page2
    response = client.get("/p/acme/history/?object_type=typology", **HTMX)
    fragment = response.content.decode()
    assert fragment.lstrip().startswith('<section id="history-table"')
    assert "1 event" in fragment and "/p/acme/typologies/quick/" in fragment and "n54" not in fragment
    keyed = client.get(
        f"/p/acme/history/?object_type=label&object_key={tax.sign_in.label_id}"
    ).content.decode()
    assert "1 event" in keyed


def test_history_of_another_project_is_not_shown(expert, other_project, tax):
    audit_record(project=other_project, actor=None, action="create", object_type="label", object_key="L00042")
    html = _client(expert).get("/p/acme/history/").content.decode()
    assert "L00042" not in html
