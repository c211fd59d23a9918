"""The audit trail of a project: who changed what, when and why — newest first, filtered, paginated."""

from __future__ import annotations

from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.http import HttpResponse

from arg_platform.models import AuditEvent
from arg_platform.ui import (
    HISTORY_PAGE_SIZE,
    HtmxHttpRequest,
    audit_events,
    history_rows,
    project_view,
    render_page,
)
from projects.access import ProjectAccess

from .. import forms


@project_view("GET")
def history(request: HtmxHttpRequest, access: ProjectAccess) -> HttpResponse:
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
    page = Paginator(audit_events(access, object_type, object_key), HISTORY_PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    query = urlencode({k: v for k, v in (("object_type", object_type), ("object_key", object_key)) if v})
    context = {
        "nav": "history",
        "form": form,
        "page": page,
        "rows": history_rows(access, page.object_list),
        "query": query,
    }
    if request.htmx:
        return render_page(request, "taxonomy/partials/history_table.html", context)
    return render_page(request, "taxonomy/history.html", context)
