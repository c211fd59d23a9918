"""Releases in the browser: the list, publishing the draft, activating (rolling back), and diffs.

Everyone in the project reads; publishing and activating need PUBLISH (admins). A draft the validator
refuses is shown with each refusal's rule, and no release is created. An expert, who curates but does
not publish, sees who publishes and can ask them to (``release_publish_ask``; an open request shows on
the administrators' Releases page and as a badge beside "Releases" until a release is published).
"""

from __future__ import annotations

from typing import Any

from django import forms as django_forms
from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from arg_platform.job_views import job_context
from arg_platform.jobs import job_enqueue
from arg_platform.models import Job
from arg_platform.ui import HtmxHttpRequest
from ontology import releases
from ontology.ask_threshold import (
    CALIBRATION_DOCUMENT,
    ask_override_get,
    ask_threshold_set,
    threshold_in_force,
)
from ontology.models import Release
from ontology.publish_jobs import PUBLISH_JOB, publish_job_open
from ontology.selectors import release_list as releases_of
from ontology.snapshot_registry import pin_snapshot
from ontology.tasks import release_publish_task
from projects.access import Capability, ProjectAccess
from projects.publish_requests import (
    project_publishers,
    publish_request_create,
    publish_requests_dismiss,
    publish_requests_open,
)
from taxonomy.selectors import label_list

from .. import forms
from .ask_chart import ask_chart, point_at
from .base import (
    REFUSED,
    draft_state,
    go_to,
    graph_url,
    project_view,
    render_page,
    require_publish,
    save_form,
)

RELEASES_BODY = "ontology/partials/releases_body.html"


class PublishAskForm(django_forms.Form):
    note = django_forms.CharField(
        required=False,
        max_length=500,
        label="Note for the administrators",
        widget=django_forms.Textarea(attrs={"rows": 2}),
        help_text="Optional: what changed and why it should reach clients.",
    )


RELEASE_JOBS = (PUBLISH_JOB, "review.apply_approved")  # the jobs that publish releases


def _releases_context(access: ProjectAccess, *, publish_form: Any = None) -> dict[str, Any]:
    rows = list(releases_of(project=access.project))
    versions = [r.version for r in rows]
    live = Job.objects.filter(
        project=access.project, kind__in=RELEASE_JOBS, status__in=(Job.Status.QUEUED, Job.Status.RUNNING)
    )
    return {
        **draft_state(access),
        "nav": "releases",
        "jobs": [job_context(job) for job in live],
        "can_publish": access.can(Capability.PUBLISH),
        "publish_form": publish_form or forms.PublishForm(),
        "ask_calibration": _ask_calibration(access.project.pk),
        "rows": [
            {
                "release": release,
                "previous": next((v for v in versions if v < release.version), None),
                "total_s": (release.timings or {}).get("total_s"),
                "timings": sorted((release.timings or {}).items()),
                "activate_form": forms.ActivateForm(auto_id=f"activate-v{release.version}-%s"),
            }
            for release in rows
        ],
    }


def _ask_calibration(project_id: int) -> dict[str, Any] | None:
    """The active release's ask threshold: the held-out figures it was calibrated on (the document
    ``low_confidence`` that ``inference.learning.calibration`` stores at publication), the threshold in
    force (``in_force``: calibrated, a curator's or the default) and the curve's picture (``chart``);
    ``None`` without an active release."""
    snapshot = pin_snapshot(project_id)
    if snapshot is None:
        return None
    in_force = threshold_in_force(snapshot.documents)
    found = snapshot.documents.get(CALIBRATION_DOCUMENT) or {}
    if not found and in_force["source"] == "default":
        return None
    return {
        **found,
        "in_force": in_force,
        "chart": ask_chart(in_force),
        "operating": point_at(in_force["curve"], in_force["value"]),
    }


def _ask_context(access: ProjectAccess, form: Any = None) -> dict[str, Any]:
    """The draft's ask threshold (empty: calibrated) and the form curators change it with."""
    draft = ask_override_get(project=access.project)
    return {
        "ask_draft": draft,
        "can_set_ask": access.can(Capability.CURATE),
        "ask_form": form or forms.AskThresholdForm(initial={"ask_threshold": "" if draft is None else draft}),
    }


def _newest_release_at(access: ProjectAccess) -> Any:
    """When the project's newest release was published (it answers every publish request made before)."""
    return (
        Release.objects.filter(project=access.project)
        .order_by("-created_at")
        .values_list("created_at", flat=True)
        .first()
    )


def _publish_requests_context(request: HtmxHttpRequest, access: ProjectAccess) -> dict[str, Any]:
    """Who publishes, and the open requests to publish: all of them for publishers, one's own for the others."""
    since = _newest_release_at(access)
    open_requests = publish_requests_open(project=access.project, since=since)
    return {
        "publishers": project_publishers(project=access.project),
        "publish_requests": list(open_requests) if access.can(Capability.PUBLISH) else [],
        "my_publish_request": open_requests.filter(requested_by_id=request.user.pk).first(),
        "can_ask_publish": access.can(Capability.CURATE) and not access.can(Capability.PUBLISH),
    }


