"""Erasure of one end user's data (``POST /api/v1/projects/<slug>/erasures/``, ``manage.py
erase_user_data``): the user's request logs, feedback, action runs and memory go, other users' and
other projects' stay, shared memory is kept consistent, the audit trail never holds the raw id, and only
a project admin (a person) may ask."""

from __future__ import annotations

import importlib
import io
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from arg_platform.models import AuditEvent
from inference.erasure import user_data_erase, user_id_digest
from inference.models import ActionExecution, Feedback, InferenceLog
from memory.models import EpisodicMemory, InfoEvidence, InfoKey, InfoUnit, MemoryEdge, RegistryAttempt
from memory.services import memory_write, recall_cache_clear
from ontology.releases import release_publish
from projects.services import api_token_create
from taxonomy.models import Role
from taxonomy.packs import pack_import, pack_read

pytestmark = pytest.mark.django_db

MEMORY_PACK = Path(__file__).resolve().parents[1] / "memory" / "fixtures" / "memory_pack.yaml"
U1, U2 = "customer-4711", "customer-0815"
REMEMBER = "Remember that I prefer to be contacted by email, not chat."
FACT = "Invoices are emailed to the billing contact on the 1st of every month."
ORG_FOUNDED_BY_U1 = "Invoices of this company go to the finance mailbox on Mondays."
ORG_FOUNDED_BY_U2 = "Invoices of this company are paid by bank transfer within thirty days."


@pytest.fixture(autouse=True)
def _clean_recall_cache() -> Any:
    recall_cache_clear()
    yield
    recall_cache_clear()


def _org_fact(project: Any, text: str, user_id: str, label: str) -> Any:
    return memory_write(
        project=project, text=text, scope="ORG", org_id="acme", user_id=user_id, label_ids=[label]
    )


@pytest.fixture
def world(make_user: Any, token_client: Any) -> dict[str, Any]:
    """The memory pack, published, with two end users' traffic: requests through the inference API
    (memory written by the pipeline), feedback, action runs, memory written through the memory API,
    and ORG facts each user founded and the other backed; the same user id in a second project."""

    project = pack_import(pack_read(MEMORY_PACK)).project
    release_publish(project=project, actor=None)
    other = pack_import(pack_read(MEMORY_PACK), project_slug="mem-other").project
    app = token_client(project, role=Role.objects.get(project=project, key="customer"))
    requests: dict[str, list[str]] = {U1: [], U2: []}
    for user in (U1, U2):
        for prompt in (REMEMBER, "where is my invoice"):
            resp = app.post(
                "/api/v1/infer",
                {"prompt": prompt, "context": {"user_id": user, "session_id": f"s-{user}"}},
                format="json",
            )
            assert resp.status_code == 200, resp.content
            requests[user].append(resp.json()["request_id"])
        feedback = app.post(
            "/api/v1/feedback",
            {"request_id": requests[user][1], "kind": "helpful", "helpful": True},
            format="json",
        )
        assert feedback.status_code == 200, feedback.content
        ActionExecution.objects.create(
            project=project,
            idempotency_key=uuid.uuid4().hex,
            request_id=requests[user][1],
            node_id="N-x",
            handler="test",
            status=ActionExecution.Status.SUCCEEDED,
            parameters={"user": user},
        )
        written = app.post(
            "/api/v1/memory",
            {"text": FACT, "scope": "USER", "user_id": user, "labels": ["L00001"], "session_id": f"s-{user}"},
            format="json",
        )
        assert written.status_code == 201, written.content
    # ORG facts: one founded by U1 and backed by U2 word for word, one founded by U2 and backed by U1
    # (in two InfoKeys, so that neither fact is compared with the other)
    founded_by_u1 = _org_fact(project, ORG_FOUNDED_BY_U1, U1, "L00001")
    assert _org_fact(project, ORG_FOUNDED_BY_U1, U2, "L00001").unit.pk == founded_by_u1.unit.pk
    founded_by_u2 = _org_fact(project, ORG_FOUNDED_BY_U2, U2, "L00002")
    assert _org_fact(project, ORG_FOUNDED_BY_U2, U1, "L00002").unit.pk == founded_by_u2.unit.pk
    # the same user id in another project is another user
    InferenceLog.objects.create(
        project=other, request_id=uuid.uuid4().hex, prompt="hello", context={"user_id": U1}
    )
    memory_write(project=other, text=FACT, scope="USER", user_id=U1, label_ids=["L00001"])
    people = {role: make_user(f"{role}-person", role, project) for role in ("admin", "expert", "reviewer")}
    _, admin_key = api_token_create(project=project, name="admin-personal", user=people["admin"])
    return {
        "project": project,
        "other": other,
        "app": app,
        "people": people,
        "admin_key": admin_key,
        "requests": requests,
        "org_unit_u1": founded_by_u1.unit,
        "org_unit_u2": founded_by_u2.unit,
    }


