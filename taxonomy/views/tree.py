"""The taxonomy page: the cluster → label tree, live search, new clusters and labels in place."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django_htmx.http import reswap, retarget

from arg_platform.ui import (
    REFUSED,
    HtmxHttpRequest,
    project_url,
    project_view,
    render_page,
    save_form,
)
from projects.access import ProjectAccess

from .. import forms, selectors, services


def _tree_context(access: ProjectAccess, *, q: str = "", highlight: str = "") -> dict[str, Any]:
    trees = selectors.taxonomy_tree(project=access.project)
    open_ids: set[str] = set()
    if highlight:
        label = selectors.label_list(project=access.project).filter(label_id=highlight).first()
        while label is not None and label.parent is not None:
            label = label.parent
            open_ids.add(label.label_id)
    return {
        "nav": "taxonomy",
        "trees": trees,
        "label_count": sum(tree.label_count for tree in trees),
        "q": q,
        "results": selectors.label_list(project=access.project, search=q) if q else None,
        "highlight": highlight,
        "open_ids": open_ids,
    }


@project_view("GET")
def project_home(request: HtmxHttpRequest, access: ProjectAccess) -> HttpResponse:
    """A project's own address (``/p/<slug>/``): its taxonomy, for members (others get the 404 of every
    project page)."""
    return redirect(project_url("tree", access))


@project_view("GET")
def taxonomy_page(request: HtmxHttpRequest, access: ProjectAccess) -> HttpResponse:
    """The cluster → label tree; with ``q``, the labels matching a search (htmx: the region only)."""
    context = _tree_context(
        access, q=request.GET.get("q", "").strip(), highlight=request.GET.get("highlight", "")
    )
    if request.htmx:
        return render_page(request, "taxonomy/partials/tree_region.html", context)
    context["cluster_form"] = forms.ClusterForm()
    return render_page(request, "taxonomy/taxonomy.html", context)


def _tree_refreshed(request: HtmxHttpRequest, access: ProjectAccess, *, highlight: str = "") -> HttpResponse:
    """After a write from the tree page: the whole tree region again, with a fresh cluster form."""
    context = _tree_context(access, highlight=highlight)
    context["cluster_form"] = forms.ClusterForm()
    response = render_page(request, "taxonomy/partials/tree_refresh.html", context)
    return reswap(retarget(response, "#tree-region"), "outerHTML")


@project_view("POST")
def cluster_create(request: HtmxHttpRequest, access: ProjectAccess) -> HttpResponse:
    form = forms.ClusterForm(request.POST)
    cluster = save_form(
        form, lambda data: services.cluster_create(project=access.project, actor=request.user, **data)
    )
    if cluster is not None:
        messages.success(request, f"Cluster “{cluster.name}” created.")
        return _tree_refreshed(request, access) if request.htmx else redirect(project_url("tree", access))
    if request.htmx:
        return render_page(
            request, "taxonomy/partials/cluster_form.html", {"cluster_form": form}, status=REFUSED
        )
    return render_page(
        request, "taxonomy/taxonomy.html", {**_tree_context(access), "cluster_form": form}, status=REFUSED
    )


@project_view("GET", "POST")
def label_create(request: HtmxHttpRequest, access: ProjectAccess) -> HttpResponse:
    """A new label. From the tree (htmx) the form opens in place under its parent node or cluster."""
    source = request.POST if request.method == "POST" else request.GET
    parent_id, cluster_key = source.get("parent", "").strip(), source.get("cluster", "").strip()
    parent = selectors.label_list(project=access.project).filter(label_id=parent_id).first()
    if request.method == "GET" and parent_id and parent is None:
        raise Http404(f"label {parent_id} not found")
    if parent is not None and not cluster_key:
        cluster_key = parent.cluster.key
    cluster = selectors.cluster_list(project=access.project).filter(key=cluster_key).first()
    slot = f"slot-{parent_id}" if parent_id else f"slot-cluster-{cluster_key}"
    inline = bool(request.htmx)
    auto_id = f"{slot}-%s" if inline else "id_%s"
    if request.method == "GET":
        form = forms.LabelCreateForm(
            initial={"parent": parent_id, "cluster": cluster_key},
            project=access.project,
            inline=inline,
            auto_id=auto_id,
        )
        status = 200
    else:
        data = request.POST.copy()
        data["cluster"] = cluster_key
        form = forms.LabelCreateForm(data, project=access.project, inline=inline, auto_id=auto_id)
        label = save_form(
            form,
            lambda d: services.label_create(
                project=access.project,
                actor=request.user,
                name=d["name"],
                cluster_key=d["cluster"],
                parent_id=d["parent"] or None,
                description=d["description"],
                status=d["status"],
            ),
        )
        if label is not None:
            where = f"under {parent.name}" if parent is not None else f"at the root of {label.cluster.name}"
            messages.success(request, f"Label {label.label_id} “{label.name}” created {where}.")
            if request.htmx:
                return _tree_refreshed(request, access, highlight=label.label_id)
            return redirect(project_url("label_detail", access, label.label_id))
        status = REFUSED
    context = {"nav": "taxonomy", "form": form, "parent": parent, "cluster": cluster, "slot": slot}
    template = "taxonomy/partials/label_create_form.html" if inline else "taxonomy/label_create.html"
    return render_page(request, template, context, status=status)
