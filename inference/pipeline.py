"""The online ARG pipeline (§2 steps 1–10), in the protocol's order, under its three hard rules.

* **Policy first** — the Policy Manager's pre-check runs before any retrieval; a BLOCKed or refocused
  request returns before the lexical step is even called.
* **Taxonomy validity wins** — labels reach landing only through the Context Weaver's validator. An
  abstained landing (out of domain, or a confidence below the release's ask threshold) gets the
  controlled fallback of ``inference.steps.fallback``: the policy's refocus message when its label
  gate alone emptied ``L_final``, "Do you mean X or Y?" for in-domain ambiguity, else the OutOfScope
  node the landing chose (an accusing one only on strong evidence). A vague prompt ("access",
  "help") is asked about whatever the landing says.
* **The graph is fixed during the request** — one snapshot is pinned at the start and every step reads
  that frozen object; nothing here writes to the graph store.

``run_inference`` returns an ``InferenceResult``; ``inference.logbook.log_result`` writes the one
InferenceLog row every authenticated request leaves.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, TypedDict

from arg_platform.errors import DomainError, RuleViolation
from inference.contracts import (
    Envelope,
    Flag,
    Landing,
    LexicalCandidates,
    Outcome,
    OutcomeKind,
    PolicyDecision,
    PolicyState,
    RequestContext,
    Route,
    WeaverResult,
)
from inference.steps.clarification import Clarified
from inference.steps.landing import LandingParams
from inference.steps.policy_manager import secret_notice
from inference.steps.products import narrowed
from inference.steps.style import styled_outcome
from inference.steps.weaver import WeaverParams
from ontology import snapshot_registry  # a module: pin_snapshot is looked up per call (tests patch it)

ACTION_TYPES = frozenset({"Action", "DirectAction"})
INFO_TYPES = frozenset({"Info", "InfoStable", "FAQ", "Shortcut", "MemoryRead", "Decision"})
MEMORY_TYPES = frozenset({"MemoryWrite", "MemoryRead"})


class NoActiveRelease(DomainError):
    """The project has nothing published yet: the online path serves only releases."""

    status_code = 409


@dataclass(frozen=True)
class RoutingParams:
    """The thresholds of the Context Weaver and of the landing step. The defaults are the platform's; a
    caller measuring routing on its own validation data may run the pipeline with others."""

    weaver: WeaverParams = field(default_factory=WeaverParams)
    landing: LandingParams = field(default_factory=LandingParams)


DEFAULT_ROUTING = RoutingParams()


@dataclass(frozen=True)
class InferenceRequest:
    request_id: str
    project: Any
    prompt: str
    context: RequestContext
    token: Any = None
    correlation_id: str = ""  # the client's own id for the request (arg_platform.request_id)
    caller: str = ""  # who sends it (token:<id> / user:<id>): whose idempotency keys these are
    default_role: str | None = None
    role_fixed: bool = False  # the caller may name no role but ``default_role`` (envelope.build_envelope)
    parameters: dict[str, Any] = field(default_factory=dict)
    dry_run: bool = False
    idempotency_key: str | None = None
    snapshot: Any = None  # a frozen GraphSnapshot to serve from instead of the active one (offline replay)
    disambiguation: tuple[str, str] | None = None  # (asking request id, choice): a continuation


@dataclass
class InferenceResult:
    """Everything one request decided, step by step (what the log row and the trace viewer show)."""

    request: InferenceRequest
    release_id: int | None = None
    release_version: int | None = None
    envelope: Envelope | None = None
    decision: PolicyDecision | None = None
    lexical: LexicalCandidates | None = None
    weaver: WeaverResult | None = None
    landing: Landing | None = None
    route: Route | None = None
    outcome: Outcome | None = None
    clarified: Clarified | None = None  # a continuation: the question it answers and the option taken
    postcheck_reasons: tuple[str, ...] = ()
    explanation: str = ""
    timings_ms: dict[str, float] = field(default_factory=dict)
    error: RuleViolation | DomainError | None = None
    step_flags: tuple[str, ...] = ()  # flags of steps other than weaver and landing (``language:fr``)

    @property
    def flags(self) -> list[str]:
        flags: set[str] = set(self.step_flags)
        for part in (self.weaver, self.landing):
            if part is not None:
                flags |= {str(f) for f in part.flags}
        return sorted(flags)


@contextmanager
def _step(result: InferenceResult, name: str) -> Iterator[None]:
    started = time.perf_counter()
    try:
        yield
    finally:
        result.timings_ms[name] = round((time.perf_counter() - started) * 1000, 3)


def _typology(runtime: Any, envelope: Envelope) -> dict[str, Any]:
    key = envelope.typology_key or runtime.default_typology
    return dict(runtime.typologies.get(key, {})) if key else {}


def run_inference(request: InferenceRequest, *, params: RoutingParams = DEFAULT_ROUTING) -> InferenceResult:
    """Route one request to an Action, an Info answer, a memory read/write or a safe refusal.

    A prompt holding secret PII (a card number, …) is answered as any other, and the answer ends with
    the Policy Manager's warning not to share such numbers (``policy_manager.secret_notice``)."""
    result = _routed(request, params)
    decision, outcome = result.decision, result.outcome
    if decision is not None and decision.secrets and outcome is not None:
        notice = secret_notice(decision.secrets)
        result.outcome = _with_answer(outcome, f"{outcome.answer}\n\n{notice}" if outcome.answer else notice)
    return result


