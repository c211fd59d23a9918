"""The embedded run path, as `make run` does it: migrate, bootstrap the demo, serve web + worker + beat.

Real processes on loopback: gunicorn answers the login page, the OpenAPI schema and /healthz; the
printed demo token (role customer) opens the API and gets the README's example request answered; beat's
heartbeat reaches the worker; the worker runs the offline loop the first start queued over the demo's
seeded night of traffic, and a reviewer's queue holds its MID_CONF proposals; SIGINT stops every process.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


METRICS_TOKEN = "metrics-" + "m" * 32  # the operator's bearer: /healthz shows its details to it
OPERATOR = {"Authorization": f"Bearer {METRICS_TOKEN}"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _post(url: str, payload: object, headers: dict[str, str]) -> tuple[int, bytes]:
    req = urllib.request.Request(
        url, data=json.dumps(payload).encode(), headers={**headers, "Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


@pytest.mark.server
def test_make_run_sequence_serves_and_stops_cleanly(tmp_path):
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "DATABASE_URL", "ARG_", "CELERY_"))
    }
    env["ARG_DATA_DIR"] = str(tmp_path / "var")
    env["ARG_METRICS_TOKEN"] = METRICS_TOKEN
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "--noinput"], cwd=ROOT, env=env, check=True, capture_output=True)
    port = _free_port()
    boot = subprocess.run(
        [*manage, "bootstrap_demo", "--port", str(port)],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    assert "Demo access (shown once" in boot.stdout, boot.stdout + boot.stderr
    # the printed address is the one served (make run PORT=…), with the API reference beside it
    assert f"http://127.0.0.1:{port}/api/v1/projects/" in boot.stdout
    assert f"http://127.0.0.1:{port}/api/v1/docs/" in boot.stdout
    # the first start sends the demo's night of customer traffic and queues the loop for the worker
    assert re.search(r"1200 requests logged, \d+ with explicit feedback", boot.stdout), boot.stdout
    assert re.search(r"Offline-loop run #\d+ queued", boot.stdout), boot.stdout
    passwords = dict(re.findall(r"user: (\w+)\s+password: (\S+)", boot.stdout))
    assert set(passwords) == {"expert", "reviewer", "admin"}
    token = re.search(r"API token for project \S+ \(role [^)]*\): (arg_\S+)", boot.stdout)
    again = subprocess.run(
        [*manage, "bootstrap_demo"], cwd=ROOT, env=env, check=True, capture_output=True, text=True
    )
    assert "already exist" in again.stdout and "password:" not in again.stdout

    proc = subprocess.Popen(
        [*manage, "run_embedded", "--port", str(port), "--web-workers", "1"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240  # the worker warms up (encoder, release) before it serves
        status = 0
        while time.monotonic() < deadline:
            try:
                status, body = _get(f"{base}/healthz", OPERATOR)
                if status == 200:
                    break
            except OSError:
                pass
            time.sleep(0.5)
        assert status == 200, f"healthz never answered 200 (last {status})"
        health = json.loads(body)
        assert health["components"]["graph_store"]["info"]["backend"] == "sql"
        assert _get(f"{base}/healthz") == (200, b'{"status": "ok"}')  # anonymous: up or down, nothing else
        status, body = _get(f"{base}/accounts/login/")
        assert status == 200 and b"password" in body.lower()
        status, body = _get(f"{base}/api/v1/schema/", {"Accept": "application/vnd.oai.openapi+json"})
        assert status == 200 and json.loads(body)["openapi"].startswith("3.")
        assert token is not None and "(role customer)" in token.group(0), boot.stdout
        auth = {"Authorization": f"Bearer {token.group(1)}"}
        status, body = _get(f"{base}/api/v1/projects/", auth)
        assert status == 200 and len(json.loads(body)) == 1
        # the README's example request, with the printed token: answered, not refocused
        status, body = _post(
            f"{base}/api/v1/infer",
            {"prompt": "I need a copy of last month's invoice", "context": {"session_id": "s-1"}},
            auth,
        )
        assert status == 200, body
        assert json.loads(body)["outcome"]["kind"] in ("INFO", "ACTION", "CLARIFY"), body
        heartbeat = tmp_path / "var" / "celery" / "heartbeat"
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not heartbeat.exists():
            time.sleep(0.5)
        assert heartbeat.exists(), "beat → broker → worker round trip never happened"
        # the worker ran the queued loop over the demo night: a reviewer finds its MID_CONF proposals
        database = sqlite3.connect(tmp_path / "var" / "arg.sqlite3")
        deadline = time.monotonic() + 600
        status = None
        while time.monotonic() < deadline and status not in ("SUCCEEDED", "FAILED"):
            time.sleep(2)
            row = database.execute("SELECT status FROM review_offlinerun").fetchone()
            status = row[0] if row else None
        assert status == "SUCCEEDED", status
        queue = database.execute(
            "SELECT kind FROM review_proposal WHERE confidence_bin = 'MID_CONF' AND status = 'PENDING_REVIEW'"
        ).fetchall()
        assert len(queue) >= 3 and len({kind for (kind,) in queue}) >= 2, queue
        job = database.execute(
            "SELECT j.status, j.started_at FROM arg_platform_job j JOIN review_offlinerun r ON r.job_id = j.id"
        ).fetchone()
        assert job[0] == "SUCCEEDED" and job[1] is not None
        database.close()
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    text = out.decode(errors="replace")
    assert f"ARG platform on http://127.0.0.1:{port}/" in text, text[:2000]
    assert f"ARG platform ready on http://127.0.0.1:{port}/" in text, text[-3000:]
    assert "[supervisor] all stopped" in text, text[-3000:]
    assert proc.returncode == 0
    for pid in map(int, re.findall(r"started \w+ \(pid (\d+)\)", text)):
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def _wait_healthy(base: str, seconds: float) -> dict:
    deadline = time.monotonic() + seconds
    status, body = 0, b""
    while time.monotonic() < deadline:
        try:
            status, body = _get(f"{base}/healthz", OPERATOR)
            if status == 200:
                return json.loads(body)  # type: ignore[no-any-return]
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"healthz never answered 200 (last {status}: {body[:500]!r})")


def _run_neo4j(env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        ["bash", "scripts/run-neo4j.sh", sys.executable, str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _stop(proc: subprocess.Popen[bytes]) -> str:
    os.killpg(proc.pid, signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    return out.decode(errors="replace")


@pytest.mark.server
@pytest.mark.neo4j
def test_make_run_on_neo4j_serves_the_demo_from_a_local_server_and_keeps_its_data(tmp_path):
    """`make run GRAPH=neo4j` (scripts/run-neo4j.sh): the demo served from a real local Neo4j, the
    README's request answered with the printed token; Ctrl-C stops everything, the server included;
    the next run resumes the same graph."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "DATABASE_URL", "ARG_", "CELERY_", "NEO4J_"))
    }
    env["ARG_NEO4J_RUN_DIR"] = str(tmp_path / "neo4j-run")
    env["ARG_METRICS_TOKEN"] = METRICS_TOKEN
    port = _free_port()
    proc = _run_neo4j(env, port)
    base = f"http://127.0.0.1:{port}"
    try:
        health = _wait_healthy(base, 300)
        graph = health["components"]["graph_store"]
        assert graph["info"]["backend"] == "neo4j" and graph["info"]["server"].startswith("Neo4j/5.26")
        first = _stop(proc)
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    token = re.search(r"API token for project \S+ \(role [^)]*\): (arg_\S+)", first)
    assert token is not None, first[-3000:]
    assert "[supervisor] all stopped" in first, first[-3000:]
    home = tmp_path / "neo4j-run" / "neo4j"
    assert (home / "data").is_dir() and not (home / "neo4j.pid").exists()  # halted, its home kept

    proc = _run_neo4j(env, port)
    try:
        _wait_healthy(base, 300)
        auth = {"Authorization": f"Bearer {token.group(1)}"}
        status, body = _post(
            f"{base}/api/v1/infer",
            {"prompt": "I need a copy of last month's invoice", "context": {"session_id": "s-1"}},
            auth,
        )
        assert status == 200, body
        answer = json.loads(body)
        assert answer["outcome"]["kind"] in ("INFO", "ACTION", "CLARIFY"), body
        assert answer["release"]["version"] >= 1 and answer["path"]["nodes"], (
            body
        )  # the loop may have published
        served = {n["node_id"] for n in answer["path"]["nodes"]}
        connection = dict(re.findall(r"export (NEO4J_\w+)=(\S+)", (home / "env").read_text()))
        from neo4j import GraphDatabase

        with GraphDatabase.driver(
            connection["NEO4J_URI"], auth=(connection["NEO4J_USER"], connection["NEO4J_PASSWORD"])
        ) as driver:
            stored = {
                r["id"] for r in driver.execute_query("MATCH (n:OntologyNode) RETURN n.node_id AS id").records
            }
        assert len(stored) > 20 and served <= stored  # the draft graph lives in that Neo4j
    finally:
        second = _stop(proc)
    assert "already exist" in second, second[-3000:]  # the demo was not loaded twice
    assert "[supervisor] all stopped" in second, second[-3000:]
