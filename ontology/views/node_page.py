"""What the node page shows: the node, its attachments, its edges (in/out tables), the neighbourhood
picture and its history — read from the draft or from the active release — and how it is rendered
(the whole page, or for htmx the body or a section with out-of-band refreshes)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

from django.http import HttpResponse

from arg_platform.errors import NotFound
from arg_platform.handler_targets import handler_shown
from arg_platform.ui import HtmxHttpRequest
from arg_platform.vocabulary import NodeType
from ontology import graph_read
from ontology.graph_read import DRAFT, RELEASE, Neighbourhood
from ontology.models import Release
from ontology.releases import release_active
from ontology.store.port import EdgeData, NodeData
from ontology.validator import client_text_warnings
from projects.access import Capability, ProjectAccess
from taxonomy.selectors import cluster_list, label_list

from .. import forms
from .base import NODE_HISTORY_SIZE, graph_url, node_events, node_history_rows, render_page
from .picture import Picture, picture_layout, picture_select

PICTURE_CAP = 40  # nodes drawn in the picture, the centre included
PICTURE_PROBE = 500  # nodes of a depth-2 neighbourhood read to choose the picture from (and count the rest)
NEIGHBOURS_LIMIT = 5000  # first-ring neighbours listed in the tables (a whole hub)
NODE_BODY = "ontology/partials/node_body.html"
ACTION_TYPES = {NodeType.ACTION.value, NodeType.DIRECT_ACTION.value}


def _rows(
    access: ProjectAccess,
    edges: list[EdgeData],
    other_end: str,
    titles: dict[str, NodeData],
    prefix: str,
    *,
    editable: bool,
    bound_key: tuple[str, str, str] | None,
    bound_form: Any,
) -> list[dict[str, Any]]:
    rows = []
    for index, edge in enumerate(edges):
        other_id = getattr(edge, other_end)
        refused = bound_key == edge.key
        form = None
        if editable:
            form = (
                bound_form
                if refused
                else forms.EdgeUpdateForm(
                    initial={
                        "source": edge.source,
                        "target": edge.target,
                        "type": edge.type,
                        "weight": edge.weight,
                        "semantics": edge.semantics,
                    },
                    auto_id=f"{prefix}-{index}-%s",
                )
            )
        rows.append(
            {
                "edge": edge,
                "other": titles.get(other_id),
                "other_id": other_id,
                "url": graph_url("node_detail", access, other_id),
                "form": form,
                "open": refused,
                "index": index,
            }
        )
    return rows


def edges_context(
    access: ProjectAccess,
    node: NodeData,
    *,
    source: str,
    editable: bool,
    limit: int,
    add_form: Any = None,
    update_key: tuple[str, str, str] | None = None,
    update_form: Any = None,
    **_: Any,
) -> dict[str, Any]:
    """The node's outgoing and incoming edges with the node at their other end."""
    hood = graph_read.read_neighbourhood(
        project=access.project, node_id=node.node_id, source=source, direction="both", depth=1, limit=limit
    )
    titles = {n.node_id: n for n in hood.nodes}
    outgoing = [e for e in hood.edges if e.source == node.node_id]
    incoming = [e for e in hood.edges if e.target == node.node_id]
    bound = {"editable": editable, "bound_key": update_key, "bound_form": update_form}
    if editable:
        add_form = add_form or forms.EdgeAddForm()
        add_form.fields["other"].widget.attrs.update(
            {
                "hx-get": graph_url("edge_targets", access, node.node_id),
                "hx-trigger": "input changed delay:200ms",
                "hx-target": "#edge-other-options",
                "hx-swap": "outerHTML",
                "hx-sync": "this:replace",
            }
        )
    return {
        "outgoing": _rows(access, outgoing, "target", titles, "out", **bound),
        "incoming": _rows(access, incoming, "source", titles, "in", **bound),
        "neighbour_count": len(hood.nodes) - 1,
        "hood": hood,
        "add_form": add_form if editable else None,
    }


def picture_depth(request: HtmxHttpRequest) -> int:
    """``?depth=2`` of the request, or (an htmx write) of the page it was sent from."""
    depth = request.GET.get("depth")
    if depth is None and request.htmx and request.htmx.current_url:
        depth = parse_qs(urlsplit(request.htmx.current_url).query).get("depth", [""])[0]
    return 2 if depth == "2" else 1


