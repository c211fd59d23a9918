"""The Info answer step itself (``answer_info``): refuse what the policy does not admit, return a
MemoryRead target's chunk, otherwise compose the answer — the extractive one (the evidence sentences,
target first, each cited node with the exact sentences used) or, with ``settings.LLM_URL`` set, the
LLM-written one — and attach C_info, the active check and the outcome status.

An *Action-like* target (``ACTION_TYPES``) is never answered here: it belongs to the action or memory
step.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
from django.conf import settings

from arg_platform.llm import LlmError
from inference.contracts import Citation, Envelope, Outcome, OutcomeKind, PolicyDecision, Route, WeaverResult
from inference.steps.clarification import options_details
from memory.pii import redact_text
from ontology.graph_snapshot import GraphSnapshot

from .active_check import active_check_for, nearby_branches, status_at_answer
from .confidence import c_info
from .evidence import neighbourhood, node_admitted, retrieve
from .llm import llm_answer
from .params import DEFAULT_PARAMS, InfoParams
from .sentence_index import InfoIndex, info_index_for

logger = logging.getLogger(__name__)

ACTION_TYPES = frozenset({"Action", "DirectAction", "MemoryWrite"})


def _budget(index: InfoIndex, envelope: Envelope, params: InfoParams) -> int:
    key = envelope.typology_key or index.default_typology
    budget = index.budgets.get(key or "", 0)
    return min(params.max_context_nodes, budget) if budget > 0 else params.max_context_nodes


def _excerpt(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def answer_info(
    *,
    snapshot: GraphSnapshot,
    route: Route,
    envelope: Envelope,
    decision: PolicyDecision,
    weaver: WeaverResult,
    prompt_vec: np.ndarray,
    sample_rate: float = 0.05,
    rng_seed: str | None = None,
    params: InfoParams = DEFAULT_PARAMS,
) -> Outcome:
    """Answer from the route's target and its allowed neighbourhood (see the module doc).

    ``rng_seed`` (default: the request id) drives the sampled active check. Raises ``ValueError`` only
    for a caller bug: no target, or an Action / MemoryWrite target.
    """
    if route.target is None or route.target not in snapshot.position:
        raise ValueError(f"route target {route.target!r} is not in release v{snapshot.version}")
    node = snapshot.node(route.target)
    if node.type in ACTION_TYPES:
        raise ValueError(f"node {node.node_id} is a {node.type}; use run_action / the memory step")
    if not node_admitted(node, decision):
        return Outcome(
            kind=OutcomeKind.REFUSE,
            answer=decision.message or "This information is not available under your access policy.",
            details={"refused_node": node.node_id},
        )
    citation = Citation(node.node_id, node.title, _excerpt(node.chunk, params.excerpt_chars))
    if node.type == "MemoryRead":
        return Outcome(
            kind=OutcomeKind.MEMORY,
            answer=node.chunk,
            citations=(citation,),
            details={"note": "memory reads are not connected yet: this is what the node would read"},
        )

    index = info_index_for(snapshot)
    prompt_vec = np.asarray(prompt_vec, dtype=np.float32)
    context = neighbourhood(
        snapshot, node.position, decision, prompt_vec, budget=_budget(index, envelope, params), params=params
    )
    found = retrieve(snapshot, index, node.position, context, prompt_vec, params=params)
    citations = tuple(
        Citation(snapshot.node_ids[p], snapshot.titles[p], _excerpt(" ".join(used), params.excerpt_chars))
        for p, used in found.by_node
    )
    answer = " ".join(s for _, used in found.by_node for s in used) or node.chunk
    mode, llm_error = "extractive", ""
    if settings.LLM_URL:
        try:
            # the model's provider sees the question with its PII replaced by placeholders
            question = redact_text(envelope.prompt).value
            text, cited = llm_answer(question, [snapshot.node(p) for p, _ in found.by_node])
            extractive = {c.node_id: c for c in citations}
            answer, mode = text, "llm"
            citations = tuple(extractive[n] for n in cited)
        except LlmError as exc:
            logger.warning("LLM answer failed, using the extractive one: %s", exc)
            llm_error = str(exc)[:300]

    confidence = c_info(
        snapshot=snapshot,
        index=index,
        prompt=envelope.prompt,
        prompt_vec=prompt_vec,
        target=node.position,
        path=route.path_nodes,
        weaver=weaver,
        decision=decision,
        best_sentence_cosine=found.best_cosine,
        params=params,
    )
    branches = nearby_branches(index, weaver, decision)
    check = active_check_for(
        value=confidence.value,
        weaver=weaver,
        branches=branches,
        seed=rng_seed if rng_seed is not None else envelope.request_id,
        sample_rate=sample_rate,
        params=params,
    )
    details: dict[str, Any] = {
        "mode": mode,
        "c_info_components": confidence.as_json(),
        "context_nodes": [snapshot.node_ids[p] for p in found.context],
        "silent_outcome": True,
    }
    if llm_error:
        details["llm_error"] = llm_error
    if check is not None and check.kind == "disambiguate":
        details.update(options_details(branches))
    return Outcome(
        kind=OutcomeKind.INFO,
        answer=answer,
        citations=citations,
        c_info=confidence.value,
        info_status=status_at_answer(confidence.value, params),
        active_check=check,
        details=details,
    )
