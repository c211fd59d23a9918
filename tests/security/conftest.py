"""The world the security tests probe: the small test pack, published, with one member per platform
role, a client-app token with a policy role, and one logged request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

SMALL_PACK = Path(__file__).resolve().parents[1] / "taxonomy" / "fixtures" / "small_pack.yaml"


@pytest.fixture
def world(make_user: Any) -> dict[str, Any]:
    from arg_platform.models import Job
    from ontology.releases import PublishOptions, release_publish
    from projects.services import api_token_create
    from taxonomy.models import LabelIncompatibility, Role
    from taxonomy.packs import pack_import, pack_read

    project = pack_import(pack_read(SMALL_PACK)).project
    release_publish(project=project, actor=None)
    # v2, so that release diffs have something to compare
    release_publish(project=project, actor=None, options=PublishOptions(force=True))
    people = {role: make_user(f"{role}-user", role, project) for role in ("expert", "reviewer", "admin")}
    role = Role.objects.get(project=project, key="customer")
    token, key = api_token_create(project=project, name="client-app", role=role)
    return {
        "project": project,
        "people": people,
        "token": token,
        "key": key,
        "incompatibility": LabelIncompatibility.objects.filter(project=project).first(),
        "memory": _memory(project),
        "job": Job.objects.create(kind="release.publish", project=project, status=Job.Status.SUCCEEDED),
    }


def _memory(project: Any) -> dict[str, str]:
    """An InfoUnit and an UNSURE attempt, so the memory pages have objects to probe."""
    from memory.services import memory_write

    common = {
        "project": project,
        "scope": "USER",
        "user_id": "u-1",
        "label_ids": ["L00001"],
        "info_type": "UserPreference",
    }
    first = memory_write(text="The customer wants maintenance windows on Sunday nights.", **common)
    staged = memory_write(
        text="Schedule this customer's maintenance for Sunday night.", **common
    ).registry.attempt
    return {"memory_id": str(first.episode.pk), "unit_id": str(first.unit.pk), "attempt_id": str(staged.pk)}


class Actors(dict):  # type: ignore[type-arg]
    """actor name -> APIClient; ``fresh(name)`` builds another client of the same actor."""

    def __init__(self, world: dict[str, Any]) -> None:
        super().__init__()
        self.world = world
        for name in ("anonymous", "client", "expert", "reviewer", "admin"):
            self[name] = self.fresh(name)

    def fresh(self, name: str) -> Any:
        from rest_framework.test import APIClient

        client = APIClient()
        if name == "client":
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {self.world['key']}")
        elif name != "anonymous":
            client.force_login(self.world["people"][name])
        return client


@pytest.fixture
def actors(world: dict[str, Any]) -> Actors:
    """An APIClient per actor: anonymous, a client-app token, and a session per platform role."""
    return Actors(world)
