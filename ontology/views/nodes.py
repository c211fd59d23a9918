"""The node list (draft or active release), a new node, the node page and its picture, and the
expert's edits of a draft node (fields, lifecycle). What the node page shows is in ``node_page``."""

from __future__ import annotations

import math
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import redirect

from arg_platform.ui import HtmxHttpRequest
from arg_platform.vocabulary import NODE_TYPE_CHOICES
from ontology import graph_read, services
from ontology.graph_read import DRAFT, RELEASE
from ontology.releases import release_active
from ontology.store.port import NodeData
from projects.access import Capability, ProjectAccess
from taxonomy.selectors import label_list

from .. import forms
from .base import REFUSED, draft_state, go_to, graph_url, project_view, render_page, save_form, source_of
from .node_page import node_page, picture_context, picture_depth

PAGE_SIZE = 50


# --- node list ------------------------------------------------------------------------------------


def _label_choices(access: ProjectAccess) -> list[tuple[str, str]]:
    return [
        (label.label_id, f"{label.label_id} · {label.name}")
        for label in label_list(project=access.project).order_by("label_id")
    ]


def _list_context(request: HtmxHttpRequest, access: ProjectAccess) -> dict[str, Any]:
    state = draft_state(access)
    source = source_of(request, state["active_release"])
    form = forms.NodeFilterForm(request.GET or None, labels=_label_choices(access))
    filters: dict[str, str] = {}
    if form.is_bound:
        form.is_valid()  # an unknown choice only drops that filter
        filters = {k: v.strip() for k, v in form.cleaned_data.items() if v and v.strip()}
    try:
        page = max(int(request.GET.get("page", 1)), 1)
    except ValueError:
        page = 1

    def read(node_type: str | None, offset: int, limit: int) -> tuple[list[NodeData], int]:
        return graph_read.read_nodes(
            project=access.project,
            source=source,
            type=node_type,
            status=filters.get("status"),
            label=filters.get("label"),
            search=filters.get("search"),
            offset=offset,
            limit=limit,
        )

    nodes, total = read(filters.get("type"), (page - 1) * PAGE_SIZE, PAGE_SIZE)
    pages = max(math.ceil(total / PAGE_SIZE), 1)
    if page > pages:  # past the end (the list shrank): show the last page
        page = pages
        nodes, total = read(filters.get("type"), (page - 1) * PAGE_SIZE, PAGE_SIZE)
    others = {k: v for k, v in filters.items() if k != "type"}
    type_counts = []
    for node_type in NODE_TYPE_CHOICES:
        _, count = read(node_type, 0, 1)
        type_counts.append(
            {
                "type": node_type,
                "count": count,
                "selected": filters.get("type") == node_type,
                "url": graph_url(
                    "node_list",
                    access,
                    **others,
                    type="" if filters.get("type") == node_type else node_type,
                    source=source if source == RELEASE else "",
                ),
            }
        )
    query = {**filters, "source": source if source == RELEASE else ""}
    shown = {lid for node in nodes for lid in node.labels}
    names = dict(
        label_list(project=access.project).filter(label_id__in=shown).values_list("label_id", "name")
    )
    return {
        **state,
        "nav": "graph",
        "source": source,
        "form": form,
        "filters": filters,
        "nodes": nodes,
        # each node with its labels as (LabelID, name) pairs: the list shows the names
        "node_rows": [(node, [(lid, names.get(lid, "")) for lid in node.labels]) for node in nodes],
        "total": total,
        "page": page,
        "pages": pages,
        "prev_url": graph_url("node_list", access, **query, page=page - 1) if page > 1 else "",
        "next_url": graph_url("node_list", access, **query, page=page + 1) if page < pages else "",
        "type_counts": type_counts,
        "draft_url": graph_url("node_list", access, **filters),
        "release_url": graph_url("node_list", access, **filters, source=RELEASE),
        "node_query": "?source=release" if source == RELEASE else "",
    }


@project_view("GET")
def node_list(request: HtmxHttpRequest, access: ProjectAccess) -> HttpResponse:
    """The draft's nodes (or the active release's), filtered, paginated, with counts per type."""
    context = _list_context(request, access)
    if request.htmx and request.htmx.target == "node-region":
        return render_page(request, "ontology/partials/node_region.html", context)
    context["create_form"] = forms.NodeForm()
    return render_page(request, "ontology/node_list.html", context)


