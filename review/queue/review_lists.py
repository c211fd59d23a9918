"""The other review lists (ARG §3.4.2, §2.10, §3.2.4.1), next to the proposal queue:

* **silent successes** — Info answers the user never reacted to, sampled by the nightly loop from
  important zones; the reviewer says whether the answer was truly helpful (a reviewer label: the
  request stays silent and UNCERTAIN; the labels recalibrate C_info and the silence penalty);
* **memory merges** — Info Registry attempts staged as UNSURE, resolved SAME / DIFFERENT through the
  memory app's service;
* **SHADOW labels** — child labels in shadow evaluation, activated through the taxonomy service.

Reading needs membership; deciding needs REVIEW (see ``review.queue.views.review_view``).
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse

from arg_platform.errors import RuleViolation
from arg_platform.ui import REFUSED, go_to, render_page
from memory.selectors import registry_attempt_get, registry_unsure_list, term_hints_annotate
from memory.services import registry_unsure_resolve
from ontology.selectors import node_count_for_label
from projects.access import Capability, ProjectAccess
from review.models import Proposal, ProposalKind
from review.queue import decisions, forms
from review.queue.selectors import shadow_label_list, silent_review_summary, silent_sample_list
from review.queue.views import review_url, review_view

PAGE_SIZE = 25


def _base(access: ProjectAccess, tab: str) -> dict[str, Any]:
    return {"nav": "review", "tab": tab, "can_review": access.can(Capability.REVIEW)}


# --- silent successes -------------------------------------------------------------------------------


def _silent_page(
    request: HttpRequest, access: ProjectAccess, *, status: int = 200, bound: tuple[str, Any] | None = None
) -> HttpResponse:
    samples = silent_sample_list(project=access.project)
    rows = []
    for sample in samples:
        request_id = sample.log.request_id
        form = (
            bound[1]
            if bound and bound[0] == request_id
            else forms.SilentLabelForm(auto_id=f"s-{request_id}-%s")
        )
        rows.append({"sample": sample, "form": form})
    context = {
        **_base(access, "silent"),
        "rows": rows,
        "summary": silent_review_summary(project=access.project),
    }
    return render_page(request, "review/silent_list.html", context, status=status)


@review_view("GET")
def silent_list(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    return _silent_page(request, access)


@review_view("POST")
def silent_label(request: HttpRequest, access: ProjectAccess, request_id: str) -> HttpResponse:
    form = forms.SilentLabelForm(request.POST, auto_id=f"s-{request_id}-%s")
    if form.is_valid():
        try:
            decisions.silent_success_label(
                project=access.project,
                request_id=request_id,
                actor=request.user,
                helpful=form.cleaned_data["helpful"],
                comment=form.cleaned_data["comment"],
            )
        except RuleViolation as exc:
            form.add_violations(exc)
            messages.error(request, exc.message)  # the row may have left the list
        else:
            verdict = "truly helpful" if form.cleaned_data["helpful"] else "not helpful"
            messages.success(request, f"Request {request_id} labelled {verdict}.")
            return go_to(request, review_url("silent_list", access))
    return _silent_page(request, access, status=REFUSED, bound=(request_id, form))


# --- UNSURE memory merges ---------------------------------------------------------------------------


def _merge_page(
    request: HttpRequest, access: ProjectAccess, *, status: int = 200, bound: tuple[int, Any] | None = None
) -> HttpResponse:
    page = Paginator(registry_unsure_list(project=access.project), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    term_hints_annotate(page.object_list)
    rows = [
        {
            "attempt": attempt,
            "form": bound[1]
            if bound and bound[0] == attempt.pk
            else forms.MergeResolveForm(auto_id=f"m-{attempt.pk}-%s"),
        }
        for attempt in page.object_list
    ]
    return render_page(
        request,
        "review/merge_list.html",
        {**_base(access, "merges"), "page": page, "rows": rows},
        status=status,
    )


@review_view("GET")
def merge_list(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    return _merge_page(request, access)


@review_view("POST")
def merge_resolve(request: HttpRequest, access: ProjectAccess, pk: int) -> HttpResponse:
    attempt = registry_attempt_get(project=access.project, pk=pk)
    form = forms.MergeResolveForm(request.POST, auto_id=f"m-{pk}-%s")
    if form.is_valid():
        try:
            attempt = registry_unsure_resolve(
                attempt=attempt,
                decision=form.cleaned_data["decision"],
                actor=request.user,
                reason=form.cleaned_data["reason"],
                terms=form.terms(),
            )
        except RuleViolation as exc:
            form.add_violations(exc)
            messages.error(request, exc.message)  # the row may have left the list
        else:
            messages.success(request, f"Memory merge #{pk} resolved as {attempt.review_status}.")
            return go_to(request, review_url("merge_list", access))
    return _merge_page(request, access, status=REFUSED, bound=(pk, form))


# --- SHADOW labels ----------------------------------------------------------------------------------


def _labels_page(
    request: HttpRequest, access: ProjectAccess, *, status: int = 200, bound: tuple[str, Any] | None = None
) -> HttpResponse:
    labels = list(shadow_label_list(project=access.project))
    promotions: dict[str, Proposal] = {}
    for proposal in Proposal.objects.filter(project=access.project, kind=ProposalKind.LABEL_PROMOTE).order_by(
        "-created_at"
    ):
        for key in proposal.target_keys:
            promotions.setdefault(key, proposal)
    rows = [
        {
            "label": label,
            "form": bound[1]
            if bound and bound[0] == label.label_id
            else forms.LabelActivateForm(auto_id=f"l-{label.label_id}-%s"),
            "nodes": node_count_for_label(project=access.project, label_id=label.label_id),
            "promotion": promotions.get(label.label_id),
        }
        for label in labels
    ]
    return render_page(
        request, "review/shadow_labels.html", {**_base(access, "labels"), "rows": rows}, status=status
    )


@review_view("GET")
def shadow_labels(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    return _labels_page(request, access)


@review_view("POST")
def label_activate(request: HttpRequest, access: ProjectAccess, label_id: str) -> HttpResponse:
    form = forms.LabelActivateForm(request.POST, auto_id=f"l-{label_id}-%s")
    if form.is_valid():
        try:
            label = decisions.shadow_label_activate(
                project=access.project,
                label_id=label_id,
                actor=request.user,
                reason=form.cleaned_data["reason"],
            )
        except RuleViolation as exc:
            form.add_violations(exc)
            messages.error(request, exc.message)  # the row may have left the list
        else:
            messages.success(
                request,
                f"{label.label_id} {label.name} is ACTIVE in the draft; it routes from the next release.",
            )
            return go_to(request, review_url("shadow_labels", access))
    return _labels_page(request, access, status=REFUSED, bound=(label_id, form))
