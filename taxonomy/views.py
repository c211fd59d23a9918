"""Browser curation of core knowledge: taxonomy tree, label page, typology/policy/role editors, history.

Pages are server-rendered; an htmx request to the same view gets the fragment it swaps. Each view
checks shape with a form, then calls a service of ``taxonomy.services``; a ``RuleViolation`` is put
back on the form next to the field it names (with the rule name) and nothing is saved.

Access: every view resolves the caller in the project (a project the caller cannot see is a 404)
and puts the ``ProjectAccess`` on ``request.project_access`` for the templates; any POST needs the
CURATE capability (403 otherwise), so reviewers read and never write.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Q
from django.forms import Form
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_http_methods
from django_htmx.http import HttpResponseClientRedirect, reswap, retarget

from arg_platform.errors import Forbidden, NotFound, RuleViolation
from arg_platform.models import AuditEvent
from projects.access import Capability, ProjectAccess
from projects.selectors import project_access, project_list_for_user

from . import forms, selectors, services
from .models import ContextTypology, Label, LabelIncompatibility, Policy, Role

REFUSED = 422  # the form came back with errors: htmx swaps it in place (see base.html's htmx-config)
HISTORY_PAGE_SIZE = 50
LABEL_HISTORY_SIZE = 20


def project_view(*methods: str) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """Resolve the caller in ``project`` (404 when they cannot see it); POST needs CURATE (403)."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @login_required
        @require_http_methods(list(methods))
        @functools.wraps(view)
        def wrapper(request: HttpRequest, project: str, **kwargs: Any) -> HttpResponse:
            try:
                access = project_access(user=request.user, token=None, slug=project)
            except NotFound as exc:
                raise Http404(exc.message) from exc
            request.project_access = access  # type: ignore[attr-defined]
            if request.method == "POST" and not access.can(Capability.CURATE):
                raise PermissionDenied(f"your role ({access.role}) may read but not curate in this project")
            try:
                return view(request, access, **kwargs)
            except NotFound as exc:
                raise Http404(exc.message) from exc
            except Forbidden as exc:
                raise PermissionDenied(exc.message) from exc

        return wrapper

    return decorate


def _render(request: HttpRequest, template: str, context: dict[str, Any], status: int = 200) -> HttpResponse:
    """Render a page, or (htmx) a fragment followed by an out-of-band refresh of the flash messages."""
    access: ProjectAccess = request.project_access  # type: ignore[attr-defined]
    context = {"project": access.project, "can_curate": access.can(Capability.CURATE), **context}
    if not request.htmx:
        context.setdefault("user_projects", project_list_for_user(user=request.user))
        return render(request, template, context, status=status)
    html = render_to_string(template, context, request) + render_to_string(
        "inc/messages.html", {"oob": True}, request
    )
    return HttpResponse(html, status=status)


def _save(form: Any, save: Callable[[dict[str, Any]], Any]) -> Any | None:
    """Validate ``form`` and call the service in ``save``; a refusal lands on the form. None when refused."""
    if not form.is_valid():
        return None
    try:
        return save(form.cleaned_data)
    except RuleViolation as exc:
        form.add_violations(exc)
        return None


def _go(request: HttpRequest, url: str) -> HttpResponse:
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


def _url(name: str, access: ProjectAccess, *args: Any) -> str:
    return reverse(f"taxonomy:{name}", args=[access.project.slug, *args])


# --- taxonomy tree --------------------------------------------------------------------------------


