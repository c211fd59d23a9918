"""The label page: description, path, status, synonyms/examples in place, move, incompatibilities, history."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypedDict

from django.contrib import messages
from django.db.models import Q
from django.forms import Form
from django.http import Http404, HttpResponse
from django.shortcuts import redirect

from arg_platform.audit import Actor
from arg_platform.models import AuditEvent
from arg_platform.ui import (
    LABEL_HISTORY_SIZE,
    REFUSED,
    HtmxHttpRequest,
    history_rows,
    project_url,
    project_view,
    render_page,
    save_form,
)
from projects.access import ProjectAccess

from .. import forms, selectors, services
from ..attachments import attached_nodes
from ..models import Label, LabelIncompatibility

LABEL_BODY = "taxonomy/partials/label_body.html"
LABEL_NODES_SHOWN = 200  # attached nodes listed on a label page
LABEL_TERMS = "taxonomy/partials/label_terms_response.html"
LABEL_INCOMPAT = "taxonomy/partials/label_incompat_response.html"


class TermWrite(Protocol):
    """``services.label_synonym_remove`` and its kin: one term removed from a label."""

    def __call__(self, *, label: Label, actor: Actor, text: str) -> Label: ...


class TermAdd(Protocol):
    """``services.label_synonym_add`` and its kin: one term added (``accept_similar`` confirms a term
    very close to another label's)."""

    def __call__(self, *, label: Label, actor: Actor, text: str, accept_similar: bool = False) -> Label: ...


class TermKind(TypedDict):
    title: str
    noun: str
    add: TermAdd
    remove: TermWrite


TERM_KINDS: dict[str, TermKind] = {
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


def _ontology_nodes(access: ProjectAccess, label: Label) -> list[dict[str, str]]:
    """The draft graph's nodes attached to the label: id, type and title."""
    nodes = attached_nodes(project=access.project, label_id=label.label_id, limit=LABEL_NODES_SHOWN)
    return [{"id": n.node_id, "type": n.type, "title": n.title} for n in nodes]


def _term_section(access: ProjectAccess, label: Label, kind: str, form: Form | None = None) -> dict[str, Any]:
    spec = TERM_KINDS[kind]
    return {
        "kind": kind,
        "title": spec["title"],
        "noun": spec["noun"],
        "items": list(getattr(label, kind)),
        "form": form or forms.LabelTermForm(noun=spec["noun"]),
        "add_url": project_url(f"label_{spec['noun']}_add", access, label.label_id),
        "remove_url": project_url(f"label_{spec['noun']}_remove", access, label.label_id),
    }


def _label_context(access: ProjectAccess, label: Label, bound: dict[str, Any]) -> dict[str, Any]:
    ancestors: list[Label] = []
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
        "history": history_rows(access, history[:LABEL_HISTORY_SIZE]),
        "history_count": history.count(),
    }


def _label_page(
    request: HtmxHttpRequest,
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
        return render_page(request, fragment, context, status=status)
    return render_page(request, "taxonomy/label_detail.html", context, status=status)


@project_view("GET")
def label_detail(request: HtmxHttpRequest, access: ProjectAccess, label_id: str) -> HttpResponse:
    label = selectors.label_get(project=access.project, label_id=label_id)
    return _label_page(request, access, label)


def _label_write(
    request: HtmxHttpRequest,
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
    if save_form(bound_form, lambda data: save(label, data)) is not None:
        messages.success(request, message)
        if not request.htmx:
            return redirect(project_url("label_detail", access, label_id) + anchor)
        label = selectors.label_get(project=access.project, label_id=label_id)
        return _label_page(request, access, label, fragment=fragment, section=section)
    return _label_page(
        request, access, label, fragment=fragment, status=REFUSED, section=section, **{bound_as: bound_form}
    )


@project_view("POST")
def label_edit(request: HtmxHttpRequest, access: ProjectAccess, label_id: str) -> HttpResponse:
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
def label_move(request: HtmxHttpRequest, access: ProjectAccess, label_id: str) -> HttpResponse:
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
def label_status(request: HtmxHttpRequest, access: ProjectAccess, label_id: str) -> HttpResponse:
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
def label_term_add(request: HtmxHttpRequest, access: ProjectAccess, label_id: str, kind: str) -> HttpResponse:
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
        save=lambda label, d: spec["add"](
            label=label, actor=request.user, text=d["text"], accept_similar=d["accept_similar"]
        ),
    )


@project_view("POST")
def label_term_remove(
    request: HtmxHttpRequest, access: ProjectAccess, label_id: str, kind: str
) -> HttpResponse:
    """Remove a synonym or an example utterance in place."""
    spec = TERM_KINDS[kind]
    label = selectors.label_get(project=access.project, label_id=label_id)
    form = forms.LabelTermRemoveForm(request.POST)
    if not form.is_valid():
        raise Http404("nothing to remove")
    spec["remove"](label=label, actor=request.user, text=form.cleaned_data["text"])
    messages.success(request, f"{spec['noun'].capitalize()} removed.")
    if not request.htmx:
        return redirect(project_url("label_detail", access, label_id) + f"#{kind}-section")
    label = selectors.label_get(project=access.project, label_id=label_id)
    return _label_page(request, access, label, fragment=LABEL_TERMS, section=kind)


@project_view("POST")
def incompatibility_add(request: HtmxHttpRequest, access: ProjectAccess, label_id: str) -> HttpResponse:
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
    request: HtmxHttpRequest, access: ProjectAccess, label_id: str, pk: int
) -> HttpResponse:
    label = selectors.label_get(project=access.project, label_id=label_id)
    inc = LabelIncompatibility.objects.filter(project=access.project, pk=pk).first()
    if inc is None or label.pk not in (inc.label_a_id, inc.label_b_id):
        raise Http404("incompatibility not found")
    services.incompatibility_delete(incompatibility=inc, actor=request.user)
    messages.success(request, "Incompatibility removed.")
    if not request.htmx:
        return redirect(project_url("label_detail", access, label_id) + "#incompatibilities-section")
    return _label_page(request, access, label, fragment=LABEL_INCOMPAT)
