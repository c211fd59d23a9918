"""Resolve an Action node's handler reference and run it (or show what it would do), never raising.

``resolve_handler`` turns ``extras["handler"]`` into a ``ResolvedHandler`` or explains why it cannot;
``invoke`` runs it and ``preview`` describes the call a dry run stands in for. Both return an
``Execution`` whose ``status`` is one of ``ActionExecution.Status``.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from arg_platform.handler_targets import handler_shown
from inference.actions.registry import (
    PYTHON_PREFIX,
    WEBHOOK_PREFIX,
    ActionContext,
    ActionFailed,
    HandlerRegistry,
    RegisteredHandler,
)
from inference.actions.webhook import webhook_post, webhook_request, webhook_url_problem
from projects.models import Project
from projects.webhook_secrets import project_webhook_secret, webhook_signature

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ResolvedHandler:
    """A handler reference that can run: ``kind`` is "python" (with its registration) or "webhook"."""

    ref: str
    kind: str
    target: str  # the registered name or the URL
    registered: RegisteredHandler | None = None


HIDDEN_TARGET = "(webhook target: visible to curators)"


def public_handler_ref(ref: str) -> str:
    """``ref`` as a client may see it: a webhook's URL is shown to curators only (it names internal
    infrastructure), so ``webhook:<url>`` becomes ``webhook``."""
    return str(handler_shown(ref, curator=False))


@dataclass(frozen=True)
class Execution:
    status: str  # SUCCEEDED | FAILED | TIMEOUT | DRY_RUN
    result: dict[str, Any] = field(default_factory=dict)
    explanation: str = ""
    duration_ms: float = 0.0


def resolve_handler(ref: str, registry: HandlerRegistry) -> ResolvedHandler | str:
    """The runnable handler behind ``ref``, or the reason there is none (as text)."""
    ref = (ref or "").strip()
    if ref.startswith(PYTHON_PREFIX):
        name = ref[len(PYTHON_PREFIX) :]
        registered = registry.get(name)
        if registered is None:
            return f"no handler registered for {ref}"
        return ResolvedHandler(ref=ref, kind="python", target=name, registered=registered)
    if ref.startswith(WEBHOOK_PREFIX):
        url = ref[len(WEBHOOK_PREFIX) :]
        problem = webhook_url_problem(url)
        return problem or ResolvedHandler(ref=ref, kind="webhook", target=url)
    return f"no handler registered for this action ({ref or 'no handler declared'})"


def webhook_body(
    handler: ResolvedHandler, parameters: Mapping[str, Any], context: ActionContext
) -> dict[str, Any]:
    return {
        "action": context.node_id,
        "handler": public_handler_ref(handler.ref),
        "parameters": dict(parameters),
        "context": context.as_json(),
        "idempotency_key": context.idempotency_key,
    }


def preview(handler: ResolvedHandler, parameters: Mapping[str, Any], context: ActionContext) -> Execution:
    """What the call would send, without sending it (a dry run)."""
    if handler.kind == "webhook":
        would_send = webhook_request(
            HIDDEN_TARGET,
            webhook_body(handler, parameters, context),
            idempotency_key=context.idempotency_key,
        )
    else:
        would_send = {"call": handler.ref, "parameters": dict(parameters), "context": context.as_json()}
    return Execution(
        status="DRY_RUN",
        result={"would_send": json_safe(would_send)},
        explanation="Dry run: validated, nothing was sent.",
    )


def invoke(
    handler: ResolvedHandler, parameters: Mapping[str, Any], context: ActionContext, *, timeout_s: float
) -> Execution:
    """Run the handler once. Python handlers run in-process (no timeout); webhooks get ``timeout_s``."""
    if handler.kind == "webhook":
        project = Project.objects.get(pk=context.project_id)
        secret = project_webhook_secret(project=project)
        reply = webhook_post(
            handler.target,
            webhook_body(handler, parameters, context),
            idempotency_key=context.idempotency_key,
            timeout_s=timeout_s,
            sign=lambda data: webhook_signature(secret=secret, body=data),
        )
        return Execution(reply.status, reply.result, reply.explanation, reply.duration_ms)
    assert handler.registered is not None
    started = time.perf_counter()
    try:
        raw = handler.registered.func(parameters, context)
        result = json_safe(dict(raw) if isinstance(raw, Mapping) else {"response": raw})
        status, explanation = "SUCCEEDED", "done"
    except ActionFailed as exc:
        status, explanation = "FAILED", str(exc) or "the handler reported a failure"
        result = {"error": explanation}
    except Exception as exc:  # a handler bug must reach the user as a failed action, not a 500
        logger.exception("action handler %s raised", handler.ref)
        status, explanation = "FAILED", f"the handler raised {type(exc).__name__}: {exc}"
        result = {"error": explanation}
    return Execution(status, result, explanation, round((time.perf_counter() - started) * 1000, 3))


def json_safe(value: Any) -> Any:
    """``value`` as plain JSON types (what a JSONField and the API can carry)."""
    return json.loads(json.dumps(value, default=str))
