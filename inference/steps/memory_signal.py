"""The input of ``S_memory`` (ARG v1 §2.5, the ``ε S_memory`` term of the traversal score): the caller's
relevant, recent memories as a time-decayed usage signal per node.

Terms:

* *usage event* — one of the caller's own (USER scope) memories that is attached to a node and whose
  statement is close to the request (cosine ≥ ``min_relevance``); a memory follows its node through
  splits and merges (the release's redirection table, read at request time);
* *weight* — the event's relevance, times ``weak_weight`` unless the memory is a strong signal (an
  explicit confirmation): repetition is not truth;
* *decay* — the weight halves every ``half_life_days`` of the memory's age
  (``scoring.memory_signal_decay``); the scorer then caps each node's signal at ``memory_cap``, so
  history nudges a route between close candidates and never dominates it.

A request without ``context.user_id`` has no memory signal (``None``), and neither has an offline replay:
history is replayed as it was routed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from django.utils import timezone

from inference.steps.scoring import memory_signal_decay
from memory.selectors import memory_usage_events


@dataclass(frozen=True)
class MemorySignalParams:
    """How a caller's memories become ``S_memory`` (the module docstring)."""

    min_relevance: float = 0.35  # cosine of a memory's statement with the request to count at all
    weak_weight: float = 0.5  # weight of a weak-signal memory relative to a confirmed one
    half_life_days: float = 7.0
    rows: int = 200  # the caller's most recent memories read per request


DEFAULT_MEMORY_SIGNAL = MemorySignalParams()


def memory_signal_for(
    *,
    project_id: int,
    user_id: str,
    prompt_vec: np.ndarray,
    now: datetime | None = None,
    params: MemorySignalParams = DEFAULT_MEMORY_SIGNAL,
    resolve_alias: Callable[[str], Iterable[str]] | None = None,
) -> dict[str, float]:
    """node_id → the caller's decayed usage signal for that node (empty without relevant memories);
    ``resolve_alias`` (the release snapshot's) sends a memory of a split or merged node to the nodes it
    lives on in."""
    events = memory_usage_events(
        project_id=project_id,
        user_id=user_id,
        query=prompt_vec,
        min_relevance=params.min_relevance,
        limit=params.rows,
        resolve_alias=resolve_alias,
    )
    at = now or timezone.now()
    return memory_signal_decay(
        (
            (
                event.node_id,
                event.relevance * (1.0 if event.strong else params.weak_weight),
                (at - event.occurred_at).total_seconds(),
            )
            for event in events
        ),
        half_life_s=params.half_life_days * 86_400.0,
    )
