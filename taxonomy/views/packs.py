"""Knowledge packs in the browser: download the project as a pack, upload a pack (all-or-nothing)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.core.files.uploadedfile import UploadedFile
from django.http import HttpRequest, HttpResponse

from arg_platform.errors import RuleViolation
from arg_platform.ui import REFUSED, go_to, project_url, project_view, render_page
from projects.access import ProjectAccess

from ..file_guards import size_check, upload_read
from ..packs import pack_dump, pack_export, pack_import
from ..packs.reader import pack_parse


class PackUploadForm(forms.Form):
    file = forms.FileField(label="Pack file (.yaml, .yml or .json)")

    def clean_file(self) -> UploadedFile:
        upload = self.cleaned_data["file"]
        try:
            size_check(size=upload.size, source=upload.name)
        except RuleViolation as exc:
            raise forms.ValidationError([v.message for v in exc.violations]) from exc
        return upload


@project_view("GET")
def pack_download(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    """The project's taxonomy, typologies, policies, roles and draft graph as a YAML pack file."""
    fmt = "json" if request.GET.get("format") == "json" else "yaml"
    body = pack_dump(pack_export(project=access.project), fmt=fmt)
    response = HttpResponse(body, content_type="application/json" if fmt == "json" else "application/yaml")
    response["Content-Disposition"] = f'attachment; filename="{access.project.slug}-pack.{fmt}"'
    return response


@project_view("GET", "POST")
def packs_page(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    """Download and upload; an upload that breaks a rule lists every violation and changes nothing."""
    form = PackUploadForm(request.POST or None, request.FILES or None)
    violations = []
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            text = upload_read(upload).decode("utf-8")
            doc = pack_parse(text, source=upload.name, fmt="json" if upload.name.endswith(".json") else None)
            result = pack_import(doc, actor=request.user, project_slug=access.project.slug)
        except UnicodeDecodeError:
            form.add_error("file", "the pack must be UTF-8 text")
        except RuleViolation as exc:
            violations = exc.violations
        else:
            messages.success(request, f"Pack {upload.name} imported — {result.summary()}")
            return go_to(request, project_url("packs", access))
    status = REFUSED if request.method == "POST" else 200
    return render_page(
        request,
        "taxonomy/packs.html",
        {"nav": "packs", "form": form, "violations": violations},
        status=status,
    )
