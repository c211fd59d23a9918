"""Services of the online path: one request from its validated input to its result.

Every request a caller sends leaves exactly one InferenceLog row (ARG §2.9), whatever becomes of it;
the row is written here, never by a door (the API's ``/infer``, the browser's "Try a request"), so no
door can forget it or write it twice.
"""

from __future__ import annotations

from arg_platform.errors import DomainError
from inference.feedback import ANSWERED_BY, feedback_record
from inference.logbook import log_result
from inference.pipeline import InferenceRequest, InferenceResult, run_inference


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


def inference_refuse(request: InferenceRequest, error: DomainError) -> DomainError:
    """Log ``request``, refused before it reached the pipeline (e.g. an invalid body), with ``error``;
    the door raises the returned error."""
    failed = InferenceResult(request=request)
    failed.error = error
    log_result(failed)
    return error