def _user_rows(project: Any, user: str) -> dict[str, int]:
    logs = InferenceLog.objects.filter(project=project, context__user_id=user)
    request_ids = list(logs.values_list("request_id", flat=True))
    episodes = EpisodicMemory.objects.filter(project=project, user_id=user)
    return {
        "logs": logs.count(),
        "feedback": Feedback.objects.filter(log__in=logs).count(),
        "actions": ActionExecution.objects.filter(project=project, request_id__in=request_ids).count(),
        "memories": episodes.count(),
        "user_keys": InfoKey.objects.filter(project=project, scope="USER", subject=user).count(),
        "user_units": InfoUnit.objects.filter(project=project, scope="USER", subject=user).count(),
        "evidence": InfoEvidence.objects.filter(episode__in=episodes).count(),
        "attempts": RegistryAttempt.objects.filter(episode__in=episodes).count(),
        "edges": MemoryEdge.objects.filter(source__in=episodes, target__in=episodes).count(),
    }


def _admin(world: dict[str, Any], api_as: Any) -> Any:
    return api_as(world["people"]["admin"])


def test_a_project_admin_erases_one_users_data_and_nothing_else(world, api_as):
    project, other = world["project"], world["other"]
    u1_before, u2_before = _user_rows(project, U1), _user_rows(project, U2)
    other_before = _user_rows(other, U1)
    assert u1_before["logs"] == 2 and u1_before["feedback"] == 1 and u1_before["actions"] == 1
    assert u1_before["memories"] == 4 and u1_before["user_keys"] >= 1 and u1_before["edges"] >= 1
    org_key = InfoKey.objects.get(pk=world["org_unit_u1"].info_key_id)
    org_units_before = org_key.unit_count

    resp = _admin(world, api_as).post(
        f"/api/v1/projects/{project.slug}/erasures/", {"user_id": U1}, format="json"
    )

    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert body["user"] == user_id_digest(U1) and U1 not in json.dumps(body)
    counts = body["counts"]
    assert (counts["inference_logs"], counts["feedback"], counts["action_executions"]) == (2, 1, 1)
    assert counts["memories"] == 4
    # the user's USER-scope registry and the ORG unit the user founded; the unit the user backed recounted
    assert counts["info_keys"] == u1_before["user_keys"]
    assert counts["info_units"] == u1_before["user_units"] + 1
    assert counts["info_units_recounted"] == 1
    assert _user_rows(project, U1) == dict.fromkeys(u1_before, 0)
    # another user of the project keeps everything but the evidence on the unit U1 founded (below)
    assert _user_rows(project, U2) == {**u2_before, "evidence": u2_before["evidence"] - 1}
    assert not MemoryEdge.objects.filter(project=project, target__user_id=U1).exists()
    assert _user_rows(other, U1) == other_before  # the same id in another project: untouched
    assert other_before["logs"] == 1 and other_before["memories"] == 1
    # shared memory stays consistent: the unit U1 founded is gone (it held U1's words), U2's episode
    # that backed it stays, detached; the unit U2 founded keeps U2's evidence only
    assert not InfoUnit.objects.filter(pk=world["org_unit_u1"].pk).exists()
    org_key.refresh_from_db()
    assert org_key.unit_count == org_units_before - 1
    assert InfoUnit.objects.filter(info_key=org_key).count() == org_key.unit_count
    kept = EpisodicMemory.objects.get(project=project, user_id=U2, text=ORG_FOUNDED_BY_U1)
    assert kept.info_unit_id is None
    backed = InfoUnit.objects.get(pk=world["org_unit_u2"].pk)
    assert (backed.evidence_count, backed.distinct_sources) == (1, 1)
    assert backed.evidence.get().episode.user_id == U2
    assert ORG_FOUNDED_BY_U1 not in InfoUnit.objects.filter(project=project).values_list(
        "founding_text", flat=True
    )
    # one audit event, with the counts and a hash of the id, never the id
    event = AuditEvent.objects.get(project=project, action="erase")
    assert (event.object_type, event.object_key) == ("user_data", user_id_digest(U1))
    assert event.after == counts and event.actor == world["people"]["admin"]
    assert U1 not in json.dumps([event.object_key, event.before, event.after, event.reason, event.actor_name])
    assert not AuditEvent.objects.filter(project=other, action="erase").exists()