def _routed(request: InferenceRequest, params: RoutingParams) -> InferenceResult:
    """The pipeline in protocol order: envelope, policy, lexical, weaver, landing, traversal, outcome."""
    from inference import actions
    from inference.runtime import runtime_for
    from inference.steps import info, landing, lexical, policy_manager, traversal
    from inference.steps.clarification import clarified_request
    from inference.steps.envelope import build_envelope
    from inference.steps.fallback import abstention_outcome, is_vague, vague_outcome
    from inference.steps.graph_index import graph_runtime_for
    from inference.steps.language import covered_languages, language_outcome, uncovered_language
    from inference.steps.memory_signal import memory_signal_for
    from inference.steps.proposer import proposer_for
    from inference.steps.weaver import weave, weaver_index_for

    result = InferenceResult(request=request)
    started = time.perf_counter()
    try:
        # pinned for the whole request (hard rule 3); offline replay passes a shadow release's snapshot
        snapshot = (
            request.snapshot
            if request.snapshot is not None
            else snapshot_registry.pin_snapshot(request.project.pk)
        )
        if snapshot is None:
            raise NoActiveRelease(f"project {request.project.slug} has no active release; publish one first")
        result.release_id, result.release_version = snapshot.release_id, snapshot.version
        runtime = runtime_for(snapshot)
        with _step(result, "envelope"):
            envelope = build_envelope(
                request_id=request.request_id,
                project_id=request.project.pk,
                prompt=request.prompt,
                context=request.context,
                default_role=request.default_role,
                default_typology=None,
                runtime=runtime,
                role_fixed=request.role_fixed,
            )
        result.envelope = envelope
        if request.disambiguation is not None:  # input, checked before anything is decided
            asked_in, choice = request.disambiguation
            result.clarified = clarified_request(
                project_id=request.project.pk, request_id=asked_in, choice=choice
            )
        with _step(result, "policy"):
            decision = narrowed(
                policy_manager.precheck(envelope, runtime), envelope.context.product, runtime.products
            )
        result.decision = decision
        if decision.state == PolicyState.BLOCK:  # policy first: nothing below runs (hard rule 1)
            result.outcome = Outcome(kind=OutcomeKind.REFUSE, answer=decision.message)
            result.explanation = "Refused by the policy (" + ", ".join(decision.reasons) + ")."
            return result
        language = uncovered_language(envelope, covered_languages(snapshot.documents))
        if language is not None:  # a language the release does not cover: its message, not routing
            result.outcome, result.explanation, flag = language_outcome(
                language, decision=decision, documents=snapshot.documents
            )
            result.step_flags = (*result.step_flags, flag)
            return result
        if decision.state == PolicyState.ALLOW_WITH_REFOCUS:
            result.outcome = Outcome(kind=OutcomeKind.REFOCUS, answer=decision.message)
            result.explanation = (
                "Outside this assistant's scope; refocused (" + ", ".join(decision.reasons) + ")."
            )
            return result
        with _step(result, "lexical"):
            result.lexical = lexical.lexical_candidates(envelope, decision, runtime)
        with _step(result, "embed"):
            prompt_vec = runtime.encoder.embed_one(envelope.prompt)  # the release's encoder, once
        with _step(result, "weaver"):
            result.weaver = weave(
                index=weaver_index_for(snapshot, runtime),
                prompt_vec=prompt_vec,
                lexical=result.lexical,
                decision=decision,
                chosen=result.clarified.option.label_id if result.clarified is not None else None,
                params=params.weaver,
                proposer=proposer_for(
                    prompt=envelope.prompt, taxonomy=runtime.taxonomy, project=request.project.slug
                ),
            )
        graph_runtime = graph_runtime_for(snapshot)
        with _step(result, "landing"):
            result.landing = landing.land(
                snapshot,
                graph_runtime,
                weaver=result.weaver,
                decision=decision,
                prompt_vec=prompt_vec,
                params=(
                    params.landing if result.clarified is None else replace(params.landing, answered=True)
                ),
                mood=envelope.mood,
            )
        if result.clarified is None and is_vague(envelope.prompt, result.weaver):  # asked about, not judged
            result.outcome, result.explanation = vague_outcome(
                envelope=envelope,
                runtime=runtime,
                decision=decision,
                weaver=result.weaver,
                lexical=result.lexical,
            )
            result.outcome = styled_outcome(result.outcome, _typology(runtime, envelope))  # formal only
            return result
        if result.landing.abstained:  # the controlled fallback: refocus, clarify, or out of scope
            fallback = abstention_outcome(
                envelope=envelope,
                runtime=runtime,
                decision=decision,
                weaver=result.weaver,
                landing=result.landing,
                lexical=result.lexical,
                snapshot=snapshot,
            )
            if fallback is not None:
                result.outcome, result.explanation = fallback
                result.outcome = styled_outcome(result.outcome, _typology(runtime, envelope))  # formal only
                return result
        start = result.landing.node_start
        if start is None or result.landing.abstained or snapshot.node(start).type == "OutOfScope":
            result.outcome = _out_of_scope(snapshot, result.landing, decision)
            result.explanation = _explain(result, snapshot, runtime)
            return result
        typology = _typology(runtime, envelope)
        memory_signal = None
        if envelope.context.user_id and request.snapshot is None:  # S_memory: live requests of a known user
            with _step(result, "memory_signal"):
                memory_signal = memory_signal_for(
                    project_id=request.project.pk,
                    user_id=envelope.context.user_id,
                    prompt_vec=prompt_vec,
                    resolve_alias=snapshot.resolve_alias,
                )
        with _step(result, "traversal"):
            result.route = traversal.route(
                snapshot,
                graph_runtime,
                landing=result.landing,
                weaver=result.weaver,
                decision=decision,
                typology=typology,
                prompt_vec=prompt_vec,
                memory_signal=memory_signal,
            )
        if result.route.target is None:
            if result.route.reason == "start_forbidden":  # the policy gates the landing point itself
                result.step_flags = (*result.step_flags, "route:start_forbidden")
                result.outcome = _out_of_scope(snapshot, result.landing, decision)
                result.explanation = _explain(result, snapshot, runtime)
                return result
            # no terminal within reach (hop caps, inhibited exits): the landing point answers itself, and
            # the flag ``route:no_terminal`` tells the trace and the offline loop
            result.route = replace(result.route, target=start, path_nodes=result.route.path_nodes or (start,))
            result.step_flags = (*result.step_flags, f"route:{result.route.reason}")
        target = result.route.target or start
        node = snapshot.node(target)
        with _step(result, "outcome"):
            if node.type in ACTION_TYPES:
                outcome = actions.run_action(
                    snapshot=snapshot,
                    node_id=target,
                    envelope=envelope,
                    decision=decision,
                    parameters=request.parameters,
                    dry_run=request.dry_run,
                    idempotency_key=request.idempotency_key,
                    project_id=request.project.pk,
                    caller=request.caller,
                    prompt_vec=prompt_vec,
                )
            elif node.type == "OutOfScope":
                outcome = _out_of_scope(snapshot, result.landing, decision, node_id=target)
            elif node.type == "Clarify":
                outcome = Outcome(kind=OutcomeKind.CLARIFY, answer=node.chunk)
            elif node.type in MEMORY_TYPES:  # imported here only: the memory step stays off the hot path
                from inference.steps.memory import memory_outcome

                outcome = memory_outcome(
                    snapshot=snapshot,
                    node=node,
                    envelope=envelope,
                    decision=decision,
                    weaver=result.weaver,
                    landing=result.landing,
                    prompt_vec=prompt_vec,
                    request=request,
                )
            else:
                outcome = info.answer_info(
                    snapshot=snapshot,
                    route=result.route,
                    envelope=envelope,
                    decision=decision,
                    weaver=result.weaver,
                    prompt_vec=prompt_vec,
                    **_active_check_boost(snapshot, target),
                )
            outcome = styled_outcome(outcome, typology, chunk=node.chunk)  # the typology's response_style
        with _step(result, "postcheck"):
            answer, reasons = policy_manager.postcheck(decision, outcome.answer, runtime)
        result.postcheck_reasons = reasons
        result.outcome = _with_answer(outcome, answer)
        result.explanation = _explain(result, snapshot, runtime)
        return result
    except (RuleViolation, DomainError) as exc:
        result.error = exc
        return result
    finally:
        result.timings_ms["total"] = round((time.perf_counter() - started) * 1000, 3)


