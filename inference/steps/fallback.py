"""The controlled fallback of an abstained landing (ARG v1 §2.4, "route to an OutOfScope node or return a
controlled fallback path"): what the caller is told when the landing step abstained.

The landing step abstains onto the OutOfScope node nearest the prompt, however far that is; its text is
specific ("requests to attack third-party systems are refused"), so answering "hello" with it accuses
the caller. Four cases, in this order:

* **policy-gated** — the request is about labels that exist but that the caller's policy does not
  allow (``WeaverResult.policy_gated``): REFOCUS with that policy's refocus message ("I can only share
  general information before you sign in …").
* **a specific OutOfScope node** — the nearest one is at least ``FallbackParams.specific_out_of_scope``
  similar to the prompt: ``None``, the caller answers with that node (as before this module).
* **in-domain ambiguity** — the weaver did not call the prompt out of domain (no OOD flag) but was too
  unsure to keep a label (a low margin, a low confidence): CLARIFY with "Do you mean X or Y?" over the
  two best labels the policy admits (``clarify_options``; §2.4's "prefer a Clarify-first path when
  ambiguity remains"), an active check of kind ``disambiguate``. A client answers it with a
  continuation request (``inference.steps.clarification``), which is answered for the chosen label.
* otherwise OUT_OF_SCOPE with the policy's refocus message: the generic "that's outside what I can help
  with; I can help with …" every policy states.

Nothing here changes where the landing step says it landed: the request stays *abstained* in the log,
the trace viewer and the routing benchmark.
"""

from __future__ import annotations

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
from inference.steps.clarification import Option, offerable_options, options_details
from taxonomy.validator import POLICY_LABEL_GATE

RRF_K = 60  # the usual constant of reciprocal rank fusion (Cormack et al., 2009)


@dataclass(frozen=True)
class FallbackParams:
    # cosine(prompt, OutOfScope node) from which that node's own text answers an abstained request; set
    # on the demo pack's prompts ("hello" 0.06, "help" 0.09, "set up single sign on" 0.16 against the
    # node on attacks, "account" 0.31; requests that node is about: 0.26–0.30 — a generic decline is
    # never wrong, a specific one aimed at the wrong request is), not on any benchmark
    specific_out_of_scope: float = 0.35


DEFAULT_FALLBACK_PARAMS = FallbackParams()


def abstention_outcome(
    *,
    envelope: Any,
    runtime: Any,
    decision: PolicyDecision,
    weaver: WeaverResult,
    landing: Landing,
    lexical: LexicalCandidates | None = None,
    params: FallbackParams = DEFAULT_FALLBACK_PARAMS,
) -> tuple[Outcome, str] | None:
    """(outcome, explanation) for an abstained landing, or ``None`` to answer with its OutOfScope node."""
    from inference.steps.policy_manager import refocus_message

    if weaver.policy_gated:  # the labels exist, not for this role
        return (
            Outcome(kind=OutcomeKind.REFOCUS, answer=refocus_message(envelope, runtime)),
            f"Outside what this role may ask; refocused ({POLICY_LABEL_GATE}).",
        )
    if landing.candidates and landing.candidates[0][1] >= params.specific_out_of_scope:
        return None
    if Flag.OOD not in weaver.flags and (options := clarify_options(runtime, decision, weaver, lexical)):
        names = tuple(option.name for option in options)
        question = "Do you mean " + " or ".join(names) + "?"
        return (
            Outcome(
                kind=OutcomeKind.CLARIFY,
                answer="I'm not sure what you need. " + question,
                active_check=ActiveCheck("disambiguate", question, names, "abstained"),
                details=options_details(options),
            ),
            "Not sure between "
            + " and ".join(f"{o.name} ({o.label_id})" for o in options)
            + "; asked which.",
        )
    return (
        Outcome(kind=OutcomeKind.OUT_OF_SCOPE, answer=refocus_message(envelope, runtime)),
        "No label of this project fits the request, and no out-of-scope topic is close to it.",
    )


def clarify_options(
    runtime: Any, decision: PolicyDecision, weaver: WeaverResult, lexical: LexicalCandidates | None = None
) -> list[Option]:
    """The two labels to ask about (``clarification.offerable_options``: ACTIVE, admitted by the policy,
    distinct by name), best first by *reciprocal rank fusion* of the three rankings the request already
    has — the distilled classifier, the label vector top-K and the lexical candidates: a label's score
    is the sum over rankings of ``1 / (RRF_K + rank)``. Fusing them keeps one weak ranking (the
    classifier third on "SSO & SAML login" while both others put it first) from choosing the question."""
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

    def active_name(label_id: str) -> str | None:
        record = runtime.labels.get(label_id)
        if record is None or record.get("status") != "ACTIVE":
            return None
        return str(record.get("name") or label_id)

    return offerable_options(sorted(fused, key=lambda lid: (-fused[lid], lid)), active_name, decision)
