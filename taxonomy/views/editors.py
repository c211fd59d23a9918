"""Editors of context typologies, policies and policy roles (list, create, edit; refusals in place)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpResponse

from arg_platform.errors import RuleViolation
from arg_platform.ui import (
    LABEL_HISTORY_SIZE,
    REFUSED,
    HtmxHttpRequest,
    audit_events,
    go_to,
    history_rows,
    project_url,
    project_view,
    render_page,
    save_form,
    shown,
)
from projects.access import ProjectAccess

from .. import forms, selectors, services
from ..models import ContextTypology, Policy, Role


def _editor(
    request: HtmxHttpRequest,
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
        return go_to(request, success_url(saved))
    status = REFUSED if request.method == "POST" else 200
    if request.htmx:
        return render_page(request, "inc/editor_form.html", {**context, "form": form}, status=status)
    return render_page(request, template, {**context, "form": form}, status=status)


@project_view("GET", "POST")
def typology_list(request: HtmxHttpRequest, access: ProjectAccess) -> HttpResponse:
    """Context typologies (inference profiles) of the project, and a form to create one."""
    defaults = forms.TypologyForm.initial_from(services.typology_as_data(ContextTypology()))
    form = forms.TypologyForm(request.POST or None, initial=defaults, auto_id="new-typology-%s")
    saved = (
        save_form(
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
        "templates": selectors.typology_list(project=None),
        "action": project_url("typologies", access),
        "submit": "Create typology",
        "form_open": request.method == "POST",
    }
    return _editor(
        request,
        access,
        template="taxonomy/typology_list.html",
        form=form,
        saved=saved,
        success_url=lambda obj: project_url("typology_detail", access, obj.key),
        context=context,
        message="Typology “{obj.name}” created.",
    )


@project_view("GET", "POST")
def typology_detail(request: HtmxHttpRequest, access: ProjectAccess, key: str) -> HttpResponse:
    typology = selectors.typology_list(project=access.project).filter(key=key).first()
    if typology is None:
        raise Http404(f"typology {key!r} not found")
    initial = forms.TypologyForm.initial_from(services.typology_as_data(typology))
    form = forms.TypologyForm(request.POST or None, initial=initial, editing=True)
    saved = (
        save_form(
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
        "action": project_url("typology_detail", access, key),
        "submit": "Save typology",
        "history": history_rows(access, audit_events(access, "typology", key)[:LABEL_HISTORY_SIZE]),
    }
    return _editor(
        request,
        access,
        template="taxonomy/typology_detail.html",
        form=form,
        saved=saved,
        success_url=lambda obj: project_url("typology_detail", access, key),
        context=context,
        message="Typology saved.",
    )


@project_view("GET", "POST")
def policy_list(request: HtmxHttpRequest, access: ProjectAccess) -> HttpResponse:
    """Policies of the project, and a form to create one."""
    form = forms.PolicyForm(
        request.POST or None, initial={"memory_scopes": ["USER"]}, auto_id="new-policy-%s"
    )
    saved = (
        save_form(
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
        "action": project_url("policies", access),
        "submit": "Create policy",
        "form_open": request.method == "POST",
    }
    return _editor(
        request,
        access,
        template="taxonomy/policy_list.html",
        form=form,
        saved=saved,
        success_url=lambda obj: project_url("policy_detail", access, obj.key),
        context=context,
        message="Policy “{obj.name}” created.",
    )


@project_view("GET", "POST")
def policy_detail(request: HtmxHttpRequest, access: ProjectAccess, key: str) -> HttpResponse:
    policy = selectors.policy_list(project=access.project).filter(key=key).first()
    if policy is None:
        raise Http404(f"policy {key!r} not found")
    form = forms.PolicyForm(request.POST or None, initial=services.policy_as_data(policy), editing=True)
    saved = (
        save_form(
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
        "label_rules": _label_rules(access, policy),
        "action": project_url("policy_detail", access, key),
        "submit": "Save policy",
        "history": history_rows(access, audit_events(access, "policy", key)[:LABEL_HISTORY_SIZE]),
    }
    return _editor(
        request,
        access,
        template="taxonomy/policy_detail.html",
        form=form,
        saved=saved,
        success_url=lambda obj: project_url("policy_detail", access, key),
        context=context,
        message="Policy saved.",
    )


def _label_rules(access: ProjectAccess, policy: Policy) -> list[tuple[str, list[Any]]]:
    """The labels a policy's label rules name, resolved to labels (None for a LabelID that is gone)."""
    ids = [*policy.allowed_labels, *policy.forbidden_labels]
    labels = {
        label.label_id: label
        for label in selectors.label_list(project=access.project).filter(label_id__in=ids)
    }
    return [
        (title, [(label_id, labels.get(label_id)) for label_id in values])
        for title, values in (("Allowed", policy.allowed_labels), ("Forbidden", policy.forbidden_labels))
    ]


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
            text = shown(value)
        rows.append((str(field.label or name), text))
    return rows


@project_view("GET", "POST")
def role_list(request: HtmxHttpRequest, access: ProjectAccess) -> HttpResponse:
    """Policy roles (people and API clients → policy), and a form to create one."""
    form = forms.RoleForm(request.POST or None, project=access.project, auto_id="new-role-%s")
    saved = (
        save_form(
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
        "action": project_url("roles", access),
        "submit": "Create role",
        "form_open": request.method == "POST",
    }
    return _editor(
        request,
        access,
        template="taxonomy/role_list.html",
        form=form,
        saved=saved,
        success_url=lambda obj: project_url("roles", access),
        context=context,
        message="Role “{obj.name}” created.",
    )


@project_view("GET", "POST")
def role_detail(request: HtmxHttpRequest, access: ProjectAccess, key: str) -> HttpResponse:
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
        save_form(
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
        "action": project_url("role_detail", access, key),
        "submit": "Save role",
        "history": history_rows(access, audit_events(access, "role", key)[:LABEL_HISTORY_SIZE]),
    }
    return _editor(
        request,
        access,
        template="taxonomy/role_detail.html",
        form=form,
        saved=saved,
        success_url=lambda obj: project_url("role_detail", access, key),
        context=context,
        message="Role saved.",
    )


@project_view("POST")
def typology_copy_template(request: HtmxHttpRequest, access: ProjectAccess) -> HttpResponse:
    """Copy a shared typology template into the project (refusals come back as a message)."""
    template_key = request.POST.get("template", "")
    key = request.POST.get("key", "").strip() or None
    try:
        typology = services.typology_copy_from_template(
            project=access.project, actor=request.user, template_key=template_key, key=key
        )
    except RuleViolation as exc:
        messages.error(request, "; ".join(f"[{v.rule}] {v.message}" for v in exc.violations))
        return go_to(request, project_url("typologies", access))
    messages.success(request, f"Typology {typology.name} copied from the shared template.")
    return go_to(request, project_url("typology_detail", access, typology.key))