@project_view("GET", "POST")
def node_create(request: HtmxHttpRequest, access: ProjectAccess) -> HttpResponse:
    """A new draft node. From the node list the form opens in place; a refusal stays there (422)."""
    if not access.can(Capability.CURATE):
        raise PermissionDenied(f"your role ({access.role}) may read but not curate in this project")
    if request.method == "GET":
        return render_page(
            request, "ontology/node_create.html", {"nav": "graph", "create_form": forms.NodeForm()}
        )
    form = forms.NodeForm(request.POST)
    node = save_form(
        form, lambda d: services.node_create(project=access.project, actor=request.user, node=form.to_node())
    )
    if node is not None:
        messages.success(request, f"Node {node.node_id} “{node.title}” created in the draft.")
        return go_to(request, graph_url("node_detail", access, node.node_id))
    template = "ontology/partials/node_create_form.html" if request.htmx else "ontology/node_create.html"
    return render_page(request, template, {"nav": "graph", "create_form": form}, status=REFUSED)


# --- node page ------------------------------------------------------------------------------------


@project_view("GET")
def node_detail(request: HtmxHttpRequest, access: ProjectAccess, node_id: str) -> HttpResponse:
    source = source_of(request, release_active(project_id=access.project.pk))
    return node_page(request, access, node_id, source=source)


@project_view("GET")
def node_picture(request: HtmxHttpRequest, access: ProjectAccess, node_id: str) -> HttpResponse:
    """The picture alone (htmx depth toggle); a plain request gets the whole node page at that depth."""
    source = source_of(request, release_active(project_id=access.project.pk))
    if not request.htmx:
        return redirect(
            graph_url(
                "node_detail",
                access,
                node_id,
                source=source if source == RELEASE else "",
                depth=picture_depth(request),
            )
        )
    graph_read.read_node(project=access.project, node_id=node_id, source=source)  # 404 before drawing
    context = {
        "node": {"node_id": node_id},
        **picture_context(access, node_id, source=source, depth=picture_depth(request)),
    }
    return render_page(request, "ontology/partials/picture.html", context)


def _node_write(
    request: HtmxHttpRequest,
    access: ProjectAccess,
    node_id: str,
    *,
    form: Any,
    bound_as: str,
    save: Any,
    message: str,
) -> HttpResponse:
    """One write on the node page: success → the fresh body (htmx) or a redirect; refusal → 422."""
    graph_read.read_node(project=access.project, node_id=node_id, source=DRAFT)  # 404 first
    if save_form(form, save) is not None:
        messages.success(request, message)
        if not request.htmx:
            return redirect(graph_url("node_detail", access, node_id))
        return node_page(request, access, node_id)
    return node_page(request, access, node_id, status=REFUSED, **{bound_as: form})


@project_view("POST")
def node_edit(request: HtmxHttpRequest, access: ProjectAccess, node_id: str) -> HttpResponse:
    form = forms.NodeForm(request.POST, editing=True)

    def save(data: dict[str, Any]) -> NodeData:
        current = graph_read.read_node(project=access.project, node_id=node_id, source=DRAFT)
        changes = {k: v for k, v in form.changes().items() if getattr(current, k) != v}
        if not changes:
            return current
        return services.node_update(
            project=access.project, actor=request.user, node_id=node_id, changes=changes
        )

    return _node_write(
        request,
        access,
        node_id,
        form=form,
        bound_as="edit_form",
        save=save,
        message="Node saved to the draft.",
    )


@project_view("POST")
def node_status(request: HtmxHttpRequest, access: ProjectAccess, node_id: str) -> HttpResponse:
    form = forms.NodeStatusForm(request.POST)
    return _node_write(
        request,
        access,
        node_id,
        form=form,
        bound_as="status_form",
        message="Status changed in the draft.",
        save=lambda d: services.node_set_status(
            project=access.project,
            actor=request.user,
            node_id=node_id,
            status=d["status"],
            reason=d["reason"],
        ),
    )