def picture_context(
    access: ProjectAccess, node_id: str, *, source: str, depth: int, first_ring: Neighbourhood | None = None
) -> dict[str, Any]:
    """The neighbourhood picture: at most ``PICTURE_CAP`` nodes chosen from the neighbourhood (read up
    to ``PICTURE_PROBE`` nodes), and how many it leaves out."""
    hood = first_ring
    if hood is None or depth == 2:
        hood = graph_read.read_neighbourhood(
            project=access.project,
            node_id=node_id,
            source=source,
            direction="both",
            depth=depth,
            limit=PICTURE_PROBE,
        )
    shown, more = picture_select(hood, cap=PICTURE_CAP)
    query = {"source": RELEASE if source == RELEASE else "", "depth": depth if depth == 2 else ""}
    picture: Picture = picture_layout(
        shown, depth=depth, more=more, node_url=lambda n: graph_url("node_detail", access, n, **query)
    )
    return {
        "picture": picture,
        "picture_more_plus": depth == 2 and len(hood.nodes) >= PICTURE_PROBE,  # the probe stopped counting
        "picture_source": source,
        "depth_links": [
            {
                "depth": d,
                "url": graph_url(
                    "node_detail", access, node_id, source=query["source"], depth=d if d == 2 else ""
                ),
                "picture_url": graph_url("node_picture", access, node_id, source=query["source"], depth=d),
            }
            for d in (1, 2)
        ],
    }


def _attachments(access: ProjectAccess, node: NodeData) -> dict[str, Any]:
    labels = {
        label.label_id: label for label in label_list(project=access.project).filter(label_id__in=node.labels)
    }
    clusters = {c.key: c for c in cluster_list(project=access.project).filter(key__in=node.clusters)}
    return {
        "labels": [{"label_id": lid, "label": labels.get(lid)} for lid in node.labels],
        "clusters": [{"key": key, "cluster": clusters.get(key)} for key in node.clusters],
    }


def _in_release(access: ProjectAccess, node_id: str, active: Release | None) -> bool:
    if active is None:
        return False
    try:
        graph_read.read_node(project=access.project, node_id=node_id, source=RELEASE)
    except NotFound:
        return False
    return True


def node_context(
    access: ProjectAccess, node_id: str, *, source: str, depth: int, **bound: Any
) -> dict[str, Any]:
    """Everything the node page shows; ``bound`` carries refused forms back with their errors."""
    node = graph_read.read_node(project=access.project, node_id=node_id, source=source)
    active = release_active(project_id=access.project.pk)
    editable = source == DRAFT and access.can(Capability.CURATE)
    edges = edges_context(access, node, source=source, editable=editable, limit=NEIGHBOURS_LIMIT, **bound)
    events = node_events(access, node_id)
    edit_form = bound.get("edit_form") or forms.NodeForm(
        initial=forms.NodeForm.initial_from(node), editing=True
    )
    return {
        "nav": "graph",
        "node": node,
        "source": source,
        "editable": editable,
        "depth": depth,
        "is_action": node.type in ACTION_TYPES,
        # A webhook's URL names internal infrastructure: people who cannot curate see "webhook" only.
        "handler_shown": handler_shown(node.handler, curator=access.can(Capability.CURATE)),
        "active_release": active,
        "in_release": source == RELEASE or _in_release(access, node_id, active),
        **_attachments(access, node),
        **edges,
        **picture_context(access, node_id, source=source, depth=depth, first_ring=edges["hood"]),
        "history": node_history_rows(access, node_id, events[:NODE_HISTORY_SIZE]),
        "history_count": events.count(),
        "edit_form": edit_form,
        "edit_open": "edit_form" in bound,
        # the validator's warnings about the client text (saved anyway; shown beside it)
        "text_warnings": client_text_warnings(node),
        "status_form": bound.get("status_form") or forms.NodeStatusForm(current=node.status),
        "release_url": graph_url("node_detail", access, node_id, source=RELEASE),
        "draft_url": graph_url("node_detail", access, node_id),
    }


def node_page(
    request: HtmxHttpRequest, access: ProjectAccess, node_id: str, *, status: int = 200, **bound: Any
) -> HttpResponse:
    source = bound.pop("source", None) or DRAFT
    context = node_context(access, node_id, source=source, depth=picture_depth(request), **bound)
    if request.htmx:
        return render_page(request, NODE_BODY, context, status=status)
    return render_page(request, "ontology/node_detail.html", context, status=status)
