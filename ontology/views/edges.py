"""The expert's edge edits on a node page, into the draft, and the suggestions for a new edge's other end.

Each write answers with the edges section (swapped in place) and, out of band, the fresh picture and
history; a refusal answers 422 with the refused form and its rule names where it was typed.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect

from arg_platform.ui import HtmxHttpRequest
from ontology import graph_read, services
from ontology.graph_read import DRAFT
from ontology.store.port import EdgeData, NodeData
from projects.access import ProjectAccess

from .. import forms
from .base import REFUSED, graph_url, project_view, render_page, save_form
from .node_page import node_context, node_page, picture_depth

EDGES_RESPONSE = "ontology/partials/edges_response.html"
TARGET_OPTIONS = 15


def _edges_response(
    request: HtmxHttpRequest, access: ProjectAccess, node_id: str, *, status: int = 200, **bound: Any
) -> HttpResponse:
    context = node_context(access, node_id, source=DRAFT, depth=picture_depth(request), **bound)
    context["oob"] = status == 200  # a refusal changed nothing: picture and history stay as they are
    return render_page(request, EDGES_RESPONSE, context, status=status)


def _edge_write(
    request: HtmxHttpRequest,
    access: ProjectAccess,
    node_id: str,
    *,
    form: Any,
    bound: dict[str, Any],
    save: Any,
    message: Any,
) -> HttpResponse:
    graph_read.read_node(project=access.project, node_id=node_id, source=DRAFT)  # 404 first
    done = save_form(form, save)
    if done is not None:
        messages.success(request, message(form.cleaned_data) if callable(message) else message)
        if not request.htmx:
            return redirect(graph_url("node_detail", access, node_id) + "#edges-section")
        return _edges_response(request, access, node_id)
    if not request.htmx:
        return node_page(request, access, node_id, status=REFUSED, **bound)
    return _edges_response(request, access, node_id, status=REFUSED, **bound)


def _touching(form: forms.EdgeKeyForm, node_id: str) -> tuple[str, str, str]:
    """The edge key of a valid form, which must touch the node of the page (404 otherwise)."""
    if not form.is_valid():
        raise Http404("no such edge")
    key = form.key
    if node_id not in key[:2]:
        raise Http404("the edge does not touch this node")
    return key


@project_view("POST")
def edge_add(request: HtmxHttpRequest, access: ProjectAccess, node_id: str) -> HttpResponse:
    """A new edge between this node and another, in the direction chosen."""
    form = forms.EdgeAddForm(request.POST)

    def save(d: dict[str, Any]) -> EdgeData:
        other = d["other"].strip()
        source, target = (other, node_id) if d["direction"] == "in" else (node_id, other)
        edge = EdgeData(
            source=source, target=target, type=d["type"], weight=d["weight"], semantics=d["semantics"]
        )
        return services.edge_add(project=access.project, actor=request.user, edge=edge)

    return _edge_write(
        request,
        access,
        node_id,
        form=form,
        bound={"add_form": form},
        save=save,
        message=lambda d: f"Edge {d['type']} added to the draft.",
    )


@project_view("POST")
def edge_update(request: HtmxHttpRequest, access: ProjectAccess, node_id: str) -> HttpResponse:
    """A new weight or semantics for one of the node's edges."""
    key = _touching(forms.EdgeKeyForm(request.POST), node_id)
    outgoing = key[0] == node_id
    index = request.POST.get("row", "0")
    form = forms.EdgeUpdateForm(request.POST, auto_id=f"{'out' if outgoing else 'in'}-{index}-%s")
    return _edge_write(
        request,
        access,
        node_id,
        form=form,
        bound={"update_key": key, "update_form": form},
        message=f"Edge {key[2]} updated in the draft.",
        save=lambda d: services.edge_update(
            project=access.project,
            actor=request.user,
            source=key[0],
            target=key[1],
            type=key[2],
            weight=d["weight"],
            semantics=d["semantics"],
        ),
    )


@project_view("POST")
def edge_remove(request: HtmxHttpRequest, access: ProjectAccess, node_id: str) -> HttpResponse:
    form = forms.EdgeRemoveForm(request.POST)
    source, target, edge_type = _touching(form, node_id)
    graph_read.read_node(project=access.project, node_id=node_id, source=DRAFT)
    services.edge_remove(
        project=access.project,
        actor=request.user,
        source=source,
        target=target,
        type=edge_type,
        reason=form.cleaned_data["reason"],
    )
    messages.success(request, f"Edge {edge_type} removed from the draft.")
    if not request.htmx:
        return redirect(graph_url("node_detail", access, node_id) + "#edges-section")
    return _edges_response(request, access, node_id)


@project_view("GET")
def edge_targets(request: HtmxHttpRequest, access: ProjectAccess, node_id: str) -> HttpResponse:
    """Suggestions for the other end of a new edge (a ``<datalist>``), by node id or title."""
    graph_read.read_node(project=access.project, node_id=node_id, source=DRAFT)
    query = request.GET.get("edge-other", "").strip()
    nodes: list[NodeData] = []
    if query:
        found, _ = graph_read.read_nodes(
            project=access.project, source=DRAFT, search=query, limit=TARGET_OPTIONS + 1
        )
        nodes = [n for n in found if n.node_id != node_id and n.status != "REMOVED"][:TARGET_OPTIONS]
    return render_page(request, "ontology/partials/target_options.html", {"options": nodes}, flash=False)
