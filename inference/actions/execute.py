"""Step 8 — ARG-Action (ARG v1 §2.8): verify, clarify, execute, respond; every run recorded.

``run_action`` takes an Action / DirectAction target and goes through, in this order:

1. **policy checkpoints** — the node's type and labels must be admitted by ``policy_constraints``;
   a high-risk action needs the policy state ALLOW (RESTRICT or REFOCUS refuse it);
2. **idempotent replay** — a key this caller already used for this node returns the stored
   ``ActionExecution`` (the handler is not called again, whatever its status was: a TIMEOUT's side
   effect is unknown); the same key with other parameters is refused (``IdempotencyKeyReused``, 409);
3. **handler resolution** — ``python:<name>`` must be registered, ``webhook:<url>`` must be http(s);
4. **context preconditions** — the handler's ``required_context`` keys;
5. **extraction and clarification** — declared parameters the caller did not send are taken from the
   request context and the prompt (``inference.actions.extraction``; the caller's values win); a
   required ``source: context`` parameter still missing means the calling application cannot run it
   here (NEEDS_CONTEXT, the user is never asked for it); other missing or ill-typed required
   parameters → CLARIFY with one question naming all of them (one deterministic step), saying what
   was taken from the prompt;
6. **handler preconditions** — ``check_preconditions`` on the validated parameters; the node's other
   preconditions are reported as "to confirm";
7. **confirmation checkpoint** — high-risk actions (and medium-risk ones under RESTRICT) run only with
   an explicit ``confirm=true``; a dry run needs none;
8. **execution** — a dry run records what would be sent (status DRY_RUN, no side effect); a real run
   reserves the idempotency key first, so two concurrent duplicates run the handler once.

The ``ActionExecution`` row keeps the parameters and result with their PII replaced by the Memory
Guard's placeholders (``memory.pii.redact``): a replayed request gets that redacted copy.

An action that cannot run for this asker (an unmet precondition, a missing context parameter) still
answers: with the text of the nearest informational node (Info, InfoStable, FAQ, Shortcut; linked to
the action, the closest to the prompt) — or the action's own text — then why it was not run.

Nothing here raises on a failing integration: a failing or silent webhook, an unknown handler or a
handler exception are an ACTION outcome with status FAILED / TIMEOUT and a clear explanation.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any

import numpy as np
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from arg_platform.errors import RuleViolation, Violation
from inference.actions.checks import (
    ParameterCheck,
    PreconditionResult,
    PreconditionStatus,
    confirmed,
    context_checks,
    parameter_specs,
    parameters_validate,
    precondition_checks,
)
from inference.actions.extraction import Extraction, extract_parameters
from inference.actions.handlers import (
    Execution,
    ResolvedHandler,
    invoke,
    json_safe,
    preview,
    public_handler_ref,
    resolve_handler,
)
from inference.actions.registry import ActionContext, HandlerRegistry, default_registry
from inference.contracts import Citation, Envelope, Outcome, OutcomeKind, PolicyDecision, PolicyState
from inference.models import ActionExecution
from memory.pii import redact
from ontology.graph_snapshot import GraphSnapshot, NodeView

ACTION_NODE_TYPES = frozenset({"Action", "DirectAction"})
MAX_KEY_LENGTH = 128
IN_PROGRESS_MARKER = "in_progress"
STALE_AFTER_S = 60.0  # a reservation older than timeout + this never got its result (a crash)
POLL_INTERVAL_S = 0.05


class ActionStatus:
    """``Outcome.action["status"]``: the four recorded ones of ``ActionExecution.Status`` and the ones
    of an action that did not run (nothing recorded)."""

    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    TIMEOUT = "TIMEOUT"
    DRY_RUN = "DRY_RUN"
    IN_PROGRESS = "IN_PROGRESS"  # a concurrent duplicate is still running
    NOT_ALLOWED = "NOT_ALLOWED"
    NEEDS_PARAMETERS = "NEEDS_PARAMETERS"
    NEEDS_CONFIRMATION = "NEEDS_CONFIRMATION"
    NEEDS_CONTEXT = "NEEDS_CONTEXT"  # a ``source: context`` parameter the calling application did not send
    PRECONDITION_FAILED = "PRECONDITION_FAILED"


# The node types whose text answers a question (what an action that cannot run falls back to).
INFORMATION_TYPES = frozenset({"Info", "InfoStable", "FAQ", "Shortcut"})


def run_action(
    *,
    snapshot: GraphSnapshot,
    node_id: str,
    envelope: Envelope,
    decision: PolicyDecision,
    parameters: Mapping[str, object],
    dry_run: bool,
    idempotency_key: str | None,
    project_id: int,
    caller: str = "",
    registry: HandlerRegistry | None = None,
    timeout_s: float | None = None,
    prompt_vec: np.ndarray | None = None,
) -> Outcome:
    """Verify, clarify and execute the Action node ``node_id`` for this request (see the module doc).

    ``prompt_vec`` (the prompt's embedding) picks the informational node closest to the prompt when
    the action cannot run; without it the strongest link decides.

    ``caller`` names who sends the request (``token:<id>``, ``user:<id>``): idempotency keys are
    theirs. ``registry`` defaults to the process-wide one, ``timeout_s`` to
    ``settings.ACTION_TIMEOUT_S``. Raises ``IdempotencyKeyReused`` when the caller reuses a key for
    other parameters, and ``ValueError`` only for a caller bug: ``node_id`` unknown or not an Action.
    """
    if node_id not in snapshot.position:
        raise ValueError(f"node {node_id!r} is not in release v{snapshot.version}")
    node = snapshot.node(node_id)
    if node.type not in ACTION_NODE_TYPES:
        raise ValueError(f"node {node_id} is a {node.type}, not an Action")
    registry = registry or default_registry()
    timeout = float(timeout_s if timeout_s is not None else settings.ACTION_TIMEOUT_S)
    given = dict(parameters or {})
    key = storage_key(idempotency_key, envelope.request_id, dry_run=dry_run)
    report = _Report(
        node=node,
        handler=str(node.extras.get("handler") or ""),
        key=key,
        dry_run=dry_run,
        caller=caller[:64],
        digest=request_digest(given),
        information=lambda: _nearest_information(snapshot, node, decision, prompt_vec),
    )

    refusal = policy_refusal(node, decision)  # 1. policy first
    if refusal:
        return report.outcome(OutcomeKind.REFUSE, ActionStatus.NOT_ALLOWED, given, refusal)
    if not dry_run:  # 2. a retried request returns the first result
        stored = _stored(project_id, report)
        if stored is not None:
            if stored.request_digest and stored.request_digest != report.digest:
                raise IdempotencyKeyReused(key, stored.request_id)
            return _replay(report, _await_result(stored, timeout), timeout)
    resolved = resolve_handler(report.handler, registry)  # 3.
    if isinstance(resolved, str):
        return report.outcome(OutcomeKind.ACTION, ActionStatus.FAILED, given, f"{resolved}.")
    context = _context(
        envelope,
        project_id=project_id,
        node_id=node.node_id,
        handler=public_handler_ref(resolved.ref),
        key=key,
        dry_run=dry_run,
    )
    registered = resolved.registered
    checks = context_checks(registered, context)  # 4.
    if _unmet(checks):
        return report.precondition_failed(given, checks)
    specs = parameter_specs(node.extras)  # 5.
    extraction = extract_parameters(specs, given, prompt=envelope.prompt, context=envelope.context)
    report.extraction = extraction
    check = parameters_validate(specs, extraction.values)
    from_context = {spec.name for spec in specs if spec.from_context}
    if any(name in from_context for name in check.missing):
        return report.needs_context(check, checks, [n for n in check.missing if n in from_context])
    if not check.complete:
        return report.clarify_parameters(check, checks)
    preconditions = [str(p) for p in node.extras.get("preconditions") or ()]
    checks += precondition_checks(preconditions, registered, context, check.values)  # 6.
    if _unmet(checks):
        return report.precondition_failed(check.values, checks)
    if not dry_run and needs_confirmation(node, decision) and not confirmed(given):  # 7.
        return report.ask_confirmation(check, checks)
    if dry_run:  # 8.
        return _record_dry_run(report, resolved, check, checks, context, project_id, envelope)
    return _execute_once(report, resolved, check, checks, context, project_id, envelope, timeout)


# --- policy and confirmation checkpoints -------------------------------------------------------------


def policy_refusal(node: NodeView, decision: PolicyDecision) -> str | None:
    """Why the policy does not let this request run ``node``, or None."""
    constraints = decision.constraints
    if decision.state == PolicyState.BLOCK:
        return decision.message or "This request is blocked by the policy."
    if not constraints.admits_node_type(node.type):
        return decision.message or f"“{node.title}” is not available under your access policy."
    if node.labels and (
        any(label in constraints.forbidden_labels for label in node.labels)
        or not any(constraints.admits_label(label) for label in node.labels)
    ):
        return decision.message or f"“{node.title}” is outside what your access policy allows."
    if node.risk == "high" and decision.state != PolicyState.ALLOW:
        how = "restricted" if decision.state == PolicyState.RESTRICT else "being refocused"
        return (
            f"“{node.title}” is a high-risk action and cannot run while the request is {how} by the "
            "policy. Please contact support."
        )
    return None


def needs_confirmation(node: NodeView, decision: PolicyDecision) -> bool:
    """High-risk actions always ask; medium-risk ones ask when the policy restricts the request."""
    return node.risk == "high" or (node.risk == "medium" and decision.state == PolicyState.RESTRICT)


# --- idempotency -------------------------------------------------------------------------------------


def storage_key(idempotency_key: str | None, request_id: str, *, dry_run: bool) -> str:
    """The key the execution is recorded under: the caller's key, ``auto:<request id>`` without one,
    ``dry-run:<request id>`` for a dry run (a dry run never consumes the caller's key)."""
    caller_key = (idempotency_key or "").strip()
    key = f"dry-run:{request_id}" if dry_run else caller_key or f"auto:{request_id}"
    if len(key) > MAX_KEY_LENGTH:
        key = "sha256:" + hashlib.sha256(key.encode("utf-8")).hexdigest()
    return key


def request_digest(parameters: Mapping[str, object]) -> str:
    """SHA-256 of the request's parameters (``confirm`` aside: confirming is the same request)."""
    values = {k: v for k, v in parameters.items() if k != "confirm"}
    text = json.dumps(json_safe(values), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class IdempotencyKeyReused(RuleViolation):
    """The caller sent an idempotency key it already used for this action with other parameters."""

    status_code = 409

    def __init__(self, key: str, first_request_id: str) -> None:
        super().__init__(
            Violation(
                "action.idempotency_key_reused",
                f"idempotency key {key!r} was used for this action by request {first_request_id} with "
                "other parameters; send a new key for a new request",
                "idempotency_key",
            )
        )


def _stored(project_id: int, report: _Report) -> ActionExecution | None:
    return ActionExecution.objects.filter(
        project_id=project_id, caller=report.caller, node_id=report.node.node_id, idempotency_key=report.key
    ).first()


def _in_progress(row: ActionExecution) -> bool:
    return isinstance(row.result, dict) and row.result.get(IN_PROGRESS_MARKER) is True


def _stale(row: ActionExecution, timeout: float) -> bool:
    return timezone.now() - row.created_at > timedelta(seconds=timeout + STALE_AFTER_S)


def _await_result(row: ActionExecution, timeout: float) -> ActionExecution:
    """The row once its execution has finished (a concurrent duplicate may still be running it)."""
    deadline = time.monotonic() + timeout + 2.0
    while _in_progress(row) and not _stale(row, timeout) and time.monotonic() < deadline:
        time.sleep(POLL_INTERVAL_S)
        row.refresh_from_db()
    return row


def _execute_once(
    report: _Report,
    resolved: ResolvedHandler,
    check: ParameterCheck,
    checks: list[PreconditionResult],
    context: ActionContext,
    project_id: int,
    envelope: Envelope,
    timeout: float,
) -> Outcome:
    # Reserve the key before calling the handler: of two concurrent duplicates, the unique constraint
    # lets exactly one insert; the other waits for that row's result instead of acting twice. Until the
    # result is written, the row says TIMEOUT (the honest status if the process dies meanwhile).
    try:
        with transaction.atomic():
            row = ActionExecution.objects.create(
                project_id=project_id,
                idempotency_key=report.key,
                caller=report.caller,
                request_digest=report.digest,
                request_id=envelope.request_id,
                node_id=report.node.node_id,
                handler=resolved.ref,
                parameters=redact(json_safe(check.values)).value,
                status=ActionExecution.Status.TIMEOUT,
                result={IN_PROGRESS_MARKER: True},
            )
    except IntegrityError:
        stored = _stored(project_id, report)
        assert stored is not None  # the row that won the race
        if stored.request_digest and stored.request_digest != report.digest:
            raise IdempotencyKeyReused(report.key, stored.request_id) from None
        return _replay(report, _await_result(stored, timeout), timeout)
    execution = invoke(resolved, check.values, context, timeout_s=timeout)
    ActionExecution.objects.filter(pk=row.pk).update(
        status=execution.status, result=redact(execution.result).value, duration_ms=execution.duration_ms
    )
    return report.executed(execution, check, checks)


def _record_dry_run(
    report: _Report,
    resolved: ResolvedHandler,
    check: ParameterCheck,
    checks: list[PreconditionResult],
    context: ActionContext,
    project_id: int,
    envelope: Envelope,
) -> Outcome:
    execution = preview(resolved, check.values, context)
    try:
        with transaction.atomic():
            ActionExecution.objects.create(
                project_id=project_id,
                idempotency_key=report.key,
                caller=report.caller,
                request_digest=report.digest,
                request_id=envelope.request_id,
                node_id=report.node.node_id,
                handler=resolved.ref,
                parameters=redact(json_safe(check.values)).value,
                status=ActionExecution.Status.DRY_RUN,
                result=redact(execution.result).value,
            )
    except IntegrityError:  # the same request asked for the same dry run twice: one record is enough
        pass
    return report.executed(execution, check, checks)


def _replay(report: _Report, row: ActionExecution, timeout: float) -> Outcome:
    if _in_progress(row):
        stale = _stale(row, timeout)
        status = ActionStatus.TIMEOUT if stale else ActionStatus.IN_PROGRESS
        text = (
            "An earlier execution with this idempotency key never recorded a result; whether the "
            "action happened is unknown. Check before retrying with a new key."
            if stale
            else "An execution with this idempotency key is still running; retry the same request "
            "shortly to get its result."
        )
        return report.outcome(OutcomeKind.ACTION, status, row.parameters, text, handler=row.handler)
    text = (
        f"Returned the recorded result of the execution with idempotency key {row.idempotency_key} "
        f"(request {row.request_id}, {row.status}); the action was not run again."
    )
    return report.outcome(
        OutcomeKind.ACTION,
        row.status,
        row.parameters,
        text,
        result=row.result,
        handler=row.handler,
        replayed=True,
    )


# --- the response ------------------------------------------------------------------------------------


def _context(
    envelope: Envelope, *, project_id: int, node_id: str, handler: str, key: str, dry_run: bool
) -> ActionContext:
    """What a handler is told about the request; ``project_id`` is the project the execution is recorded
    under (whose webhook secret signs the call)."""
    ctx = envelope.context
    return ActionContext(
        project_id=project_id,
        request_id=envelope.request_id,
        node_id=node_id,
        handler=handler,
        idempotency_key=key,
        dry_run=dry_run,
        role=envelope.role_key,
        user_id=ctx.user_id,
        session_id=ctx.session_id,
        channel=ctx.channel,
        product=ctx.product,
        language=envelope.language,
        typology=envelope.typology_key,
        timestamp=ctx.timestamp.isoformat() if ctx.timestamp else None,
    )


def _unmet(checks: Sequence[PreconditionResult]) -> list[PreconditionResult]:
    return [c for c in checks if c.status == PreconditionStatus.UNMET]


def _to_confirm(checks: Sequence[PreconditionResult]) -> str:
    texts = [c.text for c in checks if c.status == PreconditionStatus.TO_CONFIRM]
    if not texts:
        return ""
    return " Preconditions to confirm (not checked automatically): " + "; ".join(texts) + "."


def _describe(values: Mapping[str, Any]) -> str:
    return ", ".join(f"{name}={value}" for name, value in values.items()) or "no parameters"


class _Report:
    """Builds the ``Outcome`` and its ``action`` dict for one ``run_action`` call."""

    def __init__(
        self,
        *,
        node: NodeView,
        handler: str,
        key: str,
        dry_run: bool,
        caller: str,
        digest: str,
        information: Callable[[], NodeView | None] = lambda: None,
    ) -> None:
        self.node = node
        self.handler = handler
        self.key = key
        self.dry_run = dry_run
        self.caller = caller  # whose key it is
        self.digest = digest  # request_digest of the parameters sent
        self.information = information  # the informational node answering when the action cannot run
        self.extraction: Extraction | None = None  # what step 5 took from the context and the prompt

    def taken(self, values: Mapping[str, Any]) -> str:
        """The sentence telling the user which values were taken from their message, or ""."""
        names = [n for n in (self.extraction.from_prompt if self.extraction else ()) if n in values]
        if not names:
            return ""
        return " From your message I used " + ", ".join(f"{n}={values[n]}" for n in names) + "."

    def fallback_text(self) -> tuple[str, tuple[Citation, ...]]:
        """The information answering the asker when the action cannot run: the nearest informational
        node's text, else the action's own text (with no citation)."""
        info = self.information()
        if info is not None and info.chunk.strip():
            return info.chunk.strip(), (Citation(info.node_id, info.title, info.chunk[:200]),)
        return self.node.chunk.strip(), ()

    def outcome(
        self,
        kind: OutcomeKind,
        status: str,
        parameters: Mapping[str, Any],
        explanation: str,
        *,
        result: Mapping[str, Any] | None = None,
        checks: Sequence[PreconditionResult] = (),
        missing: tuple[str, ...] = (),
        handler: str | None = None,
        replayed: bool = False,
        extra: Mapping[str, Any] | None = None,
        citations: tuple[Citation, ...] = (),
        extra_details: Mapping[str, object] | None = None,
    ) -> Outcome:
        extraction = self.extraction
        details: dict[str, object] = {}
        if extraction is not None and (extraction.from_prompt or extraction.from_context):
            # names only: the outcome details are logged as they are; the values stay in ``action``,
            # which the log stores scrubbed by the Memory Guard
            details = {
                "parameters_from_prompt": list(extraction.from_prompt),
                "parameters_from_context": list(extraction.from_context),
            }
        action: dict[str, object] = {
            "handler": public_handler_ref(handler or self.handler),
            "node_id": self.node.node_id,
            "parameters": json_safe(dict(parameters)),
            "status": status,
            "result": json_safe(dict(result or {})),
            "idempotency_key": self.key,
            "explanation": explanation,
            "risk": self.node.risk,
            "dry_run": self.dry_run,
            "replayed": replayed,
            "preconditions": [c.as_json() for c in checks],
            **(extra or {}),
        }
        return Outcome(
            kind=kind,
            answer=explanation,
            action=action,
            missing_parameters=missing,
            citations=citations,
            details={**details, **(extra_details or {})},
        )

    def precondition_failed(self, parameters: Mapping[str, Any], checks: list[PreconditionResult]) -> Outcome:
        unmet = _unmet(checks)
        reasons = "; ".join(f"{c.text}" + (f" ({c.reason})" if c.reason else "") for c in unmet)
        information, citations = self.fallback_text()
        text = f"I could not {_lower_first(self.node.title)} here: {reasons}."
        text = f"{information}\n\n{text}" if information else text
        return self.outcome(
            OutcomeKind.ACTION,
            ActionStatus.PRECONDITION_FAILED,
            parameters,
            text,
            checks=checks,
            citations=citations,
            extra_details={"information_node": citations[0].node_id} if citations else None,
        )

    def needs_context(
        self, check: ParameterCheck, checks: list[PreconditionResult], names: list[str]
    ) -> Outcome:
        """A required ``source: context`` parameter is missing: the information, and what the calling
        application would have to send — never a question to the user about internal identifiers."""
        information, citations = self.fallback_text()
        text = (
            f"I cannot {_lower_first(self.node.title)} from here: the application you are using did "
            f"not identify the {', '.join(names)} it applies to. You can do it from your account, or ask "
            "support."
        )
        text = f"{information}\n\n{text}" if information else text
        return self.outcome(
            OutcomeKind.ACTION,
            ActionStatus.NEEDS_CONTEXT,
            check.values,
            text,
            checks=checks,
            citations=citations,
            extra={"missing_context": names},
            extra_details={"information_node": citations[0].node_id} if citations else None,
        )

    def clarify_parameters(self, check: ParameterCheck, checks: list[PreconditionResult]) -> Outcome:
        specs = {spec.name: spec for spec in parameter_specs(self.node.extras)}
        asks = [
            f"{name}" + (f" ({specs[name].description})" if specs[name].description else "")
            for name in check.missing
        ]
        asks += [f"{name} ({expected})" for name, expected in check.invalid]
        text = f"To {_lower_first(self.node.title)}, please provide: " + "; ".join(asks) + "."
        text += self.taken(check.values)
        missing = check.missing + tuple(name for name, _ in check.invalid)
        return self.outcome(
            OutcomeKind.CLARIFY,
            ActionStatus.NEEDS_PARAMETERS,
            check.values,
            text,
            checks=checks,
            missing=missing,
            extra={"invalid_parameters": dict(check.invalid), "ignored_parameters": list(check.ignored)},
        )

    def ask_confirmation(self, check: ParameterCheck, checks: list[PreconditionResult]) -> Outcome:
        warning = "This is a high-risk action. " if self.node.risk == "high" else ""
        text = (
            f"Please confirm: {_lower_first(self.node.title)} with {_describe(check.values)}. {warning}"
            "Send the same request with confirm=true to proceed."
            + self.taken(check.values)
            + _to_confirm(checks)
        )
        return self.outcome(
            OutcomeKind.CLARIFY,
            ActionStatus.NEEDS_CONFIRMATION,
            check.values,
            text,
            checks=checks,
            missing=("confirm",),
        )

    def executed(
        self, execution: Execution, check: ParameterCheck, checks: list[PreconditionResult]
    ) -> Outcome:
        title = self.node.title
        why = execution.explanation.rstrip(".")
        if execution.status == ActionStatus.SUCCEEDED:
            text = f"“{title}”: done." + self.taken(check.values) + _to_confirm(checks)
        elif execution.status == ActionStatus.DRY_RUN:
            text = (
                f"Dry run of “{title}”: parameters and preconditions are valid; nothing was sent."
                + _to_confirm(checks)
            )
        elif execution.status == ActionStatus.TIMEOUT:
            text = (
                f"“{title}” did not complete: {why}. Check the outcome before retrying; "
                "a retry with the same idempotency key returns this result."
            )
        else:
            text = (
                f"“{title}” failed: {why}. You can retry with a new idempotency key "
                "or ask support to complete it."
            )
        ignored = {"ignored_parameters": list(check.ignored)} if check.ignored else {}
        return self.outcome(
            OutcomeKind.ACTION,
            execution.status,
            check.values,
            text,
            result=execution.result,
            checks=checks,
            extra={"duration_ms": execution.duration_ms, **ignored},
        )


def _nearest_information(
    snapshot: GraphSnapshot, node: NodeView, decision: PolicyDecision, prompt_vec: np.ndarray | None
) -> NodeView | None:
    """The ACTIVE informational node linked to ``node`` (either direction) that the policy admits and
    that is closest to the prompt (by embedding; by link weight without one), or None."""
    positions, _types, weights = snapshot.neighbours(node.position, direction="both")
    constraints = decision.constraints
    best: tuple[float, NodeView] | None = None
    for position, weight in zip(positions.tolist(), weights.tolist(), strict=True):
        view = snapshot.node(int(position))
        if view.type not in INFORMATION_TYPES or view.status != "ACTIVE":
            continue
        if not constraints.admits_node_type(view.type) or any(
            label in constraints.forbidden_labels or not constraints.admits_label(label)
            for label in view.labels
        ):
            continue
        score = float(weight)
        if prompt_vec is not None and snapshot.embeddings is not None:
            score = float(np.dot(snapshot.embeddings[view.position], prompt_vec))
        if best is None or score > best[0]:
            best = (score, view)
    return best[1] if best else None


def _lower_first(title: str) -> str:
    if len(title) > 1 and title[0].isupper() and title[1].islower():
        return title[0].lower() + title[1:]
    return title
