"""Template context: the project the current page belongs to, and the projects the user can open."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest


def current_project(request: HttpRequest) -> dict[str, Any]:
    return {"current_project": getattr(request, "project_access", None)}
