"""Services of the online path: one request from the body a caller sent to its logged result.

Every request a caller sends leaves exactly one InferenceLog row (ARG §2.9), whatever becomes of it;
the row is written here, never by a door (the API's ``/infer``, the browser's "Try a request"), so no
door can forget it or write it twice.

Terms:
* *caller* — who sends a request through a door: the project, an API token or a signed-in person, the
  policy role it speaks as, and the ids the door gave the request;
* *body* — what the caller sent, as parsed JSON (``inference.request_body`` reads it);
* *continuation* — a request that answers an earlier request's "Do you mean X or Y?".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from arg_platform.errors import DomainError, RuleViolation
from inference.contracts import RequestContext
from inference.feedback import ANSWERED_BY, feedback_record
from inference.logbook import log_result
from inference.pipeline import InferenceRequest, InferenceResult, run_inference
from inference.request_body import infer_body_read


@dataclass(frozen=True)
class Caller:
    """Who sends a request, as its door authenticated it.

    ``name`` is ``token:<id>`` or ``user:<id>`` (whose idempotency keys the request's are); ``role`` is
    the policy role spoken when the body names none; with ``role_fixed`` the body may name no other
    (a client token's role is its own). ``user_answer``: a continuation sent by this caller is a user's
    answer, recorded as disambiguation feedback (a curator trying a prompt is not a user)."""

    project: Any
    request_id: str
    name: str
    token: Any = None
    correlation_id: str = ""
    role: str | None = None
    role_fixed: bool = False
    user_answer: bool = True


def inference_call(*, caller: Caller, body: Any) -> InferenceResult:
    """Read ``body`` (the parsed JSON; ``None`` when it was not JSON), route it, log it, and record a
    user's answer to "Do you mean X or Y?" as feedback. The result carries ``error`` when the body or
    the pipeline refused the request; it is logged either way and its door raises or shows it."""
    valid = infer_body_read(body)
    if isinstance(valid, RuleViolation):
        sent = body.get("prompt") if isinstance(body, dict) else None
        refused = InferenceRequest(
            request_id=caller.request_id,
            project=caller.project,
            prompt=sent if isinstance(sent, str) else "",
            context=RequestContext(),
            token=caller.token,
            correlation_id=caller.correlation_id,
            caller=caller.name,
            default_role=caller.role,
        )
        return _refused(refused, valid)
    context = valid.get("context", {})
    given = valid.get("disambiguation")
    request = InferenceRequest(
        request_id=caller.request_id,
        project=caller.project,
        prompt=valid["prompt"],
        context=RequestContext(**{**context, "history": tuple(context.get("history", ()))}),
        token=caller.token,
        correlation_id=caller.correlation_id,
        caller=caller.name,
        default_role=caller.role,
        role_fixed=caller.role_fixed,
        parameters=dict(valid.get("parameters") or {}),
        dry_run=valid.get("dry_run", False),
        idempotency_key=valid.get("idempotency_key") or None,
        disambiguation=(given["request_id"], given["choice"]) if given else None,
    )
    return inference_run(request, user_answer=caller.user_answer)


def inference_run(request: InferenceRequest, *, user_answer: bool = True) -> InferenceResult:
    """Route ``request`` (``run_inference``), write its log row, and when it answers an earlier
    "Do you mean X or Y?" as a user (``user_answer``), record the choice as feedback about the asking
    request. A refused request comes back with ``result.error`` set, logged; its door raises or shows it."""
    result = run_inference(request)
    log_result(result)
    if result.error is None and result.clarified is not None and user_answer:
        feedback_record(
            project_id=request.project.pk,
            request_id=result.clarified.request_id,
            kind="disambiguation",
            choice=result.clarified.option.label_id,
            idempotency_key=ANSWERED_BY + request.request_id,
        )
    return result


def _refused(request: InferenceRequest, error: DomainError) -> InferenceResult:
    """``request``, refused before it reached the pipeline, logged with ``error``."""
    failed = InferenceResult(request=request)
    failed.error = error
    log_result(failed)
    return failed
