"""A published small project with a client token, for the fault drills."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

SMALL_PACK = Path(__file__).resolve().parents[1] / "taxonomy" / "fixtures" / "small_pack.yaml"


@pytest.fixture
def published(token_client: Any) -> dict[str, Any]:
    from ontology.releases import release_publish
    from taxonomy.models import Role
    from taxonomy.packs import pack_import, pack_read

    project = pack_import(pack_read(SMALL_PACK)).project
    release_publish(project=project, actor=None)
    client = token_client(project, role=Role.objects.get(project=project, key="customer"))
    return {"project": project, "client": client}
