"""Writes of the memory app: the guarded episodic write (MemoryWrite, §2.10) and the Info Registry's
human and offline verbs. Every write is atomic; a refused write raises ``RuleViolation`` and writes
nothing.

* ``writes`` — ``memory_write``: one fact, guarded, label-gated and deduplicated by the registry;
* ``registry_review`` — a reviewer's verbs: resolve an UNSURE attempt, detach a wrong merge, promote an
  InfoUnit for consolidation;
* ``merge_bar`` — the project's merge bar: how close two statements must be to merge on their own;
* ``term_distinctions`` — terms a project declares never to mean the same fact;
* ``maintenance`` — label paths, alias redirects and recall caches kept up to date;
* ``erasure`` — one user's memory erased on request (``inference.erasure`` calls it);
* ``consolidation`` — ``memory_consolidate``: the offline episodic → semantic step (§4.2) the offline
  loop runs each night.

The services are imported from here (``from memory.services import memory_write``).
"""

from .consolidation import ConsolidationParams, memory_consolidate
from .erasure import MEMORY_KINDS, memory_user_erase
from .maintenance import info_key_label_paths_refresh, memory_redirect_soft_update, recall_cache_clear
from .merge_bar import merge_bar_set
from .registry_review import (
    PROMOTION_MIN_SOURCES,
    PROMOTION_MIN_STRONG,
    info_evidence_detach,
    info_unit_promote,
    registry_unsure_resolve,
)
from .term_distinctions import term_distinction_delete, term_distinctions_declare
from .writes import (
    SUBJECT_MAX,
    LabelContext,
    MemoryWriteResult,
    label_context_for,
    max_fact_chars,
    memory_write,
)

__all__ = [
    "ConsolidationParams",
    "MEMORY_KINDS",
    "PROMOTION_MIN_SOURCES",
    "PROMOTION_MIN_STRONG",
    "SUBJECT_MAX",
    "LabelContext",
    "MemoryWriteResult",
    "info_evidence_detach",
    "info_key_label_paths_refresh",
    "info_unit_promote",
    "label_context_for",
    "max_fact_chars",
    "memory_consolidate",
    "merge_bar_set",
    "memory_redirect_soft_update",
    "memory_user_erase",
    "memory_write",
    "recall_cache_clear",
    "registry_unsure_resolve",
    "term_distinction_delete",
    "term_distinctions_declare",
]
