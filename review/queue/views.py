"""The review queue in the browser, mounted at ``/p/<slug:project>/review/`` (namespace ``review``).

Access: every member of the project reads (a project the caller cannot see is a 404); deciding —
claim, assign, approve, reject, request changes, defer, publishing the approved batch — needs REVIEW;
editing a proposal needs REVIEW or CURATE (domain experts shape proposals, reviewers decide). A refused
form comes back with status 422 and is swapped in place (htmx), like in the curation UI.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from arg_platform.errors import Forbidden, NotFound, RuleViolation
from arg_platform.ui import REFUSED, HtmxHttpRequest, _to_login, go_to, render_page
from projects.access import Capability, ProjectAccess
from projects.selectors import project_access
from review.models import Proposal
from review.queue import apply_jobs, decisions, forms
from review.queue.filtersets import DEFAULT_VIEW, VIEWS
from review.queue.proposal_page import proposal_context
from review.queue.selectors import (
    proposal_filterset,
    proposal_get,
    proposal_kind_counts,
    proposal_view_counts,
    reviewer_list,
)

PAGE_SIZE = 25
DECIDE = (Capability.REVIEW,)
EDIT = (Capability.REVIEW, Capability.CURATE)
SORTS = (("-score", "score"), ("age", "age"), ("kind", "kind"), ("-updated", "updated"))


def review_view(
    *methods: str, write: tuple[Capability, ...] = DECIDE
) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """Resolve the caller in ``project`` (404 when they cannot see it); POST needs one of ``write``."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @functools.wraps(view)
        def wrapper(request: HttpRequest, project: str, **kwargs: Any) -> HttpResponse:
            if not request.user.is_authenticated:
                return _to_login(request)
            return allowed(request, project, **kwargs)

        @require_http_methods(list(methods))
        def allowed(request: HttpRequest, project: str, **kwargs: Any) -> HttpResponse:
            try:
                access = project_access(user=request.user, token=None, slug=project)
            except NotFound as exc:
                raise Http404(exc.message) from exc
            request.project_access = access  # type: ignore[attr-defined]
            if request.method == "POST" and not any(access.can(c) for c in write):
                verbs = " or ".join(c.value for c in write)
                raise PermissionDenied(f"your role ({access.role}) may read but not {verbs} here")
            try:
                return view(request, access, **kwargs)
            except NotFound as exc:
                raise Http404(exc.message) from exc
            except Forbidden as exc:
                raise PermissionDenied(exc.message) from exc

        return wrapper

    return decorate


def review_url(name: str, access: ProjectAccess, *args: Any, **query: Any) -> str:
    url = reverse(f"review:{name}", args=[access.project.slug, *args])
    query = {k: v for k, v in query.items() if v not in (None, "")}
    return f"{url}?{urlencode(query, doseq=True)}" if query else url


# --- the queue --------------------------------------------------------------------------------------


def _query_without(request: HttpRequest, *drop: str) -> str:
    params = request.GET.copy()
    for key in drop:
        params.pop(key, None)
    return params.urlencode()


def _sort_links(request: HttpRequest, current: str) -> list[dict[str, Any]]:
    base = _query_without(request, "ordering", "page")
    links = []
    for value, label in SORTS:
        name = value.lstrip("-")
        active = current.lstrip("-") == name
        # clicking the active sort flips its direction
        target = value if not active else (name if current.startswith("-") else f"-{name}")
        links.append(
            {
                "label": label,
                "url": "?" + "&".join(filter(None, [base, urlencode({"ordering": target})])),
                "active": active,
                "descending": current.startswith("-") if active else value.startswith("-"),
            }
        )
    return links


@review_view("GET")
def queue(request: HtmxHttpRequest, access: ProjectAccess) -> HttpResponse:
    """Proposals awaiting review (or another view), filtered, sorted and paginated; htmx refreshes the body."""
    filterset = proposal_filterset(project=access.project, params=request.GET, user=request.user)
    filterset.form.fields["assignee"].widget.attrs["list"] = "review-assignees"
    valid = filterset.is_valid()
    proposals = filterset.qs if valid else Proposal.objects.none()
    page = Paginator(proposals, PAGE_SIZE).get_page(request.GET.get("page"))
    view = request.GET.get("view") or DEFAULT_VIEW
    counts = proposal_view_counts(project=access.project)
    base_query = _query_without(request, "view", "page")
    context = {
        "nav": "review",
        "tab": "proposals",
        "filter_form": filterset.form,
        "filters_valid": valid,
        "page": page,
        "total": page.paginator.count,
        "view": view,
        "views": [
            {
                "key": key,
                "label": label,
                "count": counts[key],
                "url": "?" + "&".join(filter(None, [base_query, urlencode({"view": key})])),
            }
            for key, (label, _) in VIEWS.items()
        ],
        "kind_counts": proposal_kind_counts(queryset=proposals) if valid else {},
        "sort_links": _sort_links(request, request.GET.get("ordering") or "-score"),
        "page_query": _query_without(request, "page"),
        "reviewers": reviewer_list(project=access.project),
        "can_review": access.can(Capability.REVIEW),
        "approved_waiting": counts["approved"],
    }
    template = "review/partials/queue_body.html" if request.htmx else "review/queue.html"
    return render_page(request, template, context)


