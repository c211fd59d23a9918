"""Explicit user signals about a request (§2.9.5–2.9.7): only these move an outcome out of UNCERTAIN.

Helpfulness yes → INFO_CONFIRMED_SUCCESS, no → INFO_LOW_CONFIDENCE; an action outcome confirms or
fails an ACTION; a disambiguation choice is recorded as evidence (it names the branch the user meant)
without confirming anything. Silence changes nothing. A feedback with the same idempotency key for
the same request is applied once.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction

from arg_platform.errors import NotFound, RuleViolation, Violation

from .contracts import InfoStatus, OutcomeKind
from .models import Feedback, InferenceLog


def feedback_record(
    *,
    project_id: int,
    request_id: str,
    kind: str,
    helpful: bool | None = None,
    choice: str = "",
    action_succeeded: bool | None = None,
    comment: str = "",
    idempotency_key: str = "",
) -> InferenceLog:
    """Record one explicit signal and update the request's outcome status accordingly."""
    try:
        with transaction.atomic():
            log = (
                InferenceLog.objects.select_for_update()
                .filter(project_id=project_id, request_id=request_id)
                .first()
            )
            if log is None:
                raise NotFound(f"request {request_id} not found in this project")
            if kind == Feedback.Kind.ACTION_OUTCOME and log.outcome_kind != OutcomeKind.ACTION:
                raise RuleViolation(Violation("feedback.kind", "this request did not run an action", "kind"))
            Feedback.objects.create(
                log=log,
                kind=kind,
                helpful=helpful,
                choice=choice[:200],
                action_succeeded=action_succeeded,
                comment=comment[:1000],
                idempotency_key=idempotency_key,
            )
            log.silent_outcome = False
            if kind == Feedback.Kind.HELPFUL and log.outcome_kind in (OutcomeKind.INFO, OutcomeKind.MEMORY):
                log.outcome_status = InfoStatus.CONFIRMED if helpful else InfoStatus.LOW_CONFIDENCE
            elif kind == Feedback.Kind.ACTION_OUTCOME:
                log.outcome_status = (
                    "ACTION_CONFIRMED_SUCCESS" if action_succeeded else "ACTION_REPORTED_FAILURE"
                )
            log.save(update_fields=["silent_outcome", "outcome_status"])
            return log
    except IntegrityError:
        # the same feedback (same idempotency key) already applied: return the request as it is
        return InferenceLog.objects.get(project_id=project_id, request_id=request_id)
