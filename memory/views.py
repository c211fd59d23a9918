"""The memory UI: the memory browser (episodic items by user, org, InfoType, label), InfoUnit pages with
their evidence and history, and the UNSURE staging list that reviewers resolve.

Everyone in the project reads; resolving an UNSURE item and promoting an InfoUnit need the REVIEW
capability, setting the project's merge bar the ADMIN capability (403 otherwise). Views check shape with
a form and call ``memory.services``; a refusal lands on the form (status 422) and nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.urls import reverse

from arg_platform.errors import RuleViolation
from arg_platform.ui import REFUSED, go_to, project_view, render_page
from projects.access import Capability, ProjectAccess

from . import selectors, services
from .comparator import DEFAULT_PARAMS
from .distinctions import suggestions
from .edges import session_reconstruct
from .forms import DetachForm, DistinctSetForm, MemoryFilterForm, MergeBarForm, PromoteForm, ResolveForm
from .merge_bar import merge_bar_chart, merge_bar_curve
from .models import InfoEvidence, InfoUnitEvent, MemoryEdge, RegistryAttempt

PAGE_SIZE = 50


def memory_view(*methods: str) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """The project page decorator with POST needing REVIEW: resolving memory is a reviewer's decision."""
    return project_view(*methods, post_capability=Capability.REVIEW)


def _page(request: HttpRequest, items: Any) -> Any:
    return Paginator(items, PAGE_SIZE).get_page(request.GET.get("page"))


def _staging_page(request: HttpRequest, attempts: Any) -> Any:
    """A page of the staging list, each attempt with its term hints (see ``distinctions.suggestions``)."""
    page = _page(request, attempts)
    selectors.term_hints_annotate(page.object_list)
    return page


def _query(request: HttpRequest) -> str:
    params = request.GET.copy()
    params.pop("page", None)
    return params.urlencode()


def _common(access: ProjectAccess, tab: str) -> dict[str, Any]:
    return {
        "nav": "memory",
        "tab": tab,
        "can_review": access.can(Capability.REVIEW),
        "can_admin": access.can(Capability.ADMIN),
        "staging_count": selectors.registry_unsure_list(project=access.project).count(),
    }