@review_view("POST")
def publish_approved(request: HtmxHttpRequest, access: ProjectAccess) -> HttpResponse:
    """Queue the job that applies every APPROVED proposal (the batch) and publishes one release."""
    try:
        job = apply_jobs.apply_job_open(project=access.project, actor=request.user)
    except RuleViolation as exc:
        messages.error(request, exc.message)
        return go_to(request, review_url("queue", access, view="approved"))
    messages.info(request, f"Applying the approved proposals as job #{job.pk}.")
    return go_to(request, reverse("job_detail", args=[access.project.slug, job.pk]))


# --- one proposal -----------------------------------------------------------------------------------


def _neighbours(access: ProjectAccess, proposal: Proposal, user: Any) -> dict[str, int | None]:
    """Previous and next proposal of the open queue (default order), for the n / p keys."""
    filterset = proposal_filterset(project=access.project, params={}, user=user)
    ids = list(filterset.qs.values_list("pk", flat=True))
    if proposal.pk not in ids:
        return {"previous": None, "next": ids[0] if ids else None}
    at = ids.index(proposal.pk)
    return {"previous": ids[at - 1] if at > 0 else None, "next": ids[at + 1] if at + 1 < len(ids) else None}


def _proposal_page(
    request: HtmxHttpRequest, access: ProjectAccess, proposal: Proposal, *, status: int = 200, **bound: Any
) -> HttpResponse:
    proposal.refresh_from_db()
    context = proposal_context(access, proposal, **bound)
    context.update(_neighbours(access, proposal, request.user))
    context["edit_url"] = review_url("proposal_edit", access, proposal.pk)
    template = "review/partials/proposal_body.html" if request.htmx else "review/proposal.html"
    return render_page(request, template, context, status=status)


@review_view("GET")
def proposal_detail(request: HtmxHttpRequest, access: ProjectAccess, pk: int) -> HttpResponse:
    return _proposal_page(request, access, proposal_get(project=access.project, proposal_id=pk))


def _decide(
    request: HtmxHttpRequest,
    access: ProjectAccess,
    pk: int,
    form_class: type,
    form_key: str,
    act: Callable[[Proposal, dict[str, Any]], Any],
    done: Callable[[Proposal], str],
    **form_kwargs: Any,
) -> HttpResponse:
    """Validate ``form_class``, call the decision service, and answer with the page (422 on refusal)."""
    proposal = proposal_get(project=access.project, proposal_id=pk)
    form = form_class(request.POST, auto_id=f"{form_key.split('_')[0]}-%s", **form_kwargs)
    if form.is_valid():
        try:
            result = act(proposal, form.cleaned_data)
        except RuleViolation as exc:
            form.add_violations(exc)
        else:
            if result is not None:
                messages.success(request, done(proposal))
            if not request.htmx:
                return go_to(request, review_url("proposal_detail", access, pk))
            return _proposal_page(request, access, proposal)
    return _proposal_page(
        request, access, proposal, status=REFUSED, **{form_key: form, "open_panel": form_key}
    )


@review_view("POST")
def proposal_claim(request: HtmxHttpRequest, access: ProjectAccess, pk: int) -> HttpResponse:
    proposal = proposal_get(project=access.project, proposal_id=pk)
    try:
        decisions.proposal_claim(proposal=proposal, actor=request.user)
    except RuleViolation as exc:
        messages.error(request, exc.message)
        return _proposal_page(request, access, proposal, status=REFUSED)
    messages.success(request, f"Proposal #{pk} is yours to review.")
    return (
        _proposal_page(request, access, proposal)
        if request.htmx
        else go_to(request, review_url("proposal_detail", access, pk))
    )


@review_view("POST")
def proposal_assign(request: HtmxHttpRequest, access: ProjectAccess, pk: int) -> HttpResponse:
    return _decide(
        request,
        access,
        pk,
        forms.AssignForm,
        "assign_form",
        lambda p, d: decisions.proposal_assign(proposal=p, actor=request.user, assignee=d["assignee"]),
        lambda p: (
            f"Proposal #{p.pk} assigned to {p.assignee.get_username() if p.assignee is not None else 'nobody'}."
        ),
        reviewers=reviewer_list(project=access.project),
    )