def _releases_page(
    request: HtmxHttpRequest,
    access: ProjectAccess,
    *,
    status: int = 200,
    ask_form: Any = None,
    **bound: Any,
) -> HttpResponse:
    context = {
        **_releases_context(access, **bound),
        **_publish_requests_context(request, access),
        **_ask_context(access, ask_form),
    }
    template = RELEASES_BODY if request.htmx else "ontology/release_list.html"
    return render_page(request, template, context, status=status)


@project_view("GET")
def release_list(request: HtmxHttpRequest, access: ProjectAccess) -> HttpResponse:
    return _releases_page(request, access)


def _publish_page(
    request: HtmxHttpRequest, access: ProjectAccess, *, status: int = 200, form: Any = None
) -> HttpResponse:
    review = releases.draft_review(project=access.project)
    context = {
        **draft_state(access),
        "nav": "releases",
        "review": review,
        "publish_form": form or forms.PublishForm(initial={"draft_digest": review.digest}),
        "ask_change": _ask_change(access, review.active),
        **_diff_context(access, review.diff),
    }
    return render_page(request, "ontology/release_publish.html", context, status=status)


def _ask_change(access: ProjectAccess, active: Release | None) -> dict[str, Any] | None:
    """The ask threshold the active release applies and the draft's, when the curator changed it."""
    draft = ask_override_get(project=access.project)
    old = (active.ask_threshold or {}) if active is not None else {}
    old_override = old.get("value") if old.get("source") == "curator" else None
    return None if active is None or draft == old_override else {"old": old, "new": draft}


@project_view("GET", "POST")
def release_publish(request: HtmxHttpRequest, access: ProjectAccess) -> HttpResponse:
    """GET: the draft against the active release — the full diff and the validator's refusals — with
    the publish form (admins). POST: queue the publication job and show its progress; the job freezes
    the draft into a new active release, refuses a draft that is invalid or moved since the reviewed
    diff (``draft_digest``), and says so when the draft is identical to the active release."""
    require_publish(access)
    if request.method == "GET":
        return _publish_page(request, access)
    form = forms.PublishForm(request.POST)
    if not form.is_valid():
        return _publish_page(request, access, status=REFUSED, form=form)
    job = publish_job_open(
        project=access.project,
        actor=request.user,
        notes=form.cleaned_data["notes"],
        draft_digest=form.cleaned_data.get("draft_digest") or "",
    )
    job_enqueue(job, release_publish_task)
    messages.info(request, f"Publication queued as job #{job.pk}: a worker publishes the draft.")
    return go_to(request, reverse("job_detail", args=[access.project.slug, job.pk]))


@project_view("POST")
def release_publish_ask(request: HtmxHttpRequest, access: ProjectAccess) -> HttpResponse:
    """An expert (curates, may not publish) asks the project's administrators to publish the draft: the
    request shows on their Releases page and as a badge beside "Releases" until a release is published."""
    if access.can(Capability.PUBLISH):
        messages.info(request, "You publish this project yourself: review the draft and publish.")
        return redirect(graph_url("release_list", access))
    form = PublishAskForm(request.POST)
    if not form.is_valid():
        messages.error(request, "The note is too long (500 characters at most); nothing was sent.")
        return _releases_page(request, access, status=REFUSED)
    _, created = publish_request_create(
        project=access.project,
        user=request.user,
        note=form.cleaned_data["note"],
        since=_newest_release_at(access),
    )
    who = ", ".join(project_publishers(project=access.project)) or "the administrators"
    messages.success(
        request,
        f"Asked {who} to publish the draft."
        if created
        else f"Your request to {who} is still open (note updated).",
    )
    if not request.htmx:
        return redirect(graph_url("release_list", access))
    return _releases_page(request, access)


@project_view("POST")
def release_ask_threshold(request: HtmxHttpRequest, access: ProjectAccess) -> HttpResponse:
    """An expert or admin sets the draft's ask threshold (empty: the calibrated one); it takes effect
    with the next publication. A value outside [0, 1) comes back on the form (422)."""
    form = forms.AskThresholdForm(request.POST)
    saved = save_form(
        form,
        lambda data: ask_threshold_set(
            project=access.project, actor=request.user, value=data["ask_threshold"]
        ),
    )
    if form.errors:
        return _releases_page(request, access, status=REFUSED, ask_form=form)
    messages.success(
        request,
        (
            f"Ask threshold {saved:.2f} set for the draft"
            if saved is not None
            else "The draft uses the calibrated ask threshold"
        )
        + ": it takes effect when the draft is published.",
    )
    if not request.htmx:
        return redirect(graph_url("release_list", access))
    return _releases_page(request, access)


