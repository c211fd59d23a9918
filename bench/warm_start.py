"""First-request latency of each web worker after a restart, warm start on and off; ``manage.py
bench_warm_start`` runs it.

One run, all on loopback, all stopped by itself:

1. a temporary data folder (``ARG_DATA_DIR``) is migrated and given the demo pack, published, with its
   API token (``manage.py bootstrap_demo --no-traffic``, run as ``make run`` runs it);
2. for each mode — ``cold`` (``ARG_WARM_UP=0``: parts load on the first request that needs them) and
   ``warm`` (``ARG_WARM_UP=1``, the default: each worker warms up before it accepts a connection) — and
   each of ``restarts`` restarts: the real web server is started exactly as ``run_embedded`` starts it
   (gunicorn, ``--workers 2`` gthread workers, the embedded gunicorn config), with an access log that
   records each request's worker pid and server time (``%(p)s %(D)s``);
3. ``/healthz`` is polled until it answers 200 ``"ready": true`` (*time to ready*, from the start of
   the process); then ``POST /api/v1/infer`` is sent with prompts never sent before (no embedding
   cache answers): alternately one request alone and two at once, so both workers receive requests;
4. from the access log, per worker: the server time of its **first** infer request, and the median of
   its later ones (*warm*). The client time of the very first request is reported too. The server is
   stopped (SIGTERM to its process group) before the next restart.

The last line is ``SUMMARY cold_first_ms=… warm_first_ms=… warm_steady_ms=… ready_s=…``: the median
over restarts and workers of the first request's server time with warm start off and on, the median
warm request, and the median time to ready with warm start on.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.latency import HOST, ROOT, bench_environment, free_port

Log = Callable[[str], None]
READY_TIMEOUT_S = 600.0
ACCESS_FORMAT = '%(p)s %(D)s %(s)s "%(r)s"'
ACCESS_RE = re.compile(r'^<(\d+)> (\d+) (\d{3}) "POST /api/v1/infer ')  # gunicorn writes %(p)s as <pid>
TOKEN_RE = re.compile(r"API token for project (\S+) \(role \S+\): (\S+)")
PROMPTS = (
    "I forgot my password",
    "how do I download my invoice",
    "my app is crashing after deploy",
    "how do I add a teammate to my organisation",
    "where can I see my usage this month",
    "my card was declined",
    "how do I roll back a deployment",
    "can I change my billing email",
)


def prompt(n: int) -> str:
    """A prompt never sent before in this run (the embedder's cache cannot answer it)."""
    return f"{PROMPTS[n % len(PROMPTS)]} (request {n})"


def prepare(data_dir: Path, env: dict[str, str], log: Log) -> str:
    """Migrate the folder, load and publish the demo pack; the demo API token."""
    manage = [sys.executable, str(ROOT / "manage.py")]
    log("migrating and loading the demo pack (bootstrap_demo --no-traffic) …")
    subprocess.run([*manage, "migrate", "--noinput"], cwd=ROOT, env=env, check=True, capture_output=True)
    done = subprocess.run(
        [*manage, "bootstrap_demo", "--no-traffic"], cwd=ROOT, env=env, check=True, capture_output=True
    )
    found = TOKEN_RE.search(done.stdout.decode("utf-8", "replace"))
    if found is None:
        raise RuntimeError("bootstrap_demo printed no API token")
    return found.group(2)


def _request(
    port: int, method: str, path: str, body: bytes | None, headers: dict[str, str]
) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(HOST, port, timeout=120)
    try:
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


@dataclass
class Restart:
    """What one restart measured."""

    mode: str
    ready_s: float
    first_client_ms: float
    first_server_ms: dict[int, float] = field(default_factory=dict)  # worker pid → its first infer
    steady_server_ms: dict[int, list[float]] = field(default_factory=dict)  # its later ones
    warm_up_s: dict[int, float] = field(default_factory=dict)  # worker pid → its warm-up, from its log


def restart(
    env: dict[str, str], data_dir: Path, token: str, *, mode: str, requests: int, log: Log
) -> Restart:
    from arg_platform.supervisor import embedded_children

    port = free_port()
    web = next(s for s in embedded_children(host=HOST, port=port, web_workers=2) if s.name == "web")
    argv = list(web.argv)
    at = argv.index("--access-logfile")
    access = data_dir / f"access-{mode}.log"
    access.unlink(missing_ok=True)
    argv[at + 1] = str(access)
    argv += ["--access-logformat", ACCESS_FORMAT]
    errors = data_dir / f"gunicorn-{mode}.log"
    child_env = {**env, "ARG_WARM_UP": "1" if mode == "warm" else "0"}
    started = time.monotonic()
    with errors.open("wb") as handle:
        proc = subprocess.Popen(
            argv, cwd=ROOT, env=child_env, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        ready_s = _wait_ready(proc, port, started, errors)
        log(f"  {mode}: ready after {ready_s:.1f} s")
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        first_client_ms = 0.0
        n = 0
        while n < requests:
            batch = [prompt(n)] if (n // 3) % 2 == 0 else [prompt(n), prompt(n + 1)]
            timings: list[float] = []

            def send(text: str, timings: list[float] = timings) -> None:
                t = time.perf_counter()
                status, body = _request(
                    port, "POST", "/api/v1/infer", json.dumps({"prompt": text}).encode(), headers
                )
                if status != 200:
                    raise RuntimeError(f"infer answered {status}: {body[:300]!r}")
                timings.append((time.perf_counter() - t) * 1000)

            threads = [threading.Thread(target=send, args=(text,)) for text in batch]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            if n == 0:
                first_client_ms = max(timings)
            n += len(batch)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=60)
    result = Restart(mode, ready_s, first_client_ms)
    for line in access.read_text(encoding="utf-8", errors="replace").splitlines():
        found = ACCESS_RE.match(line)
        if found is None:
            continue
        pid, ms = int(found.group(1)), int(found.group(2)) / 1000
        if pid not in result.first_server_ms:
            result.first_server_ms[pid] = ms
        else:
            result.steady_server_ms.setdefault(pid, []).append(ms)
    for found in re.finditer(
        r"\[(\d+)\] \[INFO\] warm-up ready in ([\d.]+) s", errors.read_text(errors="replace")
    ):
        result.warm_up_s[int(found.group(1))] = float(found.group(2))
    return result


def _wait_ready(proc: subprocess.Popen[bytes], port: int, started: float, errors: Path) -> float:
    deadline = started + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {proc.returncode}: {errors.read_text()[-2000:]}")
        try:
            status, body = _request(port, "GET", "/healthz", None, {})
            if status == 200 and json.loads(body).get("status") == "ok":
                return time.monotonic() - started
        except (OSError, http.client.HTTPException, ValueError):
            pass
        time.sleep(0.2)
    raise RuntimeError(f"not ready within {READY_TIMEOUT_S:.0f} s")


def run(data_dir: Path, *, restarts: int, requests: int, log: Log) -> dict[str, Any]:
    env = bench_environment(data_dir)
    env["ARG_ACTION_HANDLER_MODULES"] = "packs.demo.handlers"
    token = prepare(data_dir, env, log)
    results: list[Restart] = []
    for i in range(restarts):
        for mode in ("cold", "warm"):
            log(f"restart {i + 1}/{restarts}, warm start {'off' if mode == 'cold' else 'on'}")
            results.append(restart(env, data_dir, token, mode=mode, requests=requests, log=log))
    return {"restarts": [r.__dict__ for r in results], "summary": summarize(results)}


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 1) if values else float("nan")


def summarize(results: list[Restart]) -> dict[str, float]:
    by_mode: dict[str, list[Restart]] = {"cold": [], "warm": []}
    for r in results:
        by_mode[r.mode].append(r)
    out: dict[str, float] = {}
    for mode, runs in by_mode.items():
        firsts = [ms for r in runs for ms in r.first_server_ms.values()]
        steady = [ms for r in runs for values in r.steady_server_ms.values() for ms in values]
        out[f"{mode}_first_ms"] = _median(firsts)
        out[f"{mode}_first_max_ms"] = round(max(firsts), 1) if firsts else float("nan")
        out[f"{mode}_first_client_ms"] = _median([r.first_client_ms for r in runs])
        out[f"{mode}_steady_ms"] = _median(steady)
        out[f"{mode}_ready_s"] = _median([r.ready_s for r in runs])
        out[f"{mode}_workers_seen"] = min((len(r.first_server_ms) for r in runs), default=0)
    out["warm_up_s"] = _median([s for r in by_mode["warm"] for s in r.warm_up_s.values()])
    return out


def table(results: dict[str, Any]) -> list[str]:
    lines = ["mode  restart  ready_s  first request per worker (server ms)   later requests P50 (ms)"]
    counters: dict[str, int] = {}
    for r in results["restarts"]:
        counters[r["mode"]] = counters.get(r["mode"], 0) + 1
        firsts = ", ".join(f"{ms:.0f}" for ms in r["first_server_ms"].values())
        steady = [ms for values in r["steady_server_ms"].values() for ms in values]
        lines.append(
            f"{r['mode']:<5} {counters[r['mode']]:>7}  {r['ready_s']:>7.1f}  {firsts:<37}  {_median(steady):>8}"
        )
    return lines


def summary_line(summary: dict[str, float]) -> str:
    return (
        f"SUMMARY cold_first_ms={summary['cold_first_ms']} warm_first_ms={summary['warm_first_ms']} "
        f"warm_steady_ms={summary['warm_steady_ms']} ready_s={summary['warm_ready_s']}"
    )
