"""Fixtures of the online-pipeline tests.

* ``demo_snapshot`` / ``demo`` — the demo pack's published release, loaded once: published inside a
  transaction that is rolled back at once; the tests keep the frozen snapshot (and its runtime) in
  memory and never touch the database again, so they stay fast and pure.
* ``acme_pk`` / ``acme`` / ``customer`` — the demo pack committed for one test module, for tests through
  the API door (``customer``: a client token with the demo's customer role).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from inference.contracts import RequestContext

DEMO_PACK = Path(__file__).resolve().parents[2] / "packs" / "demo" / "pack.yaml"
SMALL_PACK = Path(__file__).resolve().parents[1] / "taxonomy" / "fixtures" / "small_pack.yaml"


def published_snapshot(path: Path, django_db_blocker: Any) -> Any:
    from django.db import transaction

    from ontology.releases import release_publish, release_snapshot
    from taxonomy.packs import pack_import, pack_read

    with django_db_blocker.unblock(), transaction.atomic():
        project = pack_import(pack_read(path)).project
        snapshot = release_snapshot(release=release_publish(project=project, actor=None))
        transaction.set_rollback(True)
    return snapshot


@pytest.fixture(scope="session")
def demo_snapshot(django_db_setup: Any, django_db_blocker: Any) -> Any:
    return published_snapshot(DEMO_PACK, django_db_blocker)


@pytest.fixture(scope="session")
def demo(demo_snapshot: Any) -> Any:
    """The ReleaseRuntime of the demo pack's release."""
    from inference.runtime import runtime_for

    return runtime_for(demo_snapshot)


@pytest.fixture(scope="session")
def envelope_for(demo: Any) -> Any:
    """Build an envelope on the demo release: ``envelope_for("prompt", role="customer")``."""
    from inference.steps.envelope import build_envelope

    def make(prompt: str, role: str | None = "customer", **context: Any) -> Any:
        return build_envelope(
            request_id="r-1",
            project_id=demo.project_id,
            prompt=prompt,
            context=RequestContext(**context),
            default_role=role,
            default_typology=None,
            runtime=demo,
        )

    return make


@pytest.fixture(scope="module")
def acme_pk(django_db_setup: Any, django_db_blocker: Any) -> Any:
    """The demo pack, committed for this module. A throwaway project takes the next id first: the
    session's rolled-back demo release (``demo_snapshot``) may have had it — SQLite gives an id a
    rollback freed again — and the per-process release caches are keyed by project id."""
    from projects.models import Project
    from tests.review.queue_fixtures import _module_project

    with django_db_blocker.unblock():
        Project.objects.create(slug="id-taken", name="id taken").delete()
    yield from _module_project(DEMO_PACK, django_db_blocker)


@pytest.fixture
def acme(acme_pk: int, db: Any) -> Any:
    """The committed demo project, its release caches fresh before and after the test."""
    from tests.review.queue_fixtures import _fresh

    yield _fresh(acme_pk)
    _fresh(acme_pk)


@pytest.fixture
def customer(acme: Any, token_client: Any) -> Any:
    """An API client with a token of the demo's customer role."""
    from taxonomy.models import Role

    return token_client(acme, role=Role.objects.get(project=acme, key="customer"))