@project_view("POST")
def release_publish_dismiss(request: HtmxHttpRequest, access: ProjectAccess) -> HttpResponse:
    """An administrator dismisses the open requests to publish (without publishing)."""
    require_publish(access)
    count = publish_requests_dismiss(
        project=access.project, user=request.user, since=_newest_release_at(access)
    )
    messages.success(request, f"Dismissed {count} request{'s' if count != 1 else ''} to publish.")
    return redirect(graph_url("release_list", access))


@project_view("POST")
def release_activate(request: HtmxHttpRequest, access: ProjectAccess, version: int) -> HttpResponse:
    """Make an earlier (rollback) or later release the active one (admins)."""
    require_publish(access)
    release = releases.release_get(project=access.project, version=version)
    form = forms.ActivateForm(request.POST)
    if not form.is_valid():
        messages.error(request, "The reason is too long (500 characters at most); nothing changed.")
        return _releases_page(request, access, status=REFUSED)
    previous = releases.release_active(project_id=access.project.pk)
    releases.release_activate(release=release, actor=request.user, reason=form.cleaned_data["reason"])
    if previous is None or previous.pk == release.pk:
        messages.success(request, f"Release v{version} is active.")
    else:
        verb = "Rolled back" if release.version < previous.version else "Moved forward"
        messages.success(request, f"{verb} from v{previous.version} to v{version}: v{version} is active.")
    if not request.htmx:
        return redirect(graph_url("release_list", access))
    return _releases_page(request, access)


def _against(request: HtmxHttpRequest, release: Release, versions: list[int]) -> int | None:
    try:
        wanted = int(request.GET.get("against", ""))
    except ValueError:
        wanted = None
    if wanted in versions and wanted != release.version:
        return wanted
    older = [v for v in versions if v < release.version]
    return max(older) if older else None


def _diff_context(access: ProjectAccess, diff: releases.ReleaseDiff | None) -> dict[str, Any]:
    """The diff grid's context: the diff, label names, a one-line summary and the node link prefix."""
    labels: dict[str, list[tuple[str, str, tuple[str, ...]]]] = {}
    summary: list[str] = []
    if diff is not None:
        changed = dict(diff.labels_changed)
        ids = {*diff.labels_added, *diff.labels_removed, *changed}
        names = dict(
            label_list(project=access.project).filter(label_id__in=ids).values_list("label_id", "name")
        )
        labels = {
            "added": [(i, names.get(i, ""), ()) for i in diff.labels_added],
            "removed": [(i, names.get(i, ""), ()) for i in diff.labels_removed],
            "changed": [(i, names.get(i, ""), fields) for i, fields in diff.labels_changed],
        }
        parts = [
            (diff.labels_added, "label", "labels", "added"),
            (diff.labels_removed, "label", "labels", "removed"),
            (diff.labels_changed, "label", "labels", "changed"),
            (diff.nodes_added, "node", "nodes", "added"),
            (diff.nodes_removed, "node", "nodes", "removed"),
            (diff.nodes_changed, "node", "nodes", "changed"),
            (diff.edges_added, "edge", "edges", "added"),
            (diff.edges_removed, "edge", "edges", "removed"),
            (diff.edges_reweighted, "edge", "edges", "reweighted"),
            (diff.aliases_added, "alias", "aliases", "added"),
            (diff.aliases_changed, "alias", "aliases", "redirected"),
            (diff.aliases_removed, "alias", "aliases", "removed"),
            (diff.clusters_changed, "cluster", "clusters", "changed"),
            (diff.policies_changed, "policy", "policies", "changed"),
            (diff.typologies_changed, "typology", "typologies", "changed"),
            (diff.roles_changed, "role", "roles", "changed"),
        ]
        summary = [
            f"{len(items)} {one if len(items) == 1 else many} {verb}"
            for items, one, many, verb in parts
            if items
        ]
        summary += ["incompatibilities changed"] if diff.incompatibilities_changed else []
        summary += ["term distinctions changed"] if diff.distinct_terms_changed else []
    return {
        "diff": diff,
        "labels": labels,
        "summary": summary,
        "node_url": graph_url("node_detail", access, "NODE").rsplit("NODE", 1)[0],
    }


@project_view("GET")
def release_diff(request: HtmxHttpRequest, access: ProjectAccess, version: int) -> HttpResponse:
    """What changed between release ``version`` and ``?against=`` (default: the release before it)."""
    release = releases.release_get(project=access.project, version=version)
    versions = [r.version for r in releases_of(project=access.project)]
    against = _against(request, release, versions)
    diff = None
    if against is not None:
        other = releases.release_get(project=access.project, version=against)
        old, new = (other, release) if other.version < release.version else (release, other)
        diff = releases.release_diff(old=old, new=new)
    context = {
        "nav": "releases",
        "release": release,
        "against": against,
        "choices": [v for v in versions if v != version],
        **_diff_context(access, diff),
    }
    return render_page(request, "ontology/release_diff.html", context)
