"""The controlled fallback of an abstained landing (ARG v1 §2.4, "route to an OutOfScope node or return a
controlled fallback path"): what the caller is told when the landing step abstained.

The landing step abstains onto the OutOfScope node nearest the prompt, however far that is; its text is
specific ("requests to attack third-party systems are refused"), so answering "hello" with it accuses
the caller. It abstains too when the Context Weaver's confidence is below the release's *ask
threshold* (``inference.steps.landing.ask_threshold``). Four cases, in this order:

* **policy-gated** — the request is about labels that exist but that the caller's policy does not
  allow (``WeaverResult.policy_gated``): REFOCUS with that policy's refocus message ("I can only share
  general information before you sign in …").
* **a specific OutOfScope node** — the nearest one is at least ``FallbackParams.specific_out_of_scope``
  similar to the prompt: ``None``, the caller answers with that node. An **accusing** OutOfScope node
  — one of risk ``high``: its text tells the asker that what they ask is abuse (attacking systems,
  entering someone else's account) — answers only on *strong evidence*: a similarity of at least
  ``FallbackParams.accusing_similarity`` and a lead of ``FallbackParams.accusing_margin`` over the next
  OutOfScope node (the policy's blocked terms and patterns, the other strong evidence, refuse such a
  request before retrieval). Without it the node is passed over: the cases below ask or refocus.
* **in-domain ambiguity** — the weaver did not call the prompt out of domain (no OOD flag) but was too
  unsure to keep a label (a low margin, a low confidence): CLARIFY with "Do you mean X or Y?" over the
  two best labels the policy admits (``clarify_options``; §2.4's "prefer a Clarify-first path when
  ambiguity remains"), an active check of kind ``disambiguate``. A client answers it with a
  continuation request (``inference.steps.clarification``), which is answered for the chosen label.
* otherwise OUT_OF_SCOPE with the policy's refocus message: the generic "that's outside what I can help
  with; I can help with …" every policy states.

A **vague** prompt (``is_vague``: one word — "access", "help" — or fewer than
``VAGUE_CONTENT_WORDS`` content words that the weaver is not sure of — "it's not working") is asked
about before anything answers it (``vague_outcome``): CLARIFY with up to ``OPTIONS_MAX`` options —
the best labels of the request's rankings, or, when the weaver calls it out of domain ("help"), the
best top-level labels (the project's areas) — else the policy's refocus message. A continuation
(the user's answer to the question) is never vague.

Nothing here changes where the landing step says it landed: the request stays *abstained* in the log,
the trace viewer and the routing benchmark.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from inference.contracts import (
    ActiveCheck,
    Flag,
    Landing,
    LexicalCandidates,
    Outcome,
    OutcomeKind,
    PolicyDecision,
    WeaverResult,
)
from inference.learning.classifier import OOS_CLASS
from inference.steps.clarification import (
    OPTIONS_ASKED,
    OPTIONS_MAX,
    Option,
    offerable_options,
    options_details,
    question,
)
from inference.steps.envelope import matching_tokens
from taxonomy.validator import POLICY_LABEL_GATE

RRF_K = 60  # the usual constant of reciprocal rank fusion (Cormack et al., 2009)


@dataclass(frozen=True)
class FallbackParams:
    # cosine(prompt, OutOfScope node) from which that node's own text answers an abstained request; set
    # on the demo pack's prompts ("hello" 0.06, "help" 0.09, "set up single sign on" 0.16 against the
    # node on attacks, "account" 0.31; requests that node is about: 0.26–0.30 — a generic decline is
    # never wrong, a specific one aimed at the wrong request is), not on any benchmark
    specific_out_of_scope: float = 0.35
    # an accusing (risk high) OutOfScope node needs this similarity and this lead over the next
    # OutOfScope node: on the demo, "access" is 0.38 from the node on attacks (0.16 ahead) and the
    # requests it is about score 0.22–0.30, so it answers only a prompt far closer than any seen
    accusing_similarity: float = 0.5
    accusing_margin: float = 0.1


VAGUE_CONTENT_WORDS = 2  # fewer content words (``envelope.matching_tokens``) than this: a vague prompt
VAGUE_CONFIDENT = 0.6  # … unless the weaver keeps a label at this confidence or more, with no doubt flag
_WORD_RE = re.compile(r"[^\W_]+")  # the words of a prompt, whatever its language
ACCUSING_RISK = "high"  # the risk level that marks an OutOfScope node as accusing


DEFAULT_FALLBACK_PARAMS = FallbackParams()


def abstention_outcome(
    *,
    envelope: Any,
    runtime: Any,
    decision: PolicyDecision,
    weaver: WeaverResult,
    landing: Landing,
    lexical: LexicalCandidates | None = None,
    snapshot: Any = None,
    params: FallbackParams = DEFAULT_FALLBACK_PARAMS,
) -> tuple[Outcome, str] | None:
    """(outcome, explanation) for an abstained landing, or ``None`` to answer with its OutOfScope node.

    ``snapshot`` (the request's release) tells an accusing OutOfScope node by its risk; without it every
    OutOfScope node is taken as accusing (the safe reading)."""
    from inference.steps.policy_manager import refocus_message

    if weaver.policy_gated:  # the labels exist, not for this role
        return (
            Outcome(kind=OutcomeKind.REFOCUS, answer=refocus_message(envelope, runtime)),
            f"Outside what this role may ask; refocused ({POLICY_LABEL_GATE}).",
        )
    nearest = landing.candidates[0] if landing.candidates else None
    if (
        nearest is not None
        and nearest[1] >= params.specific_out_of_scope
        and (not _accusing(snapshot, nearest[0]) or _strong_evidence(landing, params))
    ):
        return None
    if Flag.OOD not in weaver.flags and (options := clarify_options(runtime, decision, weaver, lexical)):
        return _asked(options, "abstained", "Not sure between ")
    return (
        Outcome(kind=OutcomeKind.OUT_OF_SCOPE, answer=refocus_message(envelope, runtime)),
        "No label of this project fits the request, and no out-of-scope topic is close to it.",
    )


def _accusing(snapshot: Any, node_id: str) -> bool:
    return snapshot is None or snapshot.node(node_id).risk == ACCUSING_RISK


def _strong_evidence(landing: Landing, params: FallbackParams) -> bool:
    """The nearest OutOfScope node is close to the prompt and well ahead of the next one."""
    best = landing.candidates[0][1]
    runner_up = landing.candidates[1][1] if len(landing.candidates) > 1 else 0.0
    return best >= params.accusing_similarity and best - runner_up >= params.accusing_margin


def _asked(options: list[Option], reason: str, why: str) -> tuple[Outcome, str]:
    """The CLARIFY offering ``options`` (an active check of kind ``disambiguate``) and its explanation."""
    text = question(options)
    return (
        Outcome(
            kind=OutcomeKind.CLARIFY,
            answer="I'm not sure what you need. " + text,
            active_check=ActiveCheck("disambiguate", text, tuple(o.name for o in options), reason),
            details=options_details(options),
        ),
        why + " and ".join(f"{o.name} ({o.label_id})" for o in options) + "; asked which.",
    )


def is_vague(prompt: str, weaver: WeaverResult) -> bool:
    """Too little to judge what the user needs: a one-word prompt ("deploy", "access"), or fewer than
    ``VAGUE_CONTENT_WORDS`` content words when the weaver is not sure of a label. A short sentence the
    weaver is sure of ("I cannot log in", at confidence ``VAGUE_CONFIDENT`` or more, without
    LOW_MARGIN or ABSTAIN_RECOMMENDED) is routed."""
    if len(matching_tokens(prompt)) >= VAGUE_CONTENT_WORDS:
        return False
    if len(_WORD_RE.findall(prompt)) <= 1:
        return True
    sure = (
        bool(weaver.l_final)
        and weaver.confidence >= VAGUE_CONFIDENT
        and not weaver.flags & {Flag.LOW_MARGIN, Flag.ABSTAIN_RECOMMENDED, Flag.OOD}
    )
    return not sure


def vague_outcome(
    *,
    envelope: Any,
    runtime: Any,
    decision: PolicyDecision,
    weaver: WeaverResult,
    lexical: LexicalCandidates | None = None,
) -> tuple[Outcome, str]:
    """(outcome, explanation) of a vague prompt: the question of the module docstring."""
    from inference.steps.policy_manager import refocus_message

    if weaver.policy_gated:  # what it names exists, not for this role
        return (
            Outcome(kind=OutcomeKind.REFOCUS, answer=refocus_message(envelope, runtime)),
            f"Outside what this role may ask; refocused ({POLICY_LABEL_GATE}).",
        )
    options: list[Option] = []
    if Flag.OOD not in weaver.flags:
        options = clarify_options(runtime, decision, weaver, lexical, at_most=OPTIONS_MAX)
    if not options:
        options = area_options(runtime, decision, weaver, lexical)
    if len(options) >= OPTIONS_ASKED:
        return _asked(options, "vague", "Too vague to answer; offered ")
    return (
        Outcome(kind=OutcomeKind.REFOCUS, answer=refocus_message(envelope, runtime)),
        "Too vague to answer, and nothing to offer; refocused.",
    )


def area_options(
    runtime: Any, decision: PolicyDecision, weaver: WeaverResult, lexical: LexicalCandidates | None = None
) -> list[Option]:
    """Up to ``OPTIONS_MAX`` top-level labels (no parent) the policy admits, best first by the fused
    score of the labels under them (``clarify_options``' fusion), then by name."""
    fused = _fused(weaver, lexical)
    parents = {lid: record.get("parent") for lid, record in runtime.labels.items()}

    def root(label_id: str) -> str:
        seen = {label_id}
        while (parent := parents.get(label_id)) and parent not in seen:
            seen.add(parent)
            label_id = parent
        return label_id

    credit: dict[str, float] = {}
    for label_id, score in fused.items():
        top = root(label_id)
        credit[top] = credit.get(top, 0.0) + score
    roots = [lid for lid in runtime.labels if not parents.get(lid)]
    ranked = sorted(roots, key=lambda lid: (-credit.get(lid, 0.0), _name(runtime, lid) or lid))
    return offerable_options(ranked, lambda lid: _name(runtime, lid), decision, at_most=OPTIONS_MAX)


def _name(runtime: Any, label_id: str) -> str | None:
    """The name of an ACTIVE label, else ``None``."""
    record = runtime.labels.get(label_id)
    if record is None or record.get("status") != "ACTIVE":
        return None
    return str(record.get("name") or label_id)


def _fused(weaver: WeaverResult, lexical: LexicalCandidates | None) -> dict[str, float]:
    """LabelID → reciprocal-rank-fusion score over the request's rankings (``clarify_options``)."""
    rankings = [
        [lid for lid, _ in weaver.classifier if lid != OOS_CLASS],
        [lid for lid, _ in weaver.top_k],
    ]
    if lexical is not None:
        rankings.append(sorted(lexical.filtered, key=lambda lid: (-lexical.filtered[lid], lid)))
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, label_id in enumerate(ranking, start=1):
            fused[label_id] = fused.get(label_id, 0.0) + 1.0 / (RRF_K + rank)
    return fused


def clarify_options(
    runtime: Any,
    decision: PolicyDecision,
    weaver: WeaverResult,
    lexical: LexicalCandidates | None = None,
    *,
    at_most: int = OPTIONS_ASKED,
) -> list[Option]:
    """The two labels to ask about (``clarification.offerable_options``: ACTIVE, admitted by the policy,
    distinct by name), best first by *reciprocal rank fusion* of the three rankings the request already
    has — the distilled classifier, the label vector top-K and the lexical candidates: a label's score
    is the sum over rankings of ``1 / (RRF_K + rank)``. Fusing them keeps one weak ranking (the
    classifier third on "SSO & SAML login" while both others put it first) from choosing the question.
    ``at_most`` options (two by default: "X or Y?")."""
    fused = _fused(weaver, lexical)
    ranked = sorted(fused, key=lambda lid: (-fused[lid], lid))
    return offerable_options(ranked, lambda lid: _name(runtime, lid), decision, at_most=at_most)
