"""A real Celery worker process for tests: it uses the test database and data folder and is stopped
(its whole process group) when the block ends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parents[1]


def test_database_url() -> str:
    """The URL of the database the tests run on (the test database: SQLite file or PostgreSQL)."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    if connection.vendor == "postgresql":
        user = quote(db.get("USER") or "", safe="")
        password = f":{quote(db['PASSWORD'], safe='')}" if db.get("PASSWORD") else ""
        port = f":{db['PORT']}" if db.get("PORT") else ""
        return f"postgres://{user}{password}@{db.get('HOST') or '127.0.0.1'}{port}/{db['NAME']}"
    raise RuntimeError(f"no database URL for a {connection.vendor} test database")


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
    environment["DATABASE_URL"] = test_database_url()
    environment["ARG_DATA_DIR"] = str(settings.DATA_DIR)
    environment.update(env or {})
    includes = [arg for module in include for arg in ("--include", module)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "arg_platform", "worker", *includes, "--loglevel", "INFO"]
        + [
            "--pool",
            pool,
            "--concurrency",
            "1",
            "--without-heartbeat",
            "--without-gossip",
            "--without-mingle",
        ],
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


def wait_for(predicate: Callable[[], object], timeout: float, *, every: float = 0.25) -> bool:
    """Poll ``predicate`` until it is truthy (``True``) or ``timeout`` seconds have passed (``False``):
    how a test waits for what a worker does in another process."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every)
    return False
