"""``insert_row`` stores the row ``Model.objects.create`` would store, in the caller's transaction."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.db import IntegrityError, transaction
from django.forms.models import model_to_dict

from arg_platform.append_rows import insert_row
from inference.models import InferenceLog


def _fields(project: Any, request_id: str) -> dict[str, Any]:
    return {
        "project": project,
        "request_id": request_id,
        "prompt": "Where is my invoice? «café» 👋",
        "language": "en",
        "context": {"channel": "web", "history": ["hi", "again"], "timestamp": None},
        "policy_state": "ALLOW",
        "labels_raw": {"lbl-1": 0.5},
        "labels_blocked": [["lbl-2", "forbidden"]],
        "weaver": {"top_k": [["lbl-1", 0.81]], "proposer_used": False},
        "labels_final": {"lbl-1": 0.81},
        "confidence": 0.81,
        "flags": ["VECTOR_AMBIGUITY"],
        "path_edges": [["a", "b"]],
        "fast_path": True,
        "outcome_kind": "INFO",
        "c_info": None,
        "timings_ms": {"embed": 4.2, "total": 9.1},
    }


@pytest.mark.django_db
def test_the_inserted_row_reads_back_as_the_orm_would_have_stored_it(project: Any) -> None:
    before = dt.datetime.now(dt.UTC)
    fast = insert_row(InferenceLog(**_fields(project, "req-fast")))
    orm = InferenceLog.objects.create(**_fields(project, "req-orm"))
    assert fast.pk is not None and not fast._state.adding
    stored_fast = InferenceLog.objects.get(pk=fast.pk)
    stored_orm = InferenceLog.objects.get(pk=orm.pk)
    skip = {"id", "request_id", "created_at"}
    assert {k: v for k, v in model_to_dict(stored_fast).items() if k not in skip} == {
        k: v for k, v in model_to_dict(stored_orm).items() if k not in skip
    }
    assert before <= stored_fast.created_at <= dt.datetime.now(dt.UTC)  # auto_now_add applied
    assert stored_fast.created_at == fast.created_at
    assert stored_fast.silent_outcome is True and stored_fast.answer == ""  # model defaults


@pytest.mark.django_db(transaction=True)
def test_a_duplicate_fails_and_a_rolled_back_insert_leaves_nothing(project: Any) -> None:
    insert_row(InferenceLog(**_fields(project, "req-1")))
    with pytest.raises(IntegrityError):
        insert_row(InferenceLog(**_fields(project, "req-1")))
    with pytest.raises(RuntimeError), transaction.atomic():
        insert_row(InferenceLog(**_fields(project, "req-2")))
        raise RuntimeError("the caller's transaction fails after the insert")
    assert list(InferenceLog.objects.values_list("request_id", flat=True)) == ["req-1"]