def test_erasing_twice_deletes_nothing_the_second_time(world, api_as):
    admin = _admin(world, api_as)
    path = f"/api/v1/projects/{world['project'].slug}/erasures/"

    first = admin.post(path, {"user_id": U1}, format="json")
    second = admin.post(path, {"user_id": U1}, format="json")

    assert first.status_code == second.status_code == 200
    assert any(first.json()["counts"].values())
    assert not any(second.json()["counts"].values())


def test_the_memory_read_after_an_erasure_finds_nothing_of_the_user(world, api_as):
    admin = _admin(world, api_as)
    admin.post(f"/api/v1/projects/{world['project'].slug}/erasures/", {"user_id": U1}, format="json")

    listed = world["app"].get(f"/api/v1/memory?user_id={U1}")
    again = world["app"].post(  # the user's next memory write founds a fresh registry
        "/api/v1/memory",
        {"text": FACT, "scope": "USER", "user_id": U1, "labels": ["L00001"]},
        format="json",
    )

    assert listed.status_code == 200 and listed.json()["count"] == 0
    assert again.status_code == 201 and again.json()["registry"]["decision"] == "NEW"


def test_only_a_project_admin_person_may_erase(world, api_as, make_user):
    path = f"/api/v1/projects/{world['project'].slug}/erasures/"
    personal = APIClient()
    personal.credentials(HTTP_AUTHORIZATION=f"Bearer {world['admin_key']}")
    outsider = api_as(make_user("eve", "admin", world["other"]))

    refused = {
        "client token": world["app"].post(path, {"user_id": U1}, format="json").status_code,
        "expert": api_as(world["people"]["expert"]).post(path, {"user_id": U1}, format="json").status_code,
        "reviewer": api_as(world["people"]["reviewer"])
        .post(path, {"user_id": U1}, format="json")
        .status_code,
        "anonymous": APIClient().post(path, {"user_id": U1}, format="json").status_code,
        "admin of another project": outsider.post(path, {"user_id": U1}, format="json").status_code,
    }
    assert refused == {
        "client token": 403,
        "expert": 403,
        "reviewer": 403,
        "anonymous": 401,
        "admin of another project": 404,
    }
    assert _user_rows(world["project"], U1)["logs"] == 2
    assert not AuditEvent.objects.filter(action="erase").exists()

    by_token = personal.post(path, {"user_id": U1}, format="json")
    assert by_token.status_code == 200, by_token.content
    assert _user_rows(world["project"], U1)["logs"] == 0


@pytest.mark.parametrize(
    "body", [{}, {"user_id": ""}, {"user_id": "   "}, {"user_id": "x" * 129}, {"user_id": None}]
)
def test_a_bad_body_is_a_400_naming_the_field(world, api_as, body):
    resp = _admin(world, api_as).post(
        f"/api/v1/projects/{world['project'].slug}/erasures/", body, format="json"
    )

    assert resp.status_code == 400, resp.content
    assert "user_id" in resp.json()
    assert not AuditEvent.objects.filter(action="erase").exists()


def test_the_erase_user_data_command_prints_the_counts(world):
    out = io.StringIO()

    call_command("erase_user_data", "--project", world["project"].slug, "--user-id", U1, stdout=out)

    text = out.getvalue()
    assert user_id_digest(U1) in text and U1 not in text
    assert "inference_logs: 2" in text and "memories: 4" in text
    assert _user_rows(world["project"], U1)["logs"] == 0
    assert _user_rows(world["other"], U1)["logs"] == 1
    event = AuditEvent.objects.get(action="erase")
    assert event.actor is None and event.actor_name == "manage.py erase_user_data"
    with pytest.raises(CommandError, match="no project"):
        call_command("erase_user_data", "--project", "nope", "--user-id", U1, stdout=io.StringIO())
    with pytest.raises(CommandError, match="erasure.user_id"):
        call_command(
            "erase_user_data", "--project", world["project"].slug, "--user-id", " ", stdout=io.StringIO()
        )


def test_a_log_written_before_the_user_id_column_is_found_after_the_migration(world):
    project = world["project"]
    old = InferenceLog.objects.create(
        project=project, request_id=uuid.uuid4().hex, prompt="hello", context={"user_id": "legacy-7"}
    )
    assert old.user_id == ""  # as every row written before the column
    importlib.import_module("inference.migrations.0007_inferencelog_user_id").fill_user_id(apps, None)

    counts = user_data_erase(project=project, user_id="legacy-7", actor=None)

    assert counts["inference_logs"] == 1
    assert not InferenceLog.objects.filter(pk=old.pk).exists()
