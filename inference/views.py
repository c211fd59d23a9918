"""The trace viewer: recent requests of a project, and one request's decision path step by step.

Experts can also try a prompt from the browser (it runs the same pipeline as the API and leaves the
same log row), which is the quickest way to see how a taxonomy or graph edit changes routing once a
release is published.
"""

from __future__ import annotations

import uuid
from typing import Any

from django import forms
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect

from arg_platform.ui import project_view, render_page
from inference.feedback import ANSWERED_BY
from inference.models import InferenceLog
from inference.selectors import REJECTED, trace_rows, try_role_default
from inference.services import Caller, inference_call
from inference.steps.clarification import options_offered
from inference.steps.envelope import MAX_PROMPT_CHARS
from projects.access import ProjectAccess
from taxonomy.models import Label
from taxonomy.selectors import role_list

PAGE_SIZE = 50
STEP_ORDER = (
    "envelope",
    "policy",
    "lexical",
    "embed",
    "weaver",
    "landing",
    "traversal",
    "outcome",
    "postcheck",
)


class TryForm(forms.Form):
    # the one prompt limit of the API (schema, serializer, envelope): the browser counts it too
    prompt = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), max_length=MAX_PROMPT_CHARS)
    role = forms.CharField(required=False, max_length=63, help_text="policy role (empty: none)")
    # answering a tried request's "Do you mean X or Y?" as its user would (inference.steps.clarification)
    answers = forms.CharField(required=False, max_length=64, widget=forms.HiddenInput)
    choice = forms.CharField(required=False, max_length=200, widget=forms.HiddenInput)


def _roles(access: ProjectAccess) -> list[str]:
    return [r.key for r in role_list(project=access.project)]


@project_view("GET", "POST")
def trace_list(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    """Recent requests, filterable by outcome kind and flag; a form to try a prompt (curators), which
    also answers a tried request's "Do you mean X or Y?" (the trace page's option buttons). A curator's
    answer is not a user's: it records no disambiguation feedback."""
    form = TryForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        role = form.cleaned_data["role"].strip() or None
        answers = form.cleaned_data["answers"].strip()
        body: dict[str, Any] = {"prompt": form.cleaned_data["prompt"], "context": {"role": role}}
        if answers:
            body["disambiguation"] = {"request_id": answers, "choice": form.cleaned_data["choice"]}
        caller = Caller(
            project=access.project,
            request_id=getattr(request, "request_id", None) or uuid.uuid4().hex,
            name=f"user:{request.user.pk}",
            role=role,
            user_answer=False,
        )
        result = inference_call(caller=caller, body=body)
        return redirect("inference:trace_detail", access.project.slug, result.request.request_id)
    kind = request.GET.get("kind", "").strip()
    flag = request.GET.get("flag", "").strip()
    logs = trace_rows(project=access.project, kind=kind, flag=flag)
    page = Paginator(
        logs.only(
            "request_id",
            "prompt",
            "outcome_kind",
            "outcome_status",
            "flags",
            "confidence",
            "release_version",
            "created_at",
            "target_node",
            "policy_state",
            "error",
        ),
        PAGE_SIZE,
    )
    page_obj = page.get_page(request.GET.get("page"))
    rows = list(page_obj.object_list)
    return render_page(
        request,
        "inference/trace_list.html",
        {
            "nav": "traces",
            "page": page_obj,
            "rows": rows,
            "kind": kind,
            "flag": flag,
            "form": form,
            "roles": _roles(access),
            # the role "Try a request" selects first: a release that governs by role refuses none
            "default_role": form.data.get("role")
            if form.is_bound
            else try_role_default(project=access.project),
            "kinds": ["ACTION", "INFO", "MEMORY", "CLARIFY", "REFOCUS", "REFUSE", "OUT_OF_SCOPE", REJECTED],
        },
    )


def _label_names(log: InferenceLog, also: set[str]) -> dict[str, str]:
    ids = (
        set(log.labels_final)
        | set(log.labels_raw)
        | {lid for lid, _ in (log.weaver or {}).get("top_k", [])}
        | also
    )
    return dict(Label.objects.filter(project=log.project, label_id__in=ids).values_list("label_id", "name"))


@project_view("GET")
def trace_detail(request: HttpRequest, access: ProjectAccess, request_id: str) -> HttpResponse:
    """One request's decision path: envelope, policy, candidates, weaver, landing, path, outcome, timings."""
    log = InferenceLog.objects.filter(project=access.project, request_id=request_id).first()
    if log is None:
        raise Http404(f"request {request_id} not found")
    timings = log.timings_ms or {}
    total = timings.get("total") or sum(v for k, v in timings.items() if k != "total") or 1.0
    bars: list[dict[str, Any]] = [
        {"step": step, "ms": timings[step], "pct": max(1.0, 100.0 * timings[step] / total)}
        for step in STEP_ORDER
        if step in timings
    ]
    feedback = list(log.feedback.all())
    names = _label_names(log, also={item.choice for item in feedback if item.choice})
    for item in feedback:  # a disambiguation stores the LabelID; its continuation is named by the key
        # display-only attributes the template reads off the row
        item.choice_name = names.get(item.choice, "")  # type: ignore[attr-defined]
        key = item.idempotency_key or ""
        continuation = key.removeprefix(ANSWERED_BY) if key.startswith(ANSWERED_BY) else ""
        item.continuation = continuation  # type: ignore[attr-defined]
    return render_page(
        request,
        "inference/trace_detail.html",
        {
            "nav": "traces",
            "log": log,
            "bars": bars,
            "total_ms": timings.get("total"),
            "names": names,
            "feedback": feedback,
            "chosen": (log.weaver or {}).get("chosen"),
            "options": options_offered(log.outcome_details),
            "raw": sorted(
                ((names.get(k, k), k, v) for k, v in (log.labels_raw or {}).items()), key=lambda x: -x[2]
            ),
            "final": [(names.get(k, k), k, v) for k, v in (log.labels_final or {}).items()],
            "top_k": [(names.get(k, k), k, v) for k, v in (log.weaver or {}).get("top_k", [])],
            "classifier": [(names.get(k, k), k, v) for k, v in (log.weaver or {}).get("classifier", [])],
        },
    )
