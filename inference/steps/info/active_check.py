"""What follows an Info answer: the *active check*, the one question asked with it ("Do you mean X or
Y?" on a vector ambiguity, "Did this help?" on a low or mid C_info or for a deterministic sample of
the rest), and the *outcome status*, which only explicit feedback confirms — silence never does."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from inference.contracts import ActiveCheck, Flag, InfoStatus, PolicyDecision, WeaverResult
from inference.steps.clarification import Option, offerable_options

from .params import DEFAULT_PARAMS, InfoParams
from .sentence_index import InfoIndex


def sampled(seed: str, sample_rate: float) -> bool:
    """Deterministic controlled sampling: the same seed always gives the same answer."""
    if sample_rate <= 0:
        return False
    if sample_rate >= 1:
        return True
    digest = hashlib.sha256(seed.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < sample_rate


def nearby_branches(index: InfoIndex, weaver: WeaverResult, decision: PolicyDecision) -> list[Option]:
    """The two plausible branches to ask about: the best offerable labels of the weaver's label-vector
    top-K (``clarification.offerable_options``: ACTIVE, admitted by the policy, distinct by name)."""
    return offerable_options(
        (label_id for label_id, _ in weaver.top_k),
        lambda label_id: index.label_names.get(label_id) if label_id in index.active_labels else None,
        decision,
    )


def active_check_for(
    *,
    value: float,
    weaver: WeaverResult,
    branches: Sequence[Option],
    seed: str,
    sample_rate: float,
    params: InfoParams = DEFAULT_PARAMS,
) -> ActiveCheck | None:
    """The one question to ask, if any (§2.9.5): ambiguity first, then low / mid C_info, then sampling."""
    if Flag.VECTOR_AMBIGUITY in weaver.flags and len(branches) == 2:
        x, y = (branch.name for branch in branches)
        return ActiveCheck("disambiguate", f"Do you mean {x} or {y}?", (x, y), "vector_ambiguity")
    helpful = ("Yes", "No")
    if value < params.low_threshold:
        return ActiveCheck("helpful", "Did this help?", helpful, "low_c_info")
    if value < params.mid_threshold:
        return ActiveCheck("helpful", "Did this help?", helpful, "mid_c_info")
    if sampled(seed, sample_rate):
        return ActiveCheck("helpful", "Did this help?", helpful, "sampled")
    return None


def status_at_answer(value: float, params: InfoParams = DEFAULT_PARAMS) -> InfoStatus:
    """No feedback yet: UNCERTAIN when confident enough, LOW_CONFIDENCE otherwise — never CONFIRMED."""
    return InfoStatus.UNCERTAIN if value >= params.low_threshold else InfoStatus.LOW_CONFIDENCE


def status_after_feedback(current: InfoStatus, *, helpful: bool | None, c_info: float) -> InfoStatus:
    """Only an explicit signal moves the status: yes → CONFIRMED, no → LOW_CONFIDENCE, none → unchanged.

    ``c_info`` is kept for the record (a "no" on a confident answer is what the offline loop looks for).
    """
    if helpful is True:
        return InfoStatus.CONFIRMED
    if helpful is False:
        return InfoStatus.LOW_CONFIDENCE
    return current
