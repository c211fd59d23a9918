"""The memory step of the online pipeline (ARG §2.10 MemoryWrite, alias-safe MemoryRead).

``inference.pipeline`` imports this module only when a request's target node is a MemoryWrite or a
MemoryRead node, so the rest of the hot path never pays for it. Both return an ``Outcome`` of kind
MEMORY whose ``details["memory"]`` says what happened (and lands in the request's log row).

* **MemoryWrite** — §2.10.1 detect (a statement, not a question), §2.10.2 classify the InfoType,
  §2.10.3 label gate (the Context Weaver's ``L_final``; none → episodic only, MISSING_LABEL_CANDIDATE;
  low confidence → LOW_CONFIDENCE_INFO_WRITE), scope rules of the request's policy (``memory_scopes``;
  USER scope needs ``context.user_id``), then ``memory.services.memory_write``. A dry run writes
  nothing. The write is conservative and never structural. A question routed here ("which channel did
  I say I prefer?") writes nothing and reads back instead (``details["memory"]["read"]``) when the
  policy admits MemoryRead nodes.
* **MemoryRead** — the caller's memories most relevant to the prompt, graph-reranked, each node
  followed through the split redirection table of the pinned snapshot; the soft update of redirected
  items is written after the read. Only items at ``READ_MIN_SIMILARITY`` or more are shown.

Answers speak to the asker about what was found or saved (``read_answer``, ``write_answer``): the
node's client text (``chunk``) may open a read or close a write, its internal description never shows.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import numpy as np

from arg_platform.embedder import get_embedder
from arg_platform.errors import DomainError
from inference.contracts import Citation, Outcome, OutcomeKind
from inference.steps.info import node_admitted
from memory.canonical import is_memorizable, normalize
from memory.models import MemoryFlag, Scope
from memory.selectors import memory_read
from memory.services import memory_redirect_soft_update, memory_write

logger = logging.getLogger(__name__)

LOW_CONFIDENCE = 0.5  # below: the write is flagged LOW_CONFIDENCE_INFO_WRITE
READ_K = 5
SAVED_QUOTE_CHARS = 300  # a write's answer quotes what was saved up to this length
# a MemoryRead shows a vector hit only from this similarity to the request (label boost included): the
# read returns the k nearest items however far, and "my card was declined" was answered with a saved
# contact preference (0.13). Measured with all-MiniLM-L6-v2 on question / memory pairs: the relevant
# ones 0.45-0.66, the unrelated ones -0.07-0.20
READ_MIN_SIMILARITY = 0.25


def _allowed_scopes(decision: Any) -> frozenset[str]:
    """The policy's memory scopes; a release without roles (no policy) may keep USER memories."""
    if decision.policy_key is None:
        return frozenset({Scope.USER})
    return frozenset(decision.constraints.memory_scopes)


def memory_outcome(
    *,
    snapshot: Any,
    node: Any,
    envelope: Any,
    decision: Any,
    weaver: Any,
    landing: Any,
    prompt_vec: np.ndarray,
    request: Any,
) -> Any:
    """The MEMORY outcome of a request routed to ``node`` (a MemoryWrite or MemoryRead node)."""
    citation = Citation(node.node_id, node.title, node.chunk[:300])
    if not node_admitted(node, decision):
        return Outcome(
            kind=OutcomeKind.REFUSE,
            answer=decision.message or "This is not available under your access policy.",
            details={"refused_node": node.node_id},
        )
    read = functools.partial(
        memory_read_step,
        snapshot=snapshot,
        envelope=envelope,
        decision=decision,
        weaver=weaver,
        prompt_vec=prompt_vec,
        request=request,
    )
    if node.type == "MemoryRead":
        details = read()
        return Outcome(
            kind=OutcomeKind.MEMORY,
            answer=read_answer(details, lead=node.chunk),
            citations=(citation,),
            details={"memory": details},
        )
    details = memory_write_step(
        node=node, envelope=envelope, decision=decision, weaver=weaver, landing=landing, request=request
    )
    if details.get("reason") == "question" and decision.constraints.admits_node_type("MemoryRead"):
        # "what did I tell you about my contact preference?" lands where such facts are written: nothing
        # to remember in a question, so the step reads back what was remembered instead — when the
        # caller's policy lets it read memory at all (a write-only policy forbids MemoryRead nodes)
        details = {**details, "read": read()}
        answer = read_answer(details["read"])
    elif details.get("written"):
        answer = write_answer(envelope.prompt_raw, after=node.chunk)
    else:
        answer = _not_written_answer(details)
    return Outcome(kind=OutcomeKind.MEMORY, answer=answer, citations=(citation,), details={"memory": details})


def read_answer(details: dict[str, Any], *, lead: str = "") -> str:
    """What a read tells the asker: what was found, one item a line, after the node's client text (or
    "Here is what I have on record"); or that nothing is saved. Never the node's internal description."""
    lines = [f"- {item['text']}" for item in details["items"]]
    if not lines:
        return "I have nothing saved about this yet."
    count = len(lines)
    opening = lead.strip() or f"Here is what I have on record ({count} {'item' if count == 1 else 'items'}):"
    return opening + "\n" + "\n".join(lines)


def write_answer(saved: str, *, after: str = "") -> str:
    """What a write tells the asker: what was saved, in their words, then the node's client text (what
    happens with it, e.g. "Later answers will use it.")."""
    text = " ".join(saved.split())
    if len(text) > SAVED_QUOTE_CHARS:
        text = text[: SAVED_QUOTE_CHARS - 1].rstrip() + "…"
    return " ".join(filter(None, [f"I saved this: “{text}”.", after.strip()]))


