"""What every curation view shares.

Access: every view resolves the caller in the project (a project the caller cannot see is a 404)
and puts the ``ProjectAccess`` on ``request.project_access`` for the templates; any POST needs the
CURATE capability (403 otherwise), so reviewers read and never write.

Rendering: a normal request gets the page; an htmx request to the same view gets the fragment it
swaps, followed by an out-of-band refresh of the flash messages. A form refused by a service comes
back with status 422, which ``base.html``'s htmx config swaps in place like a 200.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render, resolve_url
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_http_methods
from django_htmx.http import HttpResponseClientRedirect
from django_htmx.middleware import HtmxDetails

from arg_platform.errors import Forbidden, NotFound, RuleViolation
from arg_platform.handler_targets import audit_values_shown
from arg_platform.models import AuditEvent
from projects.access import Capability, ProjectAccess
from projects.selectors import project_access, project_list_for_user

REFUSED = 422  # the form came back with errors: htmx swaps it in place (see base.html's htmx-config)
HISTORY_PAGE_SIZE = 50
LABEL_HISTORY_SIZE = 20


class HtmxHttpRequest(HttpRequest):
    """The request a view receives: django-htmx's ``HtmxMiddleware`` (``settings.MIDDLEWARE``) sets
    ``htmx`` on every request (falsy unless htmx sent it). Views annotate ``request`` with this."""

    htmx: HtmxDetails


def htmx_of(request: HttpRequest) -> HtmxDetails:
    """``request.htmx`` of a request typed as a plain ``HttpRequest`` (what the shared helpers accept)."""
    return request.htmx  # type: ignore[attr-defined]  # set by HtmxMiddleware; see HtmxHttpRequest


def project_view(
    *methods: str, post_capability: Capability = Capability.CURATE
) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """Resolve the caller in ``project`` (404 when they cannot see it); POST needs ``post_capability``
    (CURATE unless the app says otherwise; 403)."""

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
            if request.method == "POST" and not access.can(post_capability):
                raise PermissionDenied(
                    f"your role ({access.role}) may read but not {post_capability.value} in this project"
                )
            try:
                return view(request, access, **kwargs)
            except NotFound as exc:
                raise Http404(exc.message) from exc
            except Forbidden as exc:
                raise PermissionDenied(exc.message) from exc

        return wrapper

    return decorate


def _to_login(request: HttpRequest) -> HttpResponse:
    """Anonymous callers sign in first; an htmx request reloads the whole page on the login form."""
    htmx = htmx_of(request)
    if htmx:
        next_url = htmx.current_url_abs_path or request.get_full_path()
        return HttpResponseClientRedirect(
            f"{resolve_url(settings.LOGIN_URL)}?{urlencode({'next': next_url})}"
        )
    return redirect_to_login(request.get_full_path())


def render_page(
    request: HttpRequest,
    template: str,
    context: dict[str, Any],
    status: int = 200,
    *,
    flash: bool = True,
) -> HttpResponse:
    """Render a page, or (htmx) a fragment followed by an out-of-band refresh of the flash messages.

    ``flash=False`` leaves the flash area alone: for fragments fetched while the person types
    (suggestions), whose late answer must not wipe the message of a form sent meanwhile."""
    access: ProjectAccess = request.project_access  # type: ignore[attr-defined]
    context = {"project": access.project, "can_curate": access.can(Capability.CURATE), **context}
    if not htmx_of(request):
        context.setdefault("user_projects", project_list_for_user(user=request.user))
        return render(request, template, context, status=status)
    html = render_to_string(template, context, request)
    if flash:
        html += render_to_string("inc/messages.html", {"oob": True}, request)
    return HttpResponse(html, status=status)


def save_form(form: Any, save: Callable[[dict[str, Any]], Any]) -> Any | None:
    """Validate ``form`` and call the service in ``save``; a refusal lands on the form. None when refused."""
    if not form.is_valid():
        return None
    try:
        return save(form.cleaned_data)
    except RuleViolation as exc:
        form.add_violations(exc)
        return None


def go_to(request: HttpRequest, url: str) -> HttpResponse:
    return HttpResponseClientRedirect(url) if htmx_of(request) else redirect(url)


def project_url(name: str, access: ProjectAccess, *args: Any) -> str:
    return reverse(f"taxonomy:{name}", args=[access.project.slug, *args])


# --- audit trail ----------------------------------------------------------------------------------


def audit_events(access: ProjectAccess, object_type: str = "", object_key: str = "") -> Any:
    events = AuditEvent.objects.filter(project=access.project).order_by("-created_at", "-id")
    if object_type:
        events = events.filter(object_type=object_type)
    if object_key:
        events = events.filter(object_key=object_key)
    return events


def shown(value: Any) -> str:
    if value is None or value == "" or value == []:
        return "—"
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ", ".join(value)
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def object_url(access: ProjectAccess, event: AuditEvent) -> str:
    routes = {
        "label": "label_detail",
        "typology": "typology_detail",
        "policy": "policy_detail",
        "role": "role_detail",
    }
    if event.object_type in routes:
        return project_url(routes[event.object_type], access, event.object_key)
    if event.object_type == "cluster":
        return project_url("tree", access) + f"#cluster-{event.object_key}"
    return ""


def history_rows(access: ProjectAccess, events: Any) -> list[dict[str, Any]]:
    """Audit events with their changed fields as (field, before, after) rows."""
    curator = access.can(Capability.CURATE)
    rows = []
    for event in events:
        before = audit_values_shown(event.before, curator=curator)
        after = audit_values_shown(event.after, curator=curator)
        fields = list(dict.fromkeys([*before, *after]))
        changes = [(f, shown(before.get(f)), shown(after.get(f))) for f in fields]
        changes = [change for change in changes if change[1:] != ("—", "—")]
        rows.append({"event": event, "changes": changes, "url": object_url(access, event)})
    return rows