@memory_view("GET")
def memory_browser(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    """Episodic items, newest first, by user, org, InfoType, label, scope and flag."""
    form = MemoryFilterForm(request.GET or None)
    filters = form.cleaned_data if form.is_valid() else {}
    items = selectors.memory_list(
        project=access.project,
        user_id=filters.get("user_id", ""),
        org_id=filters.get("org_id", ""),
        info_type=filters.get("info_type", ""),
        label_id=filters.get("label", ""),
        scope=filters.get("scope", ""),
        flag=filters.get("flag", ""),
    )
    return render_page(
        request,
        "memory/browser.html",
        {**_common(access, "items"), "form": form, "page": _page(request, items), "query": _query(request)},
    )


@memory_view("GET")
def memory_detail(request: HttpRequest, access: ProjectAccess, memory_id: int) -> HttpResponse:
    """One episodic item: text, PII types scrubbed, node (and where it lives on), edges, session."""
    item = selectors.memory_get(project=access.project, pk=memory_id)
    edges_out = MemoryEdge.objects.filter(source=item).select_related("target").order_by("type", "id")
    edges_in = MemoryEdge.objects.filter(target=item).select_related("source").order_by("type", "id")
    return render_page(
        request,
        "memory/item_detail.html",
        {
            **_common(access, "items"),
            "item": item,
            "edges_out": edges_out,
            "edges_in": edges_in,
            "session": session_reconstruct(item) if item.session_id else [item],
            "attempts": item.attempts.select_related("info_key", "unit", "candidate_unit").order_by("id"),
        },
    )


@memory_view("GET")
def unit_list(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    """InfoUnits of the Info Registry, by InfoType, scope, label and subject."""
    form = MemoryFilterForm(request.GET or None)
    filters = form.cleaned_data if form.is_valid() else {}
    units = selectors.info_unit_list(
        project=access.project,
        info_type=filters.get("info_type", ""),
        scope=filters.get("scope", ""),
        label_id=filters.get("label", ""),
        subject=filters.get("user_id", "") or filters.get("org_id", ""),
    )
    return render_page(
        request,
        "memory/unit_list.html",
        {**_common(access, "units"), "form": form, "page": _page(request, units), "query": _query(request)},
    )


def _unit_context(
    access: ProjectAccess,
    pk: int,
    promote_form: PromoteForm | None = None,
    detach_form: DetachForm | None = None,
    detach_id: int | None = None,
) -> dict[str, Any]:
    unit = selectors.info_unit_get(project=access.project, pk=pk)
    evidence = list(InfoEvidence.objects.filter(unit=unit).select_related("episode").order_by("-id")[:200])
    for item in evidence:  # the words each side has and the other lacks: the Detach form's term hints
        item.unit_words, item.fact_words = suggestions(unit.canonical_statement, item.episode.text)
    return {
        **_common(access, "units"),
        "unit": unit,
        "evidence": evidence,
        "events": InfoUnitEvent.objects.filter(unit=unit).order_by("-id")[:200],
        "attempts": RegistryAttempt.objects.filter(project=access.project, candidate_unit=unit)
        .select_related("episode")
        .order_by("-id")[:50],
        "promote_form": promote_form or PromoteForm(),
        "founding_episodes": selectors.info_unit_founding_episodes(unit=unit),
        "detach_form": detach_form or DetachForm(),
        "detach_id": detach_id,
    }


@memory_view("GET")
def unit_detail(request: HttpRequest, access: ProjectAccess, unit_id: int) -> HttpResponse:
    """An InfoUnit: InfoKey, LabelPath_current, canonical form, reliability, evidence and history."""
    return render_page(request, "memory/unit_detail.html", _unit_context(access, unit_id))


@memory_view("POST")
def unit_promote(request: HttpRequest, access: ProjectAccess, unit_id: int) -> HttpResponse:
    """Mark an InfoUnit for offline consolidation (refused on weak signals alone)."""
    unit = selectors.info_unit_get(project=access.project, pk=unit_id)
    form = PromoteForm(request.POST)
    if form.is_valid():
        try:
            services.info_unit_promote(unit=unit, actor=request.user, reason=form.cleaned_data["reason"])
        except RuleViolation as exc:
            form.add_violations(exc)
        else:
            messages.success(request, f"InfoUnit #{unit.pk} is now a promotion candidate.")
            return go_to(request, reverse("memory:unit_detail", args=[access.project.slug, unit.pk]))
    return render_page(
        request, "memory/unit_detail.html", _unit_context(access, unit_id, form), status=REFUSED
    )


@memory_view("POST")
def evidence_detach(
    request: HttpRequest, access: ProjectAccess, unit_id: int, evidence_id: int
) -> HttpResponse:
    """Undo a wrong merge: the evidence's fact leaves this InfoUnit and founds one of its own."""
    unit = selectors.info_unit_get(project=access.project, pk=unit_id)
    evidence = selectors.info_evidence_get(project=access.project, pk=evidence_id, unit=unit)
    form = DetachForm(request.POST)
    if form.is_valid():
        try:
            new = services.info_evidence_detach(
                evidence=evidence, actor=request.user, reason=form.cleaned_data["reason"], terms=form.terms()
            )
        except RuleViolation as exc:
            form.add_violations(exc)
        else:
            messages.success(
                request,
                f"Memory #{evidence.episode_id} was taken off InfoUnit #{unit.pk}: it is InfoUnit #{new.pk} now.",
            )
            return go_to(request, reverse("memory:unit_detail", args=[access.project.slug, unit.pk]))
    return render_page(
        request,
        "memory/unit_detail.html",
        _unit_context(access, unit_id, detach_form=form, detach_id=evidence.pk),
        status=REFUSED,
    )


def _merge_bar(access: ProjectAccess, form: MergeBarForm | None = None) -> dict[str, Any]:
    """The project's merge bar (``selectors.registry_params``), its curve on the project's reviewed pairs
    (``memory.merge_bar``) and the form that sets it."""
    params = selectors.registry_params(project=access.project)
    slack = params.identity_slack
    pairs = selectors.reviewed_pairs(project=access.project, params=params)
    curve = merge_bar_curve(pairs)
    return {
        "slack": slack,
        "default": DEFAULT_PARAMS.identity_slack,
        "on": params.identity,
        "pairs": len(pairs),
        "same": sum(p.same for p in pairs),
        "curve": curve,
        "chart": merge_bar_chart(curve, slack),
        "operating": next((p for p in curve if p["slack"] == slack), curve[-1]),
        "form": form or MergeBarForm(initial={"identity_slack": slack}),
    }


def _staging_page_render(
    request: HttpRequest,
    access: ProjectAccess,
    *,
    error_form: ResolveForm | None = None,
    merge_bar_form: MergeBarForm | None = None,
    status: int = 200,
) -> HttpResponse:
    attempts = selectors.registry_unsure_list(project=access.project)
    return render_page(
        request,
        "memory/staging.html",
        {
            **_common(access, "staging"),
            "page": _staging_page(request, attempts),
            "query": _query(request) if status == 200 else "",
            "form": ResolveForm(),
            "error_form": error_form,
            "merge_bar": _merge_bar(access, merge_bar_form),
        },
        status=status,
    )


@memory_view("GET")
def staging_list(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    """The UNSURE staging list: facts the registry could not decide, oldest first."""
    return _staging_page_render(request, access)


@memory_view("POST")
def staging_resolve(request: HttpRequest, access: ProjectAccess, attempt_id: int) -> HttpResponse:
    """Resolve one UNSURE item as the same fact as its candidate InfoUnit, or a different one."""
    attempt = selectors.registry_attempt_get(project=access.project, pk=attempt_id)
    form = ResolveForm(request.POST)
    if form.is_valid():
        try:
            attempt = services.registry_unsure_resolve(
                attempt=attempt,
                decision=form.cleaned_data["decision"],
                actor=request.user,
                reason=form.cleaned_data["reason"],
                terms=form.terms(),
            )
        except RuleViolation as exc:
            form.add_violations(exc)
        else:
            messages.success(
                request,
                f"Resolved as {attempt.review_status}: memory #{attempt.episode_id} → InfoUnit #{attempt.unit_id}.",
            )
            return go_to(request, reverse("memory:staging", args=[access.project.slug]))
    return _staging_page_render(request, access, error_form=form, status=REFUSED)


@project_view("POST", post_capability=Capability.ADMIN)
def merge_bar_update(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    """Set the project's merge bar: every later write merges on its own only when at most that many
    words differ. A project admin's act (it changes what reaches reviewers at all)."""
    form = MergeBarForm(request.POST)
    if form.is_valid():
        try:
            services.merge_bar_set(
                project=access.project, identity_slack=form.cleaned_data["identity_slack"], actor=request.user
            )
        except RuleViolation as exc:
            form.add_violations(exc)
        else:
            slack = form.cleaned_data["identity_slack"]
            messages.success(request, f"Merge bar set to {slack}: later writes merge on their own within it.")
            return go_to(request, reverse("memory:staging", args=[access.project.slug]) + "#merge-bar")
    return _staging_page_render(request, access, merge_bar_form=form, status=REFUSED)


def _distinctions_page(
    request: HttpRequest, access: ProjectAccess, form: DistinctSetForm | None = None, status: int = 200
) -> HttpResponse:
    return render_page(
        request,
        "memory/distinctions.html",
        {
            **_common(access, "distinctions"),
            "page": _page(request, selectors.term_distinction_list(project=access.project)),
            "declare_form": form or DistinctSetForm(),
        },
        status=status,
    )


@memory_view("GET")
def distinction_list(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    """The term distinctions reviewers taught the registry (``memory.distinctions``), with Forget and a
    form to declare a set of distinct terms up front."""
    return _distinctions_page(request, access)


@memory_view("POST")
def distinction_declare(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    """Declare a set of mutually distinct terms: every pair becomes a term distinction."""
    form = DistinctSetForm(request.POST)
    if form.is_valid():
        try:
            created = services.term_distinctions_declare(
                project=access.project,
                terms=form.term_list(),
                actor=request.user,
                reason=form.cleaned_data["reason"],
            )
        except RuleViolation as exc:
            form.add_violations(exc)
        else:
            messages.success(request, f"{len(created)} new distinction(s) declared.")
            return go_to(request, reverse("memory:distinctions", args=[access.project.slug]))
    return _distinctions_page(request, access, form, status=REFUSED)


@memory_view("POST")
def distinction_delete(request: HttpRequest, access: ProjectAccess, distinction_id: int) -> HttpResponse:
    """Forget a term distinction: later pairs are left to the comparator again."""
    distinction = selectors.term_distinction_get(project=access.project, pk=distinction_id)
    services.term_distinction_delete(
        distinction=distinction, actor=request.user, reason=request.POST.get("reason", "")[:500]
    )
    messages.success(request, f"Forgot the distinction {distinction}.")
    return go_to(request, reverse("memory:distinctions", args=[access.project.slug]))
