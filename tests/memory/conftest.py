"""Fixtures of the memory tests: the memory pack imported (and published where a release is needed),
and a clean in-process recall cache for every test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

MEMORY_PACK = Path(__file__).resolve().parent / "fixtures" / "memory_pack.yaml"


@pytest.fixture(autouse=True)
def _clean_recall_cache() -> Any:
    from memory.services import recall_cache_clear

    recall_cache_clear()
    yield
    recall_cache_clear()


@pytest.fixture
def mem(db: Any) -> Any:
    """The memory pack's project (slug "mem"), draft only."""
    from taxonomy.packs import pack_import, pack_read

    return pack_import(pack_read(MEMORY_PACK)).project


@pytest.fixture
def mem_released(mem: Any) -> Any:
    """The memory pack's project with its first release published and active."""
    from ontology.releases import release_publish

    release_publish(project=mem, actor=None)
    return mem
