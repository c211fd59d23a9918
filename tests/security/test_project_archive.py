"""Projects are archived, never deleted: through the admin an operator archives a project; it leaves
every page and API, its tokens stop working, the nightly loop skips it, and its audit trail stays."""

from __future__ import annotations

from typing import Any

import pytest
from django.db.models import ProtectedError
from django.test import Client

from arg_platform.models import AuditEvent
from ontology.releases import release_publish
from projects.models import Project
from review.loop.tasks import offline_nightly_task
from review.models import OfflineRun
from taxonomy.models import Role
from taxonomy.packs import pack_import, pack_read
from tests.taxonomy.test_packs import SMALL

pytestmark = pytest.mark.django_db


@pytest.fixture
def served(make_user: Any, token_client: Any) -> dict[str, Any]:
    project = pack_import(pack_read(SMALL)).project
    release_publish(project=project, actor=None)
    expert = make_user("erin", role="expert", project=project)
    operator = make_user("ops")
    operator.is_staff = operator.is_superuser = True
    operator.save()
    admin_client, expert_client = Client(), Client()
    admin_client.force_login(operator)
    expert_client.force_login(expert)
    api = token_client(project, role=Role.objects.filter(project=project).first())
    return {"project": project, "admin": admin_client, "expert": expert_client, "api": api}


def _infer(api: Any) -> int:
    return api.post("/api/v1/infer", {"prompt": "resend my invoice"}, format="json").status_code


def test_the_admin_cannot_delete_a_project(served: dict[str, Any]) -> None:
    project, admin = served["project"], served["admin"]
    assert admin.get(f"/admin/projects/project/{project.pk}/delete/").status_code == 403
    changelist = admin.get("/admin/projects/project/")
    assert changelist.status_code == 200
    assert b'value="delete_selected"' not in changelist.content
    assert b'value="archive"' in changelist.content
    refused = admin.post(
        "/admin/projects/project/",
        {"action": "delete_selected", "_selected_action": [project.pk], "post": "yes"},
    )
    assert refused.status_code in (200, 302)
    assert Project.objects.filter(pk=project.pk).exists()
    with pytest.raises(ProtectedError):  # nor can any other delete take the audit trail with it
        Project.objects.filter(pk=project.pk).delete()


def test_archiving_hides_the_project_refuses_its_tokens_and_keeps_its_trail(served: dict[str, Any]) -> None:
    project, admin, expert, api = served["project"], served["admin"], served["expert"], served["api"]
    assert _infer(api) == 200
    assert expert.get(f"/p/{project.slug}/taxonomy/").status_code == 200
    trail = AuditEvent.objects.filter(project=project).count()

    response = admin.post("/admin/projects/project/", {"action": "archive", "_selected_action": [project.pk]})
    assert response.status_code == 302

    project.refresh_from_db()
    assert project.archived_at is not None
    assert _infer(api) == 401
    assert expert.get(f"/p/{project.slug}/taxonomy/").status_code == 404
    assert project.slug not in [p["slug"] for p in expert.get("/api/v1/projects/").json()]
    assert AuditEvent.objects.filter(project=project).count() == trail + 1
    archived = AuditEvent.objects.get(project=project, action="archive")
    assert (archived.object_key, archived.actor_name) == (project.slug, "ops")
    assert offline_nightly_task() == [] and not OfflineRun.objects.filter(project=project).exists()

    admin.post("/admin/projects/project/", {"action": "restore", "_selected_action": [project.pk]})
    project.refresh_from_db()
    assert project.archived_at is None
    assert _infer(api) == 200
    assert expert.get(f"/p/{project.slug}/taxonomy/").status_code == 200
    assert AuditEvent.objects.filter(project=project, action="restore").count() == 1
