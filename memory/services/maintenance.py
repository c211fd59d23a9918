"""Offline upkeep of memory metadata: what changes around a memory without changing the memory.

* ``info_key_label_paths_refresh`` — the current label paths (metadata only; InfoKeys never change)
  after taxonomy labels were renamed or moved;
* ``memory_redirect_soft_update`` — an episode's current nodes after a read followed the alias table
  (reversible: ``node_id`` is kept);
* ``recall_cache_clear`` — forget the in-process recall matrices and term distinctions.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from projects.models import Project
from taxonomy.models import Label

from ..models import EpisodicMemory, InfoKey, InfoUnit, InfoUnitEvent
from ..registry import recall_index
from ..selectors import term_distinctions_cache_clear


@transaction.atomic
def info_key_label_paths_refresh(*, project: Project) -> int:
    """Bring LabelPath_current (metadata) of every InfoKey, InfoUnit and labelled episode up to date with
    the taxonomy after labels were renamed or moved. InfoKeys never change (§4.3). Returns the number of
    InfoKeys whose path changed."""
    paths = dict(Label.objects.filter(project=project).values_list("label_id", "path"))
    changed = 0
    for info_key in InfoKey.objects.filter(project=project):
        path = " + ".join(paths[i] for i in info_key.label_signature.split("+") if paths.get(i))
        if path and path != info_key.label_path_current:
            old = info_key.label_path_current
            InfoKey.objects.filter(pk=info_key.pk).update(label_path_current=path)
            units = list(InfoUnit.objects.filter(info_key=info_key).values_list("pk", flat=True))
            InfoUnit.objects.filter(pk__in=units).update(label_path_current=path)
            EpisodicMemory.objects.filter(project=project, label_signature=info_key.label_signature).update(
                label_path_current=path
            )
            InfoUnitEvent.objects.bulk_create(
                InfoUnitEvent(
                    unit_id=pk, kind=InfoUnitEvent.Kind.LABEL_PATH, details={"from": old, "to": path}
                )
                for pk in units
            )
            changed += 1
    return changed


@transaction.atomic
def memory_redirect_soft_update(*, redirects: dict[int, tuple[str, ...]], release_version: int | None) -> int:
    """Soft-update the user context after a MemoryRead followed the alias table (§4.3): each episode's
    ``node_ids_current`` becomes the nodes its original node lives on in. ``node_id`` never changes, so
    the update is reversible and the memory is never orphaned. Returns the number of episodes updated."""
    updated = 0
    now = timezone.now()
    current = dict(
        EpisodicMemory.objects.filter(pk__in=list(redirects)).values_list("pk", "node_ids_current")
    )
    for episode_id, targets in redirects.items():
        if episode_id in current and list(current[episode_id] or []) != list(targets):
            updated += EpisodicMemory.objects.filter(pk=episode_id).update(
                node_ids_current=list(targets), redirected_at=now, redirect_release_version=release_version
            )
    return updated


def recall_cache_clear() -> None:
    """Forget the in-process recall matrices and term distinctions (tests and the benchmark start clean)."""
    recall_index.clear()
    term_distinctions_cache_clear()