@review_view("POST")
def proposal_approve(request: HtmxHttpRequest, access: ProjectAccess, pk: int) -> HttpResponse:
    """Approve; mode "now" also queues the job that applies it (with the approved batch) and publishes,
    and goes to that job's progress; mode "batch" leaves it APPROVED for the next application."""
    queued: list[Any] = []

    def act(proposal: Proposal, data: dict[str, Any]) -> Any:
        if data["mode"] == "now":
            queued.append(
                apply_jobs.proposal_approve_now(proposal=proposal, actor=request.user, reason=data["reason"])[
                    1
                ]
            )
            return None
        return decisions.proposal_approve(
            proposal=proposal, actor=request.user, reason=data["reason"], apply_now=False
        )

    response = _decide(
        request,
        access,
        pk,
        forms.ApproveForm,
        "approve_form",
        act,
        lambda p: f"Proposal #{p.pk} approved; it will be applied with the next release.",
    )
    if not queued:
        return response
    messages.success(request, f"Proposal #{pk} approved; job #{queued[0].pk} applies it and publishes.")
    return go_to(request, reverse("job_detail", args=[access.project.slug, queued[0].pk]))


@review_view("POST")
def proposal_reject(request: HtmxHttpRequest, access: ProjectAccess, pk: int) -> HttpResponse:
    return _decide(
        request,
        access,
        pk,
        forms.RejectForm,
        "reject_form",
        lambda p, d: decisions.proposal_reject(proposal=p, actor=request.user, reason=d["reason"]),
        lambda p: f"Proposal #{p.pk} rejected; the same candidate will not be proposed again unchanged.",
    )


@review_view("POST")
def proposal_request_changes(request: HtmxHttpRequest, access: ProjectAccess, pk: int) -> HttpResponse:
    return _decide(
        request,
        access,
        pk,
        forms.RequestChangesForm,
        "changes_form",
        lambda p, d: decisions.proposal_request_changes(proposal=p, actor=request.user, reason=d["reason"]),
        lambda p: f"Changes requested on proposal #{p.pk}.",
    )


@review_view("POST")
def proposal_defer(request: HtmxHttpRequest, access: ProjectAccess, pk: int) -> HttpResponse:
    return _decide(
        request,
        access,
        pk,
        forms.DeferForm,
        "defer_form",
        lambda p, d: decisions.proposal_defer(proposal=p, actor=request.user, reason=d["reason"]),
        lambda p: f"Proposal #{p.pk} deferred.",
    )


# --- the editor -------------------------------------------------------------------------------------


def _edit_page(
    request: HtmxHttpRequest, access: ProjectAccess, proposal: Proposal, *, status: int = 200, **bound: Any
) -> HttpResponse:
    context = {
        "nav": "review",
        "proposal": proposal,
        "form": bound.get("form") or forms.ProposalEditForm(proposal=proposal),
        "json_form": bound.get("json_form")
        or forms.ChangesetJsonForm(initial=forms.ChangesetJsonForm.initial_for(proposal), auto_id="json-%s"),
        "json_open": "json_form" in bound,
        "detail_url": review_url("proposal_detail", access, proposal.pk),
    }
    return render_page(request, "review/proposal_edit.html", context, status=status)


@review_view("GET", "POST", write=EDIT)
def proposal_edit(request: HtmxHttpRequest, access: ProjectAccess, pk: int) -> HttpResponse:
    """Edit an open proposal (title, summary, operations); experts and reviewers."""
    proposal = proposal_get(project=access.project, proposal_id=pk)
    if request.method == "GET":
        return _edit_page(request, access, proposal)
    if "changeset_json" in request.POST:
        form: Any = forms.ChangesetJsonForm(request.POST, auto_id="json-%s")
        bound_key = "json_form"

        def edit(data: dict[str, Any]) -> Any:
            return decisions.proposal_edit(
                proposal=proposal, actor=request.user, changeset=data["changeset_json"], reason=data["reason"]
            )

    else:
        form = forms.ProposalEditForm(request.POST, proposal=proposal)
        bound_key = "form"

        def edit(data: dict[str, Any]) -> Any:
            return decisions.proposal_edit(
                proposal=proposal,
                actor=request.user,
                title=data["title"],
                summary=data["summary"],
                changeset=form.edited_changeset(),
                reason=data["reason"],
            )

    if form.is_valid():
        try:
            edit(form.cleaned_data)
        except RuleViolation as exc:
            form.add_violations(exc)
        else:
            messages.success(request, f"Proposal #{pk} updated.")
            return go_to(request, review_url("proposal_detail", access, pk))
    return _edit_page(request, access, proposal, status=REFUSED, **{bound_key: form})
