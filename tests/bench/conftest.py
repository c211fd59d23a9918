"""Every benchmark test runs with the bench app installed (its commands are found by name)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _bench_installed(bench_app: None) -> None:
    return None
