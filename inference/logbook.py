"""Mandatory logging (§2.2, §2.8, §2.9.6, §3.1): one InferenceLog row per authenticated request.

What a person typed or an action handled — the prompt, the conversation history in the context,
action parameters and results, the answer, the error text — is stored as the Memory Guard scrubbed it
(``memory.pii.redact``), and the row's ``pii`` lists the kinds found. Identifiers the client chose
(``user_id``, ``session_id``) are kept as sent: they are what erasure by user id finds.
"""

from __future__ import annotations

from typing import Any

from arg_platform.append_rows import insert_row
from arg_platform.metrics import inference_observe
from arg_platform.storable_text import storable_text
from inference.contracts import OutcomeKind, plain, plain_fields
from inference.models import InferenceLog
from inference.pipeline import InferenceResult
from memory.pii import Redacted, redact

# Context keys kept as the client sent them: identifiers and short codes, not what a person typed.
CONTEXT_KEPT = frozenset({"role", "typology", "session_id", "user_id", "timestamp", "language"})


def _json(value: Any) -> Any:
    return {} if value is None else plain(value)


def log_result(result: InferenceResult) -> InferenceLog:
    """Write the request's one log row (also for refused, blocked and failed requests).

    One prepared INSERT (``arg_platform.append_rows``): the row is on the path of every request."""
    request = result.request
    decision, weaver, landing, route, outcome = (
        result.decision,
        result.weaver,
        result.landing,
        result.route,
        result.outcome,
    )
    constraints = {}
    if decision is not None:
        c = decision.constraints
        constraints = {
            "allowed_labels": None if c.allowed_labels is None else sorted(c.allowed_labels),
            "forbidden_labels": sorted(c.forbidden_labels),
            "allowed_node_types": None if c.allowed_node_types is None else sorted(c.allowed_node_types),
            "forbidden_node_types": sorted(c.forbidden_node_types),
            "max_hops": c.max_hops,
            "memory_scopes": sorted(c.memory_scopes),
            "response_mode": str(decision.response_mode),
            **({"product": c.product} if c.product else {}),  # context.product narrowing the nodes
        }
    envelope = result.envelope
    found: set[str] = set()

    def scrubbed(value: Any) -> Any:
        redacted: Redacted = redact(value)
        found.update(redacted.kinds)
        return redacted.value

    context = {
        k: (str(v) if v is not None and k == "timestamp" else v if k in CONTEXT_KEPT else scrubbed(v))
        for k, v in plain_fields(request.context).items()
    }
    prompt = scrubbed(storable_text(request.prompt[:20_000]))
    action = scrubbed(outcome.action or {}) if outcome else {}
    answer = scrubbed(storable_text(outcome.answer)) if outcome else ""
    error = scrubbed(storable_text(result.error.message))[:500] if result.error else ""
    log = insert_row(
        InferenceLog(
            project=request.project,
            request_id=request.request_id,
            correlation_id=request.correlation_id,
            release_id=result.release_id,
            release_version=result.release_version,
            token=request.token,
            role_key=(envelope.role_key if envelope else request.context.role) or "",
            typology_key=(envelope.typology_key if envelope else request.context.typology) or "",
            session_id=request.context.session_id or "",
            user_id=request.context.user_id or "",
            prompt=prompt,
            language=envelope.language if envelope else "",
            context=context,
            policy_state=str(decision.state) if decision else "",
            policy_constraints=constraints,
            policy_reasons=list(decision.reasons) if decision else [],
            labels_raw=result.lexical.raw if result.lexical else {},
            labels_blocked=[list(b) for b in result.lexical.blocked] if result.lexical else [],
            weaver=_weaver_json(result),
            labels_final=weaver.l_final if weaver else {},
            confidence=weaver.confidence if weaver else None,
            flags=result.flags,
            landing=_json(landing),
            path_nodes=list(route.path_nodes) if route else [],
            path_edges=[list(e) for e in route.path_edges] if route else [],
            target_node=(route.target or "") if route else ((landing.node_start or "") if landing else ""),
            fast_path=bool(route and route.fast_path),
            outcome_kind=str(outcome.kind) if outcome else "",
            action=action,
            c_info=outcome.c_info if outcome else None,
            active_check=_json(outcome.active_check) if outcome and outcome.active_check else {},
            outcome_status=_status(result),
            answer=answer,
            outcome_details=_plain(outcome.details) if outcome else {},
            timings_ms=result.timings_ms,
            error=error,
            pii=sorted(found),
        )
    )
    inference_observe(
        project=request.project.slug,
        timings_ms=result.timings_ms,
        outcome_kind=log.outcome_kind,
        status=log.outcome_status,
        policy_state=log.policy_state,
        flags=log.flags,
    )
    return log


def _weaver_json(result: InferenceResult) -> dict[str, Any]:
    """The weaver's column: its rankings and, for a continuation, the question answered and the
    label the user chose (``inference.steps.clarification``), kept even when the policy answered first."""
    weaver, out = result.weaver, {}
    if weaver is not None:
        out = {
            "top_k": weaver.top_k,
            "classifier": weaver.classifier,
            "proposer_used": weaver.proposer_used,
            "rejected": weaver.rejected,
            "shadow": weaver.shadow,
            "candidates": weaver.candidates,  # C = L_raw ∪ vector Top-K: mode, size, classifier's own top
        }
        if weaver.proposal:  # the bounded proposer was asked: its result, and a label it proposed
            out["proposal"] = weaver.proposal
    if result.clarified is not None:
        out["chosen"] = {"request_id": result.clarified.request_id, **result.clarified.option.as_json()}
    return out


def _plain(value: Any) -> Any:
    """JSON-safe copy of free-form details (tuples → lists, other objects → str)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


# The status of a request refused as invalid before it was routed (a 4xx: a field broke a rule of the
# envelope or the serializer, or the caller may not ask it) — the client's mistake, not a failure.
REJECTED = "REJECTED"


def _status(result: InferenceResult) -> str:
    """The outcome status: the Info status, ``ACTION_<status>``, the outcome kind, ``REJECTED`` for a
    request refused as invalid (``result.error`` with a 4xx status), else ``ERROR``."""
    outcome = result.outcome
    if outcome is None:
        if result.error is not None and getattr(result.error, "status_code", 500) < 500:
            return REJECTED
        return "ERROR"
    if outcome.info_status is not None:
        return str(outcome.info_status)
    if outcome.kind == OutcomeKind.ACTION and outcome.action:
        return f"ACTION_{outcome.action.get('status', 'UNKNOWN')}"
    return str(outcome.kind)
