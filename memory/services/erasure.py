"""Erasure of one user's memory in one project (the memory half of ``inference.erasure``).

What holds a user's data in the memory app, and what happens to it:

* ``EpisodicMemory`` rows written for the user — ``user_id`` is the id (any scope: an ORG or GLOBAL
  fact the user stated carries it too), or USER scope with ``subject`` the id: deleted, and with them
  (by cascade) their ``MemoryEdge`` rows, their ``RegistryAttempt`` rows and their ``InfoEvidence``;
* the user's Info Registry: the ``InfoKey`` rows of USER scope whose subject is the id (the key itself
  names the user, ``…|USER:<id>``) and every ``InfoUnit`` of USER scope with that subject, with their
  evidence, attempts and history (``InfoUnitEvent``), deleted;
* an ORG or GLOBAL ``InfoUnit`` *founded* by one of the user's episodes (its ``founding_text`` and
  canonical statement are that episode's words): deleted, even when other users' episodes back it —
  the unit is the user's wording of the fact. Those other episodes stay, detached from any unit
  (``info_unit`` NULL, their evidence row gone), and the key's ``unit_count`` is lowered so every
  process's recall cache reloads the key;
* an ORG or GLOBAL ``InfoUnit`` the user only gave evidence to: kept, its counters (evidence, distinct
  sources, strong/weak signals, last evidence) and reliability recounted from the evidence it keeps
  (``memory.registry.unit_recount``).

Nothing in the graph store holds memory (memory only checks that a node exists), so nothing is erased
there. Only ``project``'s rows are touched. Must run inside the caller's transaction; takes the
InfoKey locks every registry write takes, in key order.
"""

from __future__ import annotations

from collections import Counter

from django.db import transaction
from django.db.models import F, Q
from django.db.models.functions import Greatest

from projects.models import Project

from ..models import (
    EpisodicMemory,
    InfoEvidence,
    InfoKey,
    InfoUnit,
    InfoUnitEvent,
    MemoryEdge,
    RegistryAttempt,
    Scope,
)
from ..registry import recall_index, unit_recount

# the counts reported, per model deleted
_KINDS = {
    EpisodicMemory._meta.label: "memories",
    MemoryEdge._meta.label: "memory_edges",
    RegistryAttempt._meta.label: "registry_attempts",
    InfoEvidence._meta.label: "info_evidence",
    InfoUnitEvent._meta.label: "info_unit_events",
    InfoUnit._meta.label: "info_units",
    InfoKey._meta.label: "info_keys",
}
MEMORY_KINDS = (*_KINDS.values(), "info_units_recounted")


def _founded_by(unit_ids: set[int], episode_ids: set[int]) -> set[int]:
    """The units among ``unit_ids`` whose CREATED event names one of ``episode_ids`` as founder."""
    created = InfoUnitEvent.objects.filter(unit_id__in=unit_ids, kind=InfoUnitEvent.Kind.CREATED)
    return {
        unit_id
        for unit_id, details in created.values_list("unit_id", "details")
        if isinstance(details, dict) and details.get("episode") in episode_ids
    }


def memory_user_erase(*, project: Project, user_id: str) -> dict[str, int]:
    """Delete every memory row of ``project`` that holds or points to user ``user_id``'s data (see the
    module doc); returns the counts deleted per kind (``MEMORY_KINDS``) and the shared units recounted.

    Precondition: inside a transaction (``inference.erasure.user_data_erase`` opens it)."""
    counts: Counter[str] = Counter({kind: 0 for kind in MEMORY_KINDS})
    episodes = EpisodicMemory.objects.filter(project=project).filter(
        Q(user_id=user_id) | Q(scope=Scope.USER, subject=user_id)
    )
    episode_ids = set(episodes.values_list("pk", flat=True))
    user_keys = InfoKey.objects.filter(project=project, scope=Scope.USER, subject=user_id)
    user_units = InfoUnit.objects.filter(project=project, scope=Scope.USER, subject=user_id)
    shared_units = set(
        InfoEvidence.objects.filter(episode_id__in=episode_ids)
        .exclude(unit__scope=Scope.USER, unit__subject=user_id)
        .values_list("unit_id", flat=True)
    )
    shared_keys = set(InfoUnit.objects.filter(pk__in=shared_units).values_list("info_key_id", flat=True))
    # the locks every registry write takes (memory.registry.info_key_lock), in key order
    list(
        InfoKey.objects.select_for_update()
        .filter(Q(pk__in=shared_keys) | Q(pk__in=user_keys.values("pk")))
        .order_by("pk")
        .values_list("pk", flat=True)
    )

    def deleted(per_model: dict[str, int]) -> None:
        for label, count in per_model.items():
            if label in _KINDS:
                counts[_KINDS[label]] += count

    deleted(user_keys.delete()[1])  # their units, attempts, evidence and history go with them
    deleted(user_units.delete()[1])  # a USER unit filed under another key (none expected)
    founded = _founded_by(shared_units, episode_ids)
    for key_id, lost in Counter(
        InfoUnit.objects.filter(pk__in=founded).values_list("info_key_id", flat=True)
    ).items():
        InfoKey.objects.filter(pk=key_id).update(unit_count=Greatest(F("unit_count") - lost, 0))
    deleted(InfoUnit.objects.filter(pk__in=founded).delete()[1])
    deleted(EpisodicMemory.objects.filter(pk__in=episode_ids).delete()[1])
    for unit in InfoUnit.objects.filter(pk__in=shared_units - founded).order_by("pk"):
        unit_recount(unit)
        counts["info_units_recounted"] += 1
    transaction.on_commit(recall_index.clear)  # this process re-reads the keys it cached
    return dict(counts)
