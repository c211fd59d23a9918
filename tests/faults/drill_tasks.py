"""The pause of the worker-kill drill, loaded only by the drill's worker
(``celery worker --include tests.faults.drill_tasks``).

The graph hook registered here (``GRAPH_HOOKS`` run in every freeze, of the draft or of parent +
changesets) pauses one publication in its middle (after validation, embeddings and signals, before the
release is written) when the drill has armed it, and names the paused process, so the drill can
SIGKILL that pool process there: the platform's own publication job (``ontology.release_publish``)
and its job applying approved proposals (``review.apply_approved``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from ontology.releases import GRAPH_HOOKS


def _pause_when_armed(
    arrays: Any, documents: dict[str, Any], embedder: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Publication step of the drill: when the drill has armed it, pause (once) to be killed here."""
    folder = Path(os.environ.get("ARG_DRILL_DIR", ""))
    try:
        # rename is atomic: exactly one attempt takes the "armed" file and pauses
        os.rename(folder / "armed", folder / f"paused-{os.getpid()}")
    except OSError:
        return {}, {}
    time.sleep(300)  # the drill kills this process here
    return {}, {}


if os.environ.get("ARG_DRILL_DIR"):
    GRAPH_HOOKS.append(_pause_when_armed)
