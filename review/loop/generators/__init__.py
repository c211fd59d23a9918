"""Step B candidate generators (ARG §3.2), by name (``settings.OFFLINE_LOOP["generators"]`` picks them).

Each generator reads a ``GeneratorContext`` (base release, the night's collection, parameters) and
returns ``Candidate`` values; nothing is written until the loop stores them as proposals.
"""

from __future__ import annotations

from collections.abc import Callable

from review.loop.generators import edges, labels, lifecycle, memory, merge, split
from review.loop.generators.base import Candidate, GeneratorContext

GENERATORS: dict[str, Callable[[GeneratorContext], list[Candidate]]] = {
    "split": split.generate,
    "merge": merge.generate,
    "detour": edges.generate_detours,
    "coactivation": edges.generate_coactivation,
    "reinforce": edges.generate_reinforce,
    "child_label": labels.generate_child_labels,
    "unreached_label": labels.generate_unreached_labels,
    "promote": labels.generate_promotions,
    "memory": memory.generate,
    "obsolescence": lifecycle.generate_obsolescence,
    "removal": lifecycle.generate_removals,
    "reattach": lifecycle.generate_reattachments,
}

__all__ = ["GENERATORS", "Candidate", "GeneratorContext"]
