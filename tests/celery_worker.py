"""A real Celery worker process for tests: it uses the test database and data folder and is stopped
(its whole process group) when the block ends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def celery_worker(
    *,
    pool: str = "solo",
    include: Sequence[str] = (),
    stdout: int | IO[Any] = subprocess.DEVNULL,
    env: dict[str, str] | None = None,
) -> Iterator[subprocess.Popen]:
    """Start ``celery worker`` (one process slot, no heartbeat/gossip/mingle) and stop it afterwards."""
    environment = dict(os.environ)
    environment["DATABASE_URL"] = f"sqlite:///{connection.settings_dict['NAME']}"
    environment["ARG_DATA_DIR"] = str(settings.DATA_DIR)
    environment.update(env or {})
    includes = [arg for module in include for arg in ("--include", module)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "arg_platform", "worker", *includes, "--loglevel", "INFO"]
        + ["--pool", pool, "--concurrency", "1", "--without-heartbeat", "--without-gossip", "--without-mingle"],
        cwd=ROOT,
        env=environment,
        stdout=stdout,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        yield proc
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