class _ActiveCheckBoost(TypedDict, total=False):
    sample_rate: float


def _active_check_boost(snapshot: Any, node_id: str) -> _ActiveCheckBoost:
    """§3.4.3: the offline loop raises the active-check rate of critical zones dominated by weak signals
    (the release's ``active_check_boost`` document, see ``review.loop.confidence_boost``)."""
    rate = (snapshot.documents.get("active_check_boost") or {}).get(node_id)
    return {"sample_rate": float(rate)} if rate else {}


def _with_answer(outcome: Outcome, answer: str) -> Outcome:
    from dataclasses import replace

    return outcome if answer == outcome.answer else replace(outcome, answer=answer)


def _out_of_scope(
    snapshot: Any, landing: Landing, decision: PolicyDecision, node_id: str | None = None
) -> Outcome:
    target = node_id or landing.node_start
    if target is not None and target in snapshot.position and snapshot.node(target).type == "OutOfScope":
        return Outcome(kind=OutcomeKind.OUT_OF_SCOPE, answer=snapshot.node(target).chunk)
    return Outcome(kind=OutcomeKind.OUT_OF_SCOPE, answer=decision.message or "I can't help with that here.")


def _explain(result: InferenceResult, snapshot: Any, runtime: Any) -> str:
    """A human-readable account of the path, as much as the policy allows (RESTRICT hides the path)."""
    parts: list[str] = []
    weaver = result.weaver
    if result.clarified is not None:
        option = result.clarified.option
        parts.append(
            f"Asked in request {result.clarified.request_id}; the user chose {option.name} ({option.label_id})."
        )
    if weaver is not None and weaver.l_final:
        names = []
        for label_id in weaver.l_final:
            record = runtime.labels.get(label_id, {}).get("name", label_id)
            names.append(f"{record} ({label_id})")
        parts.append("Understood as " + ", ".join(names) + f", confidence {weaver.confidence:.2f}.")
    if weaver is not None and Flag.OOD in weaver.flags:
        parts.append("No label of this project fits the request.")
    decision = result.decision
    restricted = decision is not None and decision.state == PolicyState.RESTRICT
    if result.route is not None and result.route.path_nodes and not restricted:
        steps = " → ".join(snapshot.node(n).title for n in result.route.path_nodes)
        parts.append(f"Path: {steps}" + (" (fast path)." if result.route.fast_path else "."))
    elif result.landing is not None and result.landing.node_start and not restricted:
        parts.append(f"Landed on {snapshot.node(result.landing.node_start).title}.")
    return " ".join(parts)