def _not_written_answer(details: dict[str, Any]) -> str:
    reason = details.get("reason", "")
    if reason == "question":
        return "There is nothing to remember in a question."
    if reason == "dry_run":
        return "Dry run: nothing was saved."
    return "I can't save that here."


def relevant_items(items: Any) -> list[Any]:
    """The read items worth showing: vector hits at ``READ_MIN_SIMILARITY`` or more, and the multi-hop
    expansion (``via="graph"``) only when the hit it expands from (the first vector hit) is one of them."""
    vector = [item for item in items if item.hit.via == "vector"]
    seed_kept = bool(vector) and vector[0].hit.similarity >= READ_MIN_SIMILARITY
    return [
        item
        for item in items
        if (item.hit.similarity >= READ_MIN_SIMILARITY if item.hit.via == "vector" else seed_kept)
    ]


def memory_write_step(
    *, node: Any, envelope: Any, decision: Any, weaver: Any, landing: Any, request: Any
) -> dict[str, Any]:

    context = envelope.context
    memorizable, why = is_memorizable(envelope.prompt)
    if not memorizable:
        return {"mode": "write", "written": False, "reason": why}
    allowed = _allowed_scopes(decision)
    if Scope.USER not in allowed:
        return {
            "mode": "write",
            "written": False,
            "reason": "scope_not_allowed",
            "allowed_scopes": sorted(allowed),
        }
    if not context.user_id:
        return {"mode": "write", "written": False, "reason": "no_user"}
    flags: set[str] = set()
    label_ids: list[str] = []
    if weaver is not None:
        weaver_flags = {str(f) for f in weaver.flags} | {str(f) for f in getattr(landing, "flags", ())}
        if "NEW_INTENT_CANDIDATE" in weaver_flags:
            flags.add(MemoryFlag.NEW_INTENT_CANDIDATE)
        if weaver.l_final and "ABSTAIN_RECOMMENDED" not in weaver_flags and "OOD" not in weaver_flags:
            label_ids = [lid for lid, _ in sorted(weaver.l_final.items(), key=lambda kv: (-kv[1], kv[0]))]
            if weaver.confidence < LOW_CONFIDENCE:
                flags.add(MemoryFlag.LOW_CONFIDENCE_INFO_WRITE)
    if request.dry_run:
        return {
            "mode": "write",
            "written": False,
            "reason": "dry_run",
            "labels": label_ids,
            "flags": sorted(flags),
        }
    token = request.token
    try:
        result = memory_write(
            project=request.project,
            text=envelope.prompt_raw,
            scope=Scope.USER,
            user_id=context.user_id,
            session_id=context.session_id or "",
            request_id=request.request_id,
            label_ids=label_ids,
            labels_trusted=True,
            node_id=node.node_id,
            source="pipeline",
            provenance={
                "token_id": getattr(token, "pk", None),
                "role": envelope.role_key,
                "channel": context.channel,
                "confidence": round(float(weaver.confidence), 4) if weaver is not None else None,
            },
            flags=flags,
            allowed_scopes=allowed,
        )
    except DomainError as exc:  # e.g. an oversize fact: the request still answers, nothing is written
        return {"mode": "write", "written": False, "reason": "refused", "error": exc.message[:300]}
    attempt = result.registry.attempt if result.registry else None
    return {
        "mode": "write",
        "written": True,
        "episode_id": result.episode.pk,
        "info_type": result.episode.info_type,
        "scope": result.episode.scope,
        "flags": list(result.flags),
        "pii": list(result.pii_types),
        "info_key": attempt.info_key.key if attempt else "",
        "label_path_current": attempt.label_path_current if attempt else "",
        "decision": result.decision,
        "method": attempt.method if attempt else "",
        "unit_id": result.unit.pk if result.unit else None,
        "top_k": attempt.top_k if attempt else [],
    }


def memory_read_step(
    *, snapshot: Any, envelope: Any, decision: Any, weaver: Any, prompt_vec: np.ndarray, request: Any
) -> dict[str, Any]:

    context = envelope.context
    # memories are embedded with the platform embedder; the release's (maybe fine-tuned) encoder that
    # produced ``prompt_vec`` may live in another space, so the query is embedded the same way
    query = get_embedder().embed_one(normalize(envelope.prompt))
    scopes = set(_allowed_scopes(decision)) | {Scope.GLOBAL}
    result = memory_read(
        project=request.project,
        query=query,
        user_id=context.user_id or "",
        scopes=scopes if context.user_id else {Scope.GLOBAL},
        label_ids=list(weaver.l_final) if weaver is not None else [],
        k=READ_K,
        resolve_alias=snapshot.resolve_alias,
    )
    if result.redirects and not request.dry_run:
        memory_redirect_soft_update(redirects=result.redirects, release_version=snapshot.version)
    return {
        "mode": "read",
        "scanned": result.scanned,
        "min_similarity": READ_MIN_SIMILARITY,
        "items": [
            {
                "episode_id": item.episode.pk,
                "text": item.episode.text,
                "info_type": item.episode.info_type,
                "scope": item.episode.scope,
                "node_id": item.episode.node_id,
                "node_ids_current": list(item.node_ids_current),
                "redirected": item.redirected,
                "score": item.hit.score,
                "via": item.hit.via,
            }
            for item in relevant_items(result.items)
        ],
        "redirected": sorted(result.redirects),
    }
