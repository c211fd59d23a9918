"""The Django admin of projects: archive and restore, never delete.

Registered here rather than in ``projects.admin`` because archiving is audited (``arg_platform.audit``
sits above ``projects`` in the layering).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from projects.models import Project

from .project_archive import project_archive, project_restore


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "knowledge_revision", "created_at", "archived_at"]
    list_filter = [("archived_at", admin.EmptyFieldListFilter)]
    readonly_fields = ["archived_at", "label_seq", "knowledge_revision"]
    actions = ["archive", "restore"]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # a project is archived, never deleted: its audit trail and logs stay

    @admin.action(description="Archive the selected projects (hidden, tokens refused, data kept)")
    def archive(self, request: HttpRequest, queryset: QuerySet[Project]) -> None:
        done = sum(project_archive(project=p, actor=request.user, reason="admin") for p in queryset)
        self.message_user(request, f"{done} project(s) archived.", messages.SUCCESS)

    @admin.action(description="Restore the selected archived projects")
    def restore(self, request: HttpRequest, queryset: QuerySet[Project]) -> None:
        done = sum(project_restore(project=p, actor=request.user, reason="admin") for p in queryset)
        self.message_user(request, f"{done} project(s) restored.", messages.SUCCESS)
