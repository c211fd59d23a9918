"""The label page's "what would route here" panel: competing labels and the routed preview prompts.

Loaded into the label page (``taxonomy/partials/label_body.html``) by htmx once the page is shown, so
the page itself stays fast; ``inference.label_preview`` does the work (bounded: a dozen dry-run
requests).
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from arg_platform.ui import project_view, render_page
from inference.label_preview import label_preview
from projects.access import ProjectAccess
from taxonomy.selectors import label_get
from taxonomy.term_guard import similarity_threshold


@project_view("GET")
def label_preview_panel(request: HttpRequest, access: ProjectAccess, label_id: str) -> HttpResponse:
    label = label_get(project=access.project, label_id=label_id)  # 404 for an unknown label
    role = request.GET.get("role", "").strip() or None
    preview = label_preview(project=access.project, label_id=label.label_id, role=role)
    return render_page(
        request,
        "inference/partials/label_preview.html",
        {"label": label, "preview": preview, "threshold": similarity_threshold()},
        flash=False,
    )
