"""Fixtures of the offline-loop tests (``tests/review/test_loop_*.py``).

``demo_release`` imports the demo pack ("Acme Cloud support") into a fresh project and publishes it;
``stored_proposal`` stores a proposal the way the loop does after binning.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEMO_PACK = ROOT / "packs" / "demo" / "pack.yaml"
SMALL_PACK = ROOT / "tests" / "taxonomy" / "fixtures" / "small_pack.yaml"


@pytest.fixture
def fresh_snapshots() -> Any:
    """Forget the snapshots this process pinned: rolled-back tests reuse project and release ids, so a
    snapshot cached by an earlier test could otherwise pass for the current release."""
    from ontology.snapshot_registry import registry

    registry.clear()
    yield registry
    registry.clear()


@pytest.fixture
def demo_release(db: Any) -> tuple[Any, Any]:
    """(project, active release) of the demo pack, published."""
    from ontology.releases import release_publish
    from taxonomy.packs import pack_import, pack_read

    project = pack_import(pack_read(DEMO_PACK)).project
    release = release_publish(project=project, actor=None)
    return project, release


@pytest.fixture
def small_release(db: Any) -> tuple[Any, Any]:
    """(project, active release) of the tiny test pack (three nodes), published."""
    from ontology.releases import release_publish
    from taxonomy.packs import pack_import, pack_read

    project = pack_import(pack_read(SMALL_PACK)).project
    return project, release_publish(project=project, actor=None)


def store_proposal(
    project: Any, release: Any, kind: str, ops: Sequence[Any], status: str = "AUTO_COMMITTED"
) -> Any:
    """Store a proposal with a changeset (operations or JSON) in a given status, as the loop does."""
    from review.changeset import changeset_dump, changeset_fingerprint, changeset_load, changeset_targets
    from review.models import Proposal

    data = ops if ops and isinstance(ops[0], dict) else changeset_dump(ops)
    loaded = changeset_load(list(data))
    return Proposal.objects.create(
        project=project,
        kind=kind,
        status=status,
        confidence_bin="HIGH_CONF" if status == "AUTO_COMMITTED" else "MID_CONF",
        title=f"{kind} test",
        fingerprint=changeset_fingerprint(kind, loaded),
        base_release=release,
        changeset=list(data),
        target_keys=changeset_targets(loaded),
    )


@pytest.fixture
def stored_proposal() -> Callable[..., Any]:
    """``store_proposal`` as a fixture."""
    return store_proposal


def nightly_run_on_worker(project: Any, timeout: float = 180.0) -> Any:
    """Run the beat's nightly task on a real Celery worker and return ``project``'s finished OfflineRun."""
    from review.loop.tasks import offline_nightly_task
    from review.models import OfflineRun
    from tests.celery_worker import celery_worker, wait_for

    with celery_worker():
        offline_nightly_task.delay()
        assert wait_for(
            lambda: OfflineRun.objects.filter(project=project).exclude(status="RUNNING").exists(), timeout
        ), "the nightly run never finished"
    return OfflineRun.objects.get(project=project)
