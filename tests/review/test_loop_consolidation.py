"""Memory consolidation (ARG §4.2) in the nightly offline loop, on a real Celery worker: facts users wrote
in their own (USER) memory become a semantic InfoUnit and then a NODE_ADD proposal, binned like any
proposal, only when enough distinct users wrote them, with no personal data in the proposal; a retried
consolidation step writes nothing twice."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from tests.review.loop_fixtures import SMALL_PACK, nightly_run_on_worker

SHARED = "The invoice PDF export times out for invoices with more than 200 lines"
TOO_FEW = "Sign-in with the SSO button loops back to the login page on Safari"
USERS = ["alice.martin", "bruno.keller", "chen.wei"]


def _tiny() -> Any:
    from ontology.releases import release_publish
    from taxonomy.packs import pack_import, pack_read

    project = pack_import(pack_read(SMALL_PACK)).project
    release_publish(project=project, actor=None)
    return project


def _users_write(project: Any, text: str, label: str, users: list[str]) -> None:
    """What the pipeline writes for each user (USER scope, validated label), in two sessions two days
    apart, confirmed by the user (strong signal), from two channels."""
    from memory.services import memory_write

    for n, user in enumerate(users):
        for session, days_ago in (("s1", 2.0), ("s2", 0.1)):
            memory_write(
                project=project,
                text=text,
                scope="USER",
                user_id=user,
                session_id=f"{user}-{session}",
                label_ids=[label],
                labels_trusted=True,
                info_type="Incident",
                signal="strong",
                source="pipeline",
                provenance={"role": "customer", "channel": ("web", "chat")[n % 2]},
                occurred_at=timezone.now() - timedelta(days=days_ago),
            )
    # one of them also left an address in a third session: scrubbed at write time, never aggregated
    memory_write(
        project=project,
        text=f"{text}; reach me at {users[0]}@example.com",
        scope="USER",
        user_id=users[0],
        session_id=f"{users[0]}-s3",
        label_ids=[label],
        labels_trusted=True,
        info_type="Incident",
        signal="strong",
        source="pipeline",
    )


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_the_nightly_loop_consolidates_shared_user_facts_into_a_reviewed_node_proposal():
    from memory.models import EpisodicMemory, InfoUnit
    from review.models import Proposal

    project = _tiny()
    _users_write(project, SHARED, "L00001", USERS)  # three users: shared knowledge
    _users_write(project, TOO_FEW, "L00003", ["dora.ng", "emil.roth"])  # two: not enough sources

    run = nightly_run_on_worker(project)
    assert run.status == "SUCCEEDED", run.error
    consolidated = run.stats["steps"]["consolidate"]["result"]
    assert (consolidated["promoted"], consolidated["skipped_sources"]) == (1, 1)
    [semantic] = InfoUnit.objects.filter(project=project, scope="GLOBAL")
    assert semantic.founding_text == SHARED
    assert EpisodicMemory.objects.filter(project=project, source="offline").count() == 1

    from_memory = [
        p for p in Proposal.objects.filter(project=project, kind="NODE_ADD") if p.evidence.get("consolidated")
    ]
    assert [p.evidence["info_unit"] for p in from_memory] == [str(semantic.pk)]
    [proposal] = from_memory
    assert proposal.evidence["sources"] == 3 and proposal.run_id == run.pk
    assert proposal.confidence_bin in ("HIGH_CONF", "MID_CONF", "LOW_CONF")  # binned like any proposal
    node = next(op for op in proposal.changeset if op["op"] == "node_add")
    assert node["chunk"] == SHARED
    text = json.dumps([proposal.title, proposal.summary, proposal.changeset, proposal.evidence])
    assert "@" not in text and "<EMAIL>" not in text
    assert not any(name in text for name in USERS + ["dora.ng", "emil.roth"])
    assert "SSO" not in json.dumps(list(Proposal.objects.filter(project=project).values_list("changeset")))


@pytest.mark.django_db
def test_a_retried_consolidation_step_writes_nothing_twice(monkeypatch):
    from arg_platform.celery import app
    from memory.models import EpisodicMemory, InfoUnit
    from memory.services import memory_consolidate
    from review.loop.run import offline_run_open
    from review.loop.tasks import offline_consolidate_task

    monkeypatch.setitem(app.conf, "task_always_eager", True)
    project = _tiny()
    _users_write(project, SHARED, "L00001", USERS)
    run = offline_run_open(project=project, idempotency_key="retry-test")
    memory_consolidate(project=project)  # a first attempt wrote its patterns, then its worker died

    offline_consolidate_task.apply(args=[run.pk])  # the retry

    run.refresh_from_db()
    result = run.stats["steps"]["consolidate"]["result"]
    assert (result["unchanged"], result["promoted"], result["reinforced"]) == (1, 0, 0)
    assert EpisodicMemory.objects.filter(project=project, source="offline").count() == 1
    [semantic] = InfoUnit.objects.filter(project=project, scope="GLOBAL")
    assert semantic.evidence_count == 1