def _tree_context(access: ProjectAccess, *, q: str = "", highlight: str = "") -> dict[str, Any]:
    trees = selectors.taxonomy_tree(project=access.project)
    open_ids: set[str] = set()
    if highlight:
        label = (
            Label.objects.filter(project=access.project, label_id=highlight).select_related("parent").first()
        )
        while label is not None and label.parent_id:
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
def taxonomy_page(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    """The cluster → label tree; with ``q``, the labels matching a search (htmx: the region only)."""
    context = _tree_context(
        access, q=request.GET.get("q", "").strip(), highlight=request.GET.get("highlight", "")
    )
    if request.htmx:
        return _render(request, "taxonomy/partials/tree_region.html", context)
    context["cluster_form"] = forms.ClusterForm()
    return _render(request, "taxonomy/taxonomy.html", context)


def _tree_refreshed(request: HttpRequest, access: ProjectAccess, *, highlight: str = "") -> HttpResponse:
    """After a write from the tree page: the whole tree region again, with a fresh cluster form."""
    context = _tree_context(access, highlight=highlight)
    context["cluster_form"] = forms.ClusterForm()
    response = _render(request, "taxonomy/partials/tree_refresh.html", context)
    return reswap(retarget(response, "#tree-region"), "outerHTML")


@project_view("POST")
def cluster_create(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    form = forms.ClusterForm(request.POST)
    cluster = _save(
        form, lambda data: services.cluster_create(project=access.project, actor=request.user, **data)
    )
    if cluster is not None:
        messages.success(request, f"Cluster “{cluster.name}” created.")
        return _tree_refreshed(request, access) if request.htmx else redirect(_url("tree", access))
    if request.htmx:
        return _render(request, "taxonomy/partials/cluster_form.html", {"cluster_form": form}, status=REFUSED)
    return _render(
        request, "taxonomy/taxonomy.html", {**_tree_context(access), "cluster_form": form}, status=REFUSED
    )


@project_view("GET", "POST")
def label_create(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    """A new label. From the tree (htmx) the form opens in place under its parent node or cluster."""
    source = request.POST if request.method == "POST" else request.GET
    parent_id, cluster_key = source.get("parent", "").strip(), source.get("cluster", "").strip()
    parent = (
        Label.objects.filter(project=access.project, label_id=parent_id).select_related("cluster").first()
    )
    if request.method == "GET" and parent_id and parent is None:
        raise Http404(f"label {parent_id} not found")
    if parent is not None and not cluster_key:
        cluster_key = parent.cluster.key
    cluster = selectors.cluster_list(project=access.project).filter(key=cluster_key).first()
    slot = f"slot-{parent_id}" if parent_id else f"slot-cluster-{cluster_key}"
    inline = bool(request.htmx)
    form_kwargs = {
        "project": access.project,
        "inline": inline,
        "auto_id": f"{slot}-%s" if inline else "id_%s",
    }
    if request.method == "GET":
        form = forms.LabelCreateForm(initial={"parent": parent_id, "cluster": cluster_key}, **form_kwargs)
        status = 200
    else:
        data = request.POST.copy()
        data["cluster"] = cluster_key
        form = forms.LabelCreateForm(data, **form_kwargs)
        label = _save(
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
            return redirect(_url("label_detail", access, label.label_id))
        status = REFUSED
    context = {"nav": "taxonomy", "form": form, "parent": parent, "cluster": cluster, "slot": slot}
    template = "taxonomy/partials/label_create_form.html" if inline else "taxonomy/label_create.html"
    return _render(request, template, context, status=status)


# --- label page -----------------------------------------------------------------------------------

LABEL_BODY = "taxonomy/partials/label_body.html"
LABEL_TERMS = "taxonomy/partials/label_terms_response.html"
LABEL_INCOMPAT = "taxonomy/partials/label_incompat_response.html"
TERM_KINDS = {
    "synonyms": {
        "title": "Synonyms",
        "noun": "synonym",
        "add": services.label_synonym_add,
        "remove": services.label_synonym_remove,
    },
    "examples": {
        "title": "Example utterances",
        "noun": "example",
        "add": services.label_example_add,
        "remove": services.label_example_remove,
    },
}


def _ontology_nodes(access: ProjectAccess, label: Label) -> list[Any]:
    """Ontology nodes attached to the label, when the ontology app offers the selector."""
    from ontology import selectors as ontology_selectors

    if not hasattr(ontology_selectors, "nodes_for_label"):
        return []
    return list(ontology_selectors.nodes_for_label(project=access.project, label_id=label.label_id))


def _term_section(access: ProjectAccess, label: Label, kind: str, form: Form | None = None) -> dict[str, Any]:
    spec = TERM_KINDS[kind]
    return {
        "kind": kind,
        "title": spec["title"],
        "noun": spec["noun"],
        "items": list(getattr(label, kind)),
        "form": form or forms.LabelTermForm(noun=spec["noun"]),
        "add_url": _url(f"label_{spec['noun']}_add", access, label.label_id),
        "remove_url": _url(f"label_{spec['noun']}_remove", access, label.label_id),
    }


def _label_context(access: ProjectAccess, label: Label, bound: dict[str, Any]) -> dict[str, Any]:
    ancestors = []
    current = label.parent
    while current is not None and len(ancestors) < 64:
        ancestors.insert(0, current)
        current = current.parent
    incompatibilities = [
        (inc, inc.label_b if inc.label_a_id == label.pk else inc.label_a)
        for inc in LabelIncompatibility.objects.filter(
            Q(label_a=label) | Q(label_b=label), project=access.project
        )
        .select_related("label_a", "label_b")
        .order_by("pk")
    ]
    history = AuditEvent.objects.filter(
        project=access.project, object_type="label", object_key=label.label_id
    )
    return {
        "nav": "taxonomy",
        "label": label,
        "ancestors": ancestors,
        "children": label.children.order_by("name"),
        "edit_form": bound.get("edit_form")
        or forms.LabelEditForm(initial={"name": label.name, "description": label.description}),
        "move_form": bound.get("move_form") or forms.LabelMoveForm(label=label),
        "status_form": bound.get("status_form") or forms.LabelStatusForm(initial={"status": label.status}),
        "incompat_form": bound.get("incompat_form") or forms.IncompatibilityForm(label=label),
        "synonyms_section": _term_section(access, label, "synonyms", bound.get("synonyms")),
        "examples_section": _term_section(access, label, "examples", bound.get("examples")),
        "incompatibilities": incompatibilities,
        "ontology_nodes": _ontology_nodes(access, label),
        "history": _history_rows(access, history[:LABEL_HISTORY_SIZE]),
        "history_count": history.count(),
    }


def _label_page(
    request: HttpRequest,
    access: ProjectAccess,
    label: Label,
    *,
    fragment: str = LABEL_BODY,
    status: int = 200,
    **bound: Any,
) -> HttpResponse:
    context = _label_context(access, label, bound)
    if request.htmx:
        context["section"] = context.get(f"{bound.get('section', '')}_section")
        return _render(request, fragment, context, status=status)
    return _render(request, "taxonomy/label_detail.html", context, status=status)


@project_view("GET")
def label_detail(request: HttpRequest, access: ProjectAccess, label_id: str) -> HttpResponse:
    label = selectors.label_get(project=access.project, label_id=label_id)
    return _label_page(request, access, label)


def _label_write(
    request: HttpRequest,
    access: ProjectAccess,
    label_id: str,
    *,
    form: Any,
    bound_as: str,
    save: Callable[[Label, dict[str, Any]], Any],
    message: str,
    fragment: str = LABEL_BODY,
    anchor: str = "",
) -> HttpResponse:
    """One write on the label page: success → the fresh fragment (htmx) or a redirect; refusal → 422."""
    label = selectors.label_get(project=access.project, label_id=label_id)
    bound_form = form(label)
    section = bound_as if bound_as in TERM_KINDS else ""
    if _save(bound_form, lambda data: save(label, data)) is not None:
        messages.success(request, message)
        if not request.htmx:
            return redirect(_url("label_detail", access, label_id) + anchor)
        label = selectors.label_get(project=access.project, label_id=label_id)
        return _label_page(request, access, label, fragment=fragment, section=section)
    return _label_page(
        request, access, label, fragment=fragment, status=REFUSED, section=section, **{bound_as: bound_form}
    )


@project_view("POST")
def label_edit(request: HttpRequest, access: ProjectAccess, label_id: str) -> HttpResponse:
    return _label_write(
        request,
        access,
        label_id,
        bound_as="edit_form",
        message="Label saved.",
        form=lambda label: forms.LabelEditForm(request.POST),
        save=lambda label, d: services.label_update(
            label=label, actor=request.user, name=d["name"], description=d["description"], reason=d["reason"]
        ),
    )


@project_view("POST")
def label_move(request: HttpRequest, access: ProjectAccess, label_id: str) -> HttpResponse:
    return _label_write(
        request,
        access,
        label_id,
        bound_as="move_form",
        message="Label moved.",
        form=lambda label: forms.LabelMoveForm(request.POST, label=label),
        save=lambda label, d: services.label_move(
            label=label, actor=request.user, reason=d["reason"], **d["target"]
        ),
    )


@project_view("POST")
def label_status(request: HttpRequest, access: ProjectAccess, label_id: str) -> HttpResponse:
    return _label_write(
        request,
        access,
        label_id,
        bound_as="status_form",
        message="Status changed.",
        form=lambda label: forms.LabelStatusForm(request.POST),
        save=lambda label, d: services.label_set_status(
            label=label, actor=request.user, status=d["status"], reason=d["reason"]
        ),
    )


@project_view("POST")
def label_term_add(request: HttpRequest, access: ProjectAccess, label_id: str, kind: str) -> HttpResponse:
    """Add a synonym or an example utterance in place."""
    spec = TERM_KINDS[kind]
    return _label_write(
        request,
        access,
        label_id,
        bound_as=kind,
        fragment=LABEL_TERMS,
        anchor=f"#{kind}-section",
        message=f"{spec['noun'].capitalize()} added.",
        form=lambda label: forms.LabelTermForm(request.POST, noun=spec["noun"]),
        save=lambda label, d: spec["add"](label=label, actor=request.user, text=d["text"]),
    )


@project_view("POST")
def label_term_remove(request: HttpRequest, access: ProjectAccess, label_id: str, kind: str) -> HttpResponse:
    """Remove a synonym or an example utterance in place."""
    spec = TERM_KINDS[kind]
    label = selectors.label_get(project=access.project, label_id=label_id)
    form = forms.LabelTermRemoveForm(request.POST)
    if not form.is_valid():
        raise Http404("nothing to remove")
    spec["remove"](label=label, actor=request.user, text=form.cleaned_data["text"])
    messages.success(request, f"{spec['noun'].capitalize()} removed.")
    if not request.htmx:
        return redirect(_url("label_detail", access, label_id) + f"#{kind}-section")
    label = selectors.label_get(project=access.project, label_id=label_id)
    return _label_page(request, access, label, fragment=LABEL_TERMS, section=kind)


@project_view("POST")
def incompatibility_add(request: HttpRequest, access: ProjectAccess, label_id: str) -> HttpResponse:
    return _label_write(
        request,
        access,
        label_id,
        bound_as="incompat_form",
        fragment=LABEL_INCOMPAT,
        anchor="#incompatibilities-section",
        message="Incompatibility declared.",
        form=lambda label: forms.IncompatibilityForm(request.POST, label=label),
        save=lambda label, d: services.incompatibility_create(
            project=access.project,
            actor=request.user,
            label_a=label.label_id,
            label_b=d["other"],
            reason=d["reason"],
        ),
    )


@project_view("POST")
def incompatibility_remove(
    request: HttpRequest, access: ProjectAccess, label_id: str, pk: int
) -> HttpResponse:
    label = selectors.label_get(project=access.project, label_id=label_id)
    inc = LabelIncompatibility.objects.filter(project=access.project, pk=pk).first()
    if inc is None or label.pk not in (inc.label_a_id, inc.label_b_id):
        raise Http404("incompatibility not found")
    services.incompatibility_delete(incompatibility=inc, actor=request.user)
    messages.success(request, "Incompatibility removed.")
    if not request.htmx:
        return redirect(_url("label_detail", access, label_id) + "#incompatibilities-section")
    return _label_page(request, access, label, fragment=LABEL_INCOMPAT)


# --- typologies, policies, roles ------------------------------------------------------------------


def _editor(
    request: HttpRequest,
    access: ProjectAccess,
    *,
    template: str,
    form: Any,
    saved: Any,
    success_url: Callable[[Any], str],
    context: dict[str, Any],
    message: str,
) -> HttpResponse:
    """The end of a create/edit view: success → the object's page; refusal → the form again (422).

    ``message`` is formatted with the saved object as ``obj``.
    """
    if saved is not None:
        messages.success(request, message.format(obj=saved))
        return _go(request, success_url(saved))
    status = REFUSED if request.method == "POST" else 200
    if request.htmx:
        return _render(request, "inc/editor_form.html", {**context, "form": form}, status=status)
    return _render(request, template, {**context, "form": form}, status=status)


@project_view("GET", "POST")
def typology_list(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    """Context typologies (inference profiles) of the project, and a form to create one."""
    defaults = forms.TypologyForm.initial_from(services.typology_as_data(ContextTypology()))
    form = forms.TypologyForm(request.POST or None, initial=defaults, auto_id="new-typology-%s")
    saved = (
        _save(
            form,
            lambda d: services.typology_save(project=access.project, actor=request.user, data=form.to_data()),
        )
        if request.method == "POST"
        else None
    )
    context = {
        "nav": "typologies",
        "form_template": "taxonomy/partials/typology_fields.html",
        "typologies": selectors.typology_list(project=access.project),
        "action": _url("typologies", access),
        "submit": "Create typology",
        "form_open": request.method == "POST",
    }
    return _editor(
        request,
        access,
        template="taxonomy/typology_list.html",
        form=form,
        saved=saved,
        success_url=lambda obj: _url("typology_detail", access, obj.key),
        context=context,
        message="Typology “{obj.name}” created.",
    )


@project_view("GET", "POST")
def typology_detail(request: HttpRequest, access: ProjectAccess, key: str) -> HttpResponse:
    typology = selectors.typology_list(project=access.project).filter(key=key).first()
    if typology is None:
        raise Http404(f"typology {key!r} not found")
    initial = forms.TypologyForm.initial_from(services.typology_as_data(typology))
    form = forms.TypologyForm(request.POST or None, initial=initial, editing=True)
    saved = (
        _save(
            form,
            lambda d: services.typology_save(
                project=access.project, actor=request.user, data=form.to_data(), typology=typology
            ),
        )
        if request.method == "POST"
        else None
    )
    context = {
        "nav": "typologies",
        "form_template": "taxonomy/partials/typology_fields.html",
        "typology": typology,
        "data": services.typology_as_data(typology),
        "action": _url("typology_detail", access, key),
        "submit": "Save typology",
        "history": _history_rows(access, _events(access, "typology", key)[:LABEL_HISTORY_SIZE]),
    }
    return _editor(
        request,
        access,
        template="taxonomy/typology_detail.html",
        form=form,
        saved=saved,
        success_url=lambda obj: _url("typology_detail", access, key),
        context=context,
        message="Typology saved.",
    )


@project_view("GET", "POST")
def policy_list(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    """Policies of the project, and a form to create one."""
    form = forms.PolicyForm(
        request.POST or None, initial={"memory_scopes": ["USER"]}, auto_id="new-policy-%s"
    )
    saved = (
        _save(
            form,
            lambda d: services.policy_save(project=access.project, actor=request.user, data=form.to_data()),
        )
        if request.method == "POST"
        else None
    )
    context = {
        "nav": "policies",
        "form_template": "taxonomy/partials/policy_fields.html",
        "policies": selectors.policy_list(project=access.project),
        "action": _url("policies", access),
        "submit": "Create policy",
        "form_open": request.method == "POST",
    }
    return _editor(
        request,
        access,
        template="taxonomy/policy_list.html",
        form=form,
        saved=saved,
        success_url=lambda obj: _url("policy_detail", access, obj.key),
        context=context,
        message="Policy “{obj.name}” created.",
    )


@project_view("GET", "POST")
def policy_detail(request: HttpRequest, access: ProjectAccess, key: str) -> HttpResponse:
    policy = selectors.policy_list(project=access.project).filter(key=key).first()
    if policy is None:
        raise Http404(f"policy {key!r} not found")
    form = forms.PolicyForm(request.POST or None, initial=services.policy_as_data(policy), editing=True)
    saved = (
        _save(
            form,
            lambda d: services.policy_save(
                project=access.project, actor=request.user, data=form.to_data(), policy=policy
            ),
        )
        if request.method == "POST"
        else None
    )
    context = {
        "nav": "policies",
        "form_template": "taxonomy/partials/policy_fields.html",
        "policy": policy,
        "fields": _policy_fields(policy),
        "roles": policy.roles.order_by("key"),
        "action": _url("policy_detail", access, key),
        "submit": "Save policy",
        "history": _history_rows(access, _events(access, "policy", key)[:LABEL_HISTORY_SIZE]),
    }
    return _editor(
        request,
        access,
        template="taxonomy/policy_detail.html",
        form=form,
        saved=saved,
        success_url=lambda obj: _url("policy_detail", access, key),
        context=context,
        message="Policy saved.",
    )


def _policy_fields(policy: Policy) -> list[tuple[str, str]]:
    """A policy as (label, text) rows for the read-only view."""
    form = forms.PolicyForm()
    rows = []
    for name in services.POLICY_FIELDS:
        if name in ("name", "description"):
            continue
        field = form.fields[name]
        value = getattr(policy, name)
        if isinstance(field, forms.LinesField):
            text = "\n".join(field.format_item(item) for item in value) or "—"
        else:
            text = _shown(value)
        rows.append((str(field.label or name), text))
    return rows


@project_view("GET", "POST")
def role_list(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    """Policy roles (people and API clients → policy), and a form to create one."""
    form = forms.RoleForm(request.POST or None, project=access.project, auto_id="new-role-%s")
    saved = (
        _save(
            form,
            lambda d: services.role_save(
                project=access.project,
                actor=request.user,
                key=d["key"],
                name=d["name"],
                policy_key=d["policy"],
                default_typology_key=d["default_typology"] or None,
            ),
        )
        if request.method == "POST"
        else None
    )
    context = {
        "nav": "roles",
        "form_template": "taxonomy/partials/role_fields.html",
        "roles": selectors.role_list(project=access.project),
        "action": _url("roles", access),
        "submit": "Create role",
        "form_open": request.method == "POST",
    }
    return _editor(
        request,
        access,
        template="taxonomy/role_list.html",
        form=form,
        saved=saved,
        success_url=lambda obj: _url("roles", access),
        context=context,
        message="Role “{obj.name}” created.",
    )


@project_view("GET", "POST")
def role_detail(request: HttpRequest, access: ProjectAccess, key: str) -> HttpResponse:
    role: Role | None = selectors.role_list(project=access.project).filter(key=key).first()
    if role is None:
        raise Http404(f"role {key!r} not found")
    initial = {
        "key": role.key,
        "name": role.name,
        "policy": role.policy.key,
        "default_typology": role.default_typology.key if role.default_typology else "",
    }
    form = forms.RoleForm(request.POST or None, project=access.project, editing=True, initial=initial)
    saved = (
        _save(
            form,
            lambda d: services.role_save(
                project=access.project,
                actor=request.user,
                key=role.key,
                name=d["name"],
                policy_key=d["policy"],
                default_typology_key=d["default_typology"] or None,
                role=role,
            ),
        )
        if request.method == "POST"
        else None
    )
    context = {
        "nav": "roles",
        "form_template": "taxonomy/partials/role_fields.html",
        "role": role,
        "action": _url("role_detail", access, key),
        "submit": "Save role",
        "history": _history_rows(access, _events(access, "role", key)[:LABEL_HISTORY_SIZE]),
    }
    return _editor(
        request,
        access,
        template="taxonomy/role_detail.html",
        form=form,
        saved=saved,
        success_url=lambda obj: _url("role_detail", access, key),
        context=context,
        message="Role saved.",
    )


# --- history --------------------------------------------------------------------------------------


def _events(access: ProjectAccess, object_type: str = "", object_key: str = "") -> Any:
    events = AuditEvent.objects.filter(project=access.project).order_by("-created_at", "-id")
    if object_type:
        events = events.filter(object_type=object_type)
    if object_key:
        events = events.filter(object_key=object_key)
    return events


def _shown(value: Any) -> str:
    if value is None or value == "" or value == []:
        return "—"
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ", ".join(value)
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _object_url(access: ProjectAccess, event: AuditEvent) -> str:
    routes = {
        "label": "label_detail",
        "typology": "typology_detail",
        "policy": "policy_detail",
        "role": "role_detail",
    }
    if event.object_type in routes:
        return _url(routes[event.object_type], access, event.object_key)
    if event.object_type == "cluster":
        return _url("tree", access) + f"#cluster-{event.object_key}"
    return ""


def _history_rows(access: ProjectAccess, events: Any) -> list[dict[str, Any]]:
    """Audit events with their changed fields as (field, before, after) rows."""
    rows = []
    for event in events:
        fields = list(dict.fromkeys([*event.before, *event.after]))
        changes = [(f, _shown(event.before.get(f)), _shown(event.after.get(f))) for f in fields]
        rows.append({"event": event, "changes": changes, "url": _object_url(access, event)})
    return rows


@project_view("GET")
def history(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    """The audit trail of the project: who changed what, when and why — newest first."""
    types = (
        AuditEvent.objects.filter(project=access.project)
        .order_by("object_type")
        .values_list("object_type", flat=True)
        .distinct()
    )
    form = forms.HistoryFilterForm(request.GET or None, object_types=list(types))
    object_type = object_key = ""
    if form.is_valid():
        object_type, object_key = form.cleaned_data["object_type"], form.cleaned_data["object_key"].strip()
    page = Paginator(_events(access, object_type, object_key), HISTORY_PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    query = urlencode({k: v for k, v in (("object_type", object_type), ("object_key", object_key)) if v})
    context = {
        "nav": "history",
        "form": form,
        "page": page,
        "rows": _history_rows(access, page.object_list),
        "query": query,
    }
    if request.htmx:
        return _render(request, "taxonomy/partials/history_table.html", context)
    return _render(request, "taxonomy/history.html", context)
