"""A real Neo4j (with the GDS procedures) for the tests that need one.

``neo4j_connection()`` answers the Bolt URI and credentials of the server the tests talk to:

* ``NEO4J_URI`` set in the environment (``scripts/with-neo4j.sh`` sets it, or an operator points the
  suite at the docker compose Neo4j): that server;
* otherwise a throwaway server that ``scripts/with-neo4j.sh`` starts the first time a test asks for
  one, and stops when the test session ends. It needs Java and Maven (``scripts/ensure-system-deps.sh``
  installs them); if it cannot start, the tests that need it **fail** with the server's log — they
  never skip.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = float(os.environ.get("ARG_NEO4J_START_TIMEOUT_S", "900"))  # a cold Maven build included


@dataclass(frozen=True)
class Neo4jConnection:
    uri: str
    user: str
    password: str
    database: str


_started: Neo4jConnection | None = None
_process: subprocess.Popen[bytes] | None = None


def neo4j_connection() -> Neo4jConnection:
    """The server of this test session (started on first use when ``NEO4J_URI`` is unset)."""
    global _started, _process
    if os.environ.get("NEO4J_URI"):
        return Neo4jConnection(
            uri=os.environ["NEO4J_URI"],
            user=os.environ.get("NEO4J_USER", "neo4j"),
            password=os.environ.get("NEO4J_PASSWORD", ""),
            database=os.environ.get("NEO4J_DATABASE", "neo4j"),
        )
    if _started is not None:
        return _started
    folder = Path(tempfile.mkdtemp(prefix="arg-test-neo4j-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)  # (after stop_neo4j: handlers run LIFO)
    ready, log = folder / "ready", folder / "wrapper.log"
    # The wrapper writes the connection to `ready`, then waits; TERM to its group stops the server.
    _process = subprocess.Popen(
        [
            "bash",
            str(REPO / "scripts" / "with-neo4j.sh"),
            "bash",
            "-c",
            'printf "%s\\n%s\\n%s\\n%s\\n" "$NEO4J_URI" "$NEO4J_USER" "$NEO4J_PASSWORD" "$NEO4J_DATABASE" '
            '> "$0.tmp" && mv "$0.tmp" "$0" && exec sleep 86400',
            str(ready),
        ],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    atexit.register(stop_neo4j)
    deadline = time.monotonic() + START_TIMEOUT_S
    while not ready.exists():
        if _process.poll() is not None or time.monotonic() > deadline:
            output = log.read_text(errors="replace")[-6000:]
            stop_neo4j()
            raise RuntimeError(f"the test Neo4j server did not start (scripts/with-neo4j.sh):\n{output}")
        time.sleep(0.25)
    uri, user, password, database = ready.read_text().splitlines()[:4]
    _started = Neo4jConnection(uri=uri, user=user, password=password, database=database)
    return _started


def stop_neo4j() -> None:
    """Stop the server this module started (no-op otherwise); the wrapper removes its folder."""
    global _process
    if _process is None or _process.poll() is not None:
        _process = None
        return
    try:
        os.killpg(_process.pid, signal.SIGTERM)
        _process.wait(timeout=60)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(_process.pid, signal.SIGKILL)
    _process = None


def neo4j_store() -> Any:
    """A ``Neo4jGraphStore`` on the test server (the caller closes it)."""
    from ontology.store.neo4j_backend import Neo4jGraphStore

    connection = neo4j_connection()
    return Neo4jGraphStore(
        uri=connection.uri,
        user=connection.user,
        password=connection.password,
        database=connection.database,
    )


def neo4j_keep_only(store: Any, project_ids: set[int]) -> None:
    """Delete the Neo4j graphs of every project but ``project_ids``."""
    with store.driver.session(database=store.database) as session:
        for label in ("OntologyNode", "NodeAlias", "ProjectGraph"):
            session.run(
                f"MATCH (n:{label}) WHERE NOT n.project_id IN $keep DETACH DELETE n", keep=sorted(project_ids)
            ).consume()


def neo4j_wipe(store: Any) -> None:
    """Delete every node and relationship of the test server's database (between tests: Django rolls
    its test database back, so project ids are reused, while Neo4j keeps what was written)."""
    with store.driver.session(database=store.database) as session:
        session.run("MATCH (n) DETACH DELETE n").consume()
