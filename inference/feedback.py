"""Explicit user signals about a request (§2.9.5–2.9.7): only these move an outcome out of UNCERTAIN.

Helpfulness yes → INFO_CONFIRMED_SUCCESS, no → INFO_LOW_CONFIDENCE; an action outcome confirms or
fails an ACTION; a disambiguation choice is recorded as evidence (it names the branch the user meant)
without confirming anything — only on a request that asked "Do you mean X or Y?", only for one of its
options, stored as the option's LabelID (``inference.steps.clarification``). Silence changes nothing. A
feedback with the same idempotency key for the same request is applied once, and a continuation's
choice (idempotency key ``ANSWERED_BY`` + the continuation's request id) once per option: a client
that retries the continuation sends a new request, and the retry must not count the choice twice.
"""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction

from arg_platform.errors import NotFound, RuleViolation, Violation
from inference.contracts import InfoStatus, OutcomeKind
from inference.models import Feedback, InferenceLog
from inference.steps.clarification import chosen_option
from memory.pii import redact_text

# the idempotency key of the disambiguation feedback a continuation records: + its own request id
ANSWERED_BY = "answered-by:"


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
    source: str = Feedback.Source.USER,
    reviewer: Any = None,
) -> InferenceLog:
    """Record one explicit signal and update the request's outcome status accordingly.

    A reviewer's label (``source="reviewer"``, helpfulness of a sampled silent Info answer) is kept
    apart: it is recorded on the request but changes neither ``silent_outcome`` nor ``outcome_status``
    — the user stayed silent, and silence is never turned into a confirmation.
    """
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
            if kind == Feedback.Kind.DISAMBIGUATION:
                choice = chosen_option(
                    request_id,
                    log.outcome_details,
                    choice,
                    question=("feedback.kind", "kind"),
                    answer=("feedback.choice", "choice"),
                ).label_id
                if (
                    idempotency_key.startswith(ANSWERED_BY)
                    and log.feedback.filter(
                        kind=kind, choice=choice[:200], idempotency_key__startswith=ANSWERED_BY
                    ).exists()
                ):
                    return log  # a retried continuation: this choice is already recorded
            if source == Feedback.Source.REVIEWER and (kind != Feedback.Kind.HELPFUL or helpful is None):
                raise RuleViolation(
                    Violation(
                        "feedback.reviewer_kind", "a reviewer labels helpfulness (yes or no)", "helpful"
                    )
                )
            Feedback.objects.create(
                log=log,
                kind=kind,
                source=source,
                reviewer=reviewer if getattr(reviewer, "pk", None) else None,
                helpful=helpful,
                choice=choice[:200],
                action_succeeded=action_succeeded,
                comment=redact_text(comment[:1000]).value,  # what a person typed: scrubbed
                idempotency_key=idempotency_key,
            )
            if source == Feedback.Source.REVIEWER:
                return log
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
