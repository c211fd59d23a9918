"""Erasure of one end user's data in one project, by the user id the client sends (``context.user_id``).

``user_data_erase`` deletes, in one transaction:

* the project's ``InferenceLog`` rows sent with ``context.user_id`` = the id (the indexed ``user_id``
  column; prompt, answer, trace), with
  their ``Feedback`` (cascade), and the project's ``ActionExecution`` rows of those requests (their
  parameters and results);
* the user's memory (``memory.services.memory_user_erase``: episodic items, the user's USER-scope Info
  Registry, shared InfoUnits founded by the user's words; shared units the user only backed are
  recounted);

and records one ``AuditEvent`` (``action="erase"``, ``object_type="user_data"``) with the counts and
``sha256:<first 16 hex digits>`` of the id — never the id itself — so an operator can later confirm
that an erasure was made for an id they are given, without the trail holding it.

Tenant isolation: only ``project``'s rows are touched; the same id in another project is another user.
The same request twice deletes nothing the second time (an audit event with zero counts is recorded).
Not covered: requests sent without ``context.user_id``. What the offline loop copied from logs into
review proposals was scrubbed of PII before it was logged (``inference.logbook``).
"""

from __future__ import annotations

import hashlib

from django.db import transaction

from arg_platform.audit import Actor, audit_record
from arg_platform.errors import RuleViolation, Violation
from memory.services import memory_user_erase
from projects.models import Project

from .models import ActionExecution, Feedback, InferenceLog

USER_ID_MAX = 128  # as ``context.user_id`` (inference.request_body) and ``EpisodicMemory.user_id``
BATCH = 5000


def user_id_digest(user_id: str) -> str:
    """What the audit trail records instead of the id: ``sha256:`` and the first 16 hex digits."""
    return "sha256:" + hashlib.sha256(user_id.encode("utf-8")).hexdigest()[:16]


def _user_id_checked(user_id: str) -> str:
    user_id = (user_id or "").strip() if isinstance(user_id, str) else ""
    if not user_id:
        raise RuleViolation(Violation("erasure.user_id", "name the user whose data to erase", "user_id"))
    if len(user_id) > USER_ID_MAX:
        raise RuleViolation(
            Violation("erasure.user_id", f"a user id is at most {USER_ID_MAX} characters", "user_id")
        )
    return user_id


def _logs_erase(*, project: Project, user_id: str) -> dict[str, int]:
    counts = {"inference_logs": 0, "feedback": 0, "action_executions": 0}
    logs = InferenceLog.objects.filter(project=project, user_id=user_id).order_by("pk")
    while True:
        batch = list(logs.values_list("pk", "request_id")[:BATCH])
        if not batch:
            return counts
        request_ids = [request_id for _, request_id in batch]
        _, actions = ActionExecution.objects.filter(project=project, request_id__in=request_ids).delete()
        _, deleted = InferenceLog.objects.filter(pk__in=[pk for pk, _ in batch]).delete()
        counts["action_executions"] += actions.get(ActionExecution._meta.label, 0)
        counts["inference_logs"] += deleted.get(InferenceLog._meta.label, 0)
        counts["feedback"] += deleted.get(Feedback._meta.label, 0)


def user_data_erase(*, project: Project, user_id: str, actor: Actor) -> dict[str, int]:
    """Erase everything ``project`` holds about end user ``user_id`` (see the module doc); returns the
    counts deleted per kind. Refused (``RuleViolation``, field ``user_id``) for an empty id or one longer
    than ``USER_ID_MAX``."""
    user_id = _user_id_checked(user_id)
    with transaction.atomic():
        counts = _logs_erase(project=project, user_id=user_id)
        counts.update(memory_user_erase(project=project, user_id=user_id))
        audit_record(
            project=project,
            actor=actor,
            action="erase",
            object_type="user_data",
            object_key=user_id_digest(user_id),
            after=dict(counts),
            reason="erasure of one user's data on request",
        )
    return counts
