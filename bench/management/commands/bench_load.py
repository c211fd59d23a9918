"""``manage.py bench_load --rate R --duration 60`` — a bounded load test of infer + feedback over HTTP.

It prepares a throw-away data folder (SQLite, the demo knowledge pack imported and published, a client
token with a policy role — all through the platform's own CLI), starts a real gunicorn on 127.0.0.1
(loopback only), warms every worker up, then sends an **open-loop** mix at ``--rate`` requests per
second for ``--duration`` seconds: ``POST /api/v1/infer`` with prompts from the pack's examples (plus
off-domain and blocked ones) — each made unique by a ticket number, so the embedder's cache never
answers, except for ``--repeat-share`` of them (default 0) sent verbatim as a returning user would —
and, for ``--feedback-share`` of the requests, ``POST /api/v1/feedback`` on an earlier answer.
Requests are sent at their scheduled times whatever the server does (latency
is measured from the actual send; *lag* says how late the client itself was). The gunicorn workers'
resident memory is read from ``/proc`` after the warm-up and every few seconds; growth is end vs start.
It stops by itself, stops the server and removes the data folder (``--keep`` keeps it).

The last line is ``SUMMARY rate=… duration_s=… requests=… errors=… infer_p50_ms=… infer_p95_ms=…
feedback_p95_ms=… achieved_rps=… rss_start_mb=… rss_end_mb=… rss_growth_pct=… max_lag_ms=…``.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

OFF_DOMAIN = ["what is the capital of peru", "write me a poem about the sea", "best pizza in town"]


@dataclass
class Sample:
    kind: str
    status: int
    ms: float
    lag_ms: float
    error: str = ""


STALE = (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected)


def _row_counts(data_dir: Path) -> dict[str, int]:
    """InferenceLog and Feedback rows in the prepared SQLite database (what the requests must leave)."""
    import sqlite3

    with sqlite3.connect(data_dir / "arg.sqlite3", timeout=30) as db:
        return {
            table: int(db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])  # noqa: S608 - fixed names
            for table in ("inference_inferencelog", "inference_feedback")
        }


@dataclass
class Run:
    reconnects: int = 0
    rows: dict[str, int] = field(default_factory=dict)
    samples: list[Sample] = field(default_factory=list)
    request_ids: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(x) for x in (task / "children").read_text().split()]
        except OSError:
            continue
    return sorted(set(found))


class Command(BaseCommand):
    help = "Bounded HTTP load test (loopback) of POST /api/v1/infer and /api/v1/feedback."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--rate", type=float, default=20.0, help="requests per second (infer + feedback)")
        parser.add_argument("--duration", type=float, default=60.0, help="seconds of load (at most 600)")
        parser.add_argument("--feedback-share", type=float, default=0.25, help="share of feedback requests")
        parser.add_argument(
            "--repeat-share",
            type=float,
            default=0.0,
            help="share of infer prompts sent verbatim (embedding cache hits); the rest are unique",
        )
        parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
        parser.add_argument("--threads", type=int, default=4, help="threads per gunicorn worker")
        parser.add_argument("--pack", default=str(Path(settings.BASE_DIR) / "packs" / "demo" / "pack.yaml"))
        parser.add_argument("--role", default="customer", help="policy role of the client token")
        parser.add_argument("--p95-goal-ms", type=float, default=40.0, help="inference goal (issue 5)")
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument("--json", default="", help="also write the figures to this JSON file")
        parser.add_argument("--keep", action="store_true", help="keep the data folder and server log")
        parser.add_argument(
            "--data-dir",
            default="",
            help="prepare (once) and reuse this data folder instead of a temporary one",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not 0 < options["duration"] <= 600 or not 0 < options["rate"] <= 2000:
            raise CommandError("--duration must be in (0, 600] s and --rate in (0, 2000] requests/s")
        if not 0 <= options["repeat_share"] <= 1 or not 0 <= options["feedback_share"] < 1:
            raise CommandError("--repeat-share must be in [0, 1] and --feedback-share in [0, 1)")
        from taxonomy.packs import pack_read

        doc = pack_read(options["pack"])
        slug = doc.data["project"]["slug"]
        prompts = [e for label in doc.section("labels") for e in label.get("examples", [])] or ["hello"]
        blocked = [t for p in doc.section("policies") for t in p.get("blocked_terms", [])][:3]
        prompts += OFF_DOMAIN + [f"you {term}" for term in blocked]
        reuse = bool(options["data_dir"])
        data_dir = Path(options["data_dir"]) if reuse else Path(tempfile.mkdtemp(prefix="arg-bench-load-"))
        data_dir.mkdir(parents=True, exist_ok=True)
        prepared = data_dir / "bench-load.json"
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("ARG_", "DATABASE_URL", "CELERY_", "DJANGO_SETTINGS_MODULE"))
        }
        budget = (
            f"{int(options['rate'] * 120) + 100}/min"  # far above the offered rate: measure, not throttle
        )
        env.update(
            ARG_DATA_DIR=str(data_dir),
            ARG_RATE_LIMIT_INFER=budget,
            ARG_RATE_LIMIT_FEEDBACK=budget,
            OPENBLAS_NUM_THREADS="1",
            MKL_NUM_THREADS="1",
            OMP_NUM_THREADS="1",
            HF_HUB_OFFLINE="1",
        )
        manage = [sys.executable, str(Path(settings.BASE_DIR) / "manage.py")]
        server = None
        log = open(data_dir / "gunicorn.log", "wb")  # noqa: SIM115 - closed in finally
        try:
            if prepared.exists():
                key = json.loads(prepared.read_text())["key"]
                self.stderr.write(f"reusing {data_dir}")
            else:
                self.stderr.write(
                    f"preparing {data_dir}: migrate, import {Path(options['pack']).name}, publish"
                )
                for step in (
                    ["migrate", "--noinput"],
                    ["import_pack", options["pack"], "--no-progress"],
                    ["publish_release", slug, "--notes", "bench_load"],
                ):
                    done = subprocess.run(
                        [*manage, *step], env=env, capture_output=True, text=True, timeout=900
                    )
                    if done.returncode != 0:
                        raise CommandError(f"manage.py {' '.join(step)} failed:\n{done.stderr[-2000:]}")
                key = subprocess.run(
                    [*manage, "api_token", "create", slug, "bench-load", "--role", options["role"]],
                    env=env,
                    check=True,
                    capture_output=True,
                    text=True,
                    timeout=300,
                ).stdout.strip()
                if reuse:
                    prepared.write_text(json.dumps({"key": key, "project": slug}))
            port = _free_port()
            server = subprocess.Popen(
                [
                    str(Path(sys.executable).parent / "gunicorn"),
                    "arg_platform.wsgi:application",
                    "--bind",
                    f"127.0.0.1:{port}",
                    "--workers",
                    str(options["workers"]),
                    "--threads",
                    str(options["threads"]),
                    "--timeout",
                    "60",
                    "--graceful-timeout",
                    "10",
                    *self._gunicorn_config(),
                ],
                cwd=settings.BASE_DIR,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            self._wait_up(port, server)
            headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
            self.stderr.write("warming up every worker")
            self._warm_up(port, headers, prompts, server.pid, options["workers"])
            workers = _children(server.pid)
            rss_start = sum(_rss_mb(pid) for pid in workers)
            rows_before = _row_counts(data_dir)
            self.stderr.write(
                f"load: {options['rate']:g} req/s for {options['duration']:g} s "
                f"({options['feedback_share']:.0%} feedback, {options['repeat_share']:.0%} of prompts repeated), "
                f"{len(workers)} workers × {options['threads']} threads"
            )
            run, rss_series, wall = self._load(port, headers, prompts, options, workers)
            rss_end = sum(_rss_mb(pid) for pid in workers)
            run.rows = {k: _row_counts(data_dir)[k] - v for k, v in rows_before.items()}
        finally:
            if server is not None:
                os.killpg(server.pid, signal.SIGTERM)
                try:
                    server.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(server.pid, signal.SIGKILL)
                    server.wait()
            log.close()
            if not options["keep"] and not reuse:
                shutil.rmtree(data_dir, ignore_errors=True)
            else:
                self.stderr.write(f"kept {data_dir}")
        self._report(run, options, rss_start, rss_end, rss_series, wall)

    @staticmethod
    def _gunicorn_config() -> list[str]:
        """The platform's gunicorn settings (as run_embedded passes them), when the module exists."""
        import importlib.util

        found = importlib.util.find_spec("arg_platform.gunicorn_conf") is not None
        return ["--config", "python:arg_platform.gunicorn_conf"] if found else []

    def _wait_up(self, port: int, server: subprocess.Popen[bytes]) -> None:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if server.poll() is not None:
                raise CommandError("gunicorn exited during start-up")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                conn.request("GET", "/healthz")
                conn.getresponse().read()
                return
            except OSError:
                time.sleep(0.5)
        raise CommandError("gunicorn did not answer /healthz within 180 s")

    def _warm_up(
        self, port: int, headers: dict[str, str], prompts: list[str], master: int, workers: int
    ) -> None:
        def one(prompt: str) -> None:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            conn.request("POST", "/api/v1/infer", json.dumps({"prompt": prompt}), headers)
            conn.getresponse().read()
            conn.close()

        with ThreadPoolExecutor(max_workers=4 * workers) as pool:
            list(pool.map(one, prompts[: 40 * workers] * 2))

    def _load(
        self,
        port: int,
        headers: dict[str, str],
        prompts: list[str],
        options: dict[str, Any],
        workers: list[int],
    ) -> tuple[Run, list[float], float]:
        rng = random.Random(options["seed"])
        run = Run()
        local = threading.local()
        total = int(options["rate"] * options["duration"])
        share = options["feedback_share"]
        plan = [("feedback" if rng.random() < share else "infer", rng.random()) for _ in range(total)]
        repeat = [rng.random() < options["repeat_share"] for _ in range(total)]

        def connection() -> http.client.HTTPConnection:
            if getattr(local, "conn", None) is None:
                local.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            return local.conn

        def send(kind: str, pick: float, scheduled: float, number: int, verbatim: bool) -> None:
            lag = (time.perf_counter() - scheduled) * 1000
            with run.lock:
                known = run.request_ids[-200:]
            if kind == "feedback" and not known:
                kind = "infer"
            if kind == "infer":
                prompt = prompts[int(pick * len(prompts))]
                if not verbatim:
                    prompt = f"{prompt} (ticket {options['seed']}-{number})"  # never seen: a real embedding
                path, body = "/api/v1/infer", {"prompt": prompt}
            else:
                body = {"request_id": known[int(pick * len(known))], "kind": "helpful", "helpful": pick < 0.7}
                path = "/api/v1/feedback"
            started = time.perf_counter()
            try:
                reused = getattr(local, "conn", None) is not None
                try:
                    conn = connection()
                    conn.request("POST", path, json.dumps(body), headers)
                    response = conn.getresponse()
                except STALE:
                    if not reused:
                        raise
                    # the server closed this idle keep-alive connection before reading the request (gunicorn
                    # --keep-alive): like any HTTP client, send it again once on a fresh connection
                    with run.lock:
                        run.reconnects += 1
                    conn.close()
                    local.conn = None
                    conn = connection()
                    conn.request("POST", path, json.dumps(body), headers)
                    response = conn.getresponse()
                payload = response.read()
                ms = (time.perf_counter() - started) * 1000
                sample = Sample(kind, response.status, ms, lag)
                if response.status != 200:
                    sample.error = payload[:200].decode(errors="replace")
                elif kind == "infer":
                    with run.lock:
                        run.request_ids.append(json.loads(payload)["request_id"])
            except (OSError, http.client.HTTPException, ValueError) as exc:
                local.conn = None
                sample = Sample(
                    kind, 0, (time.perf_counter() - started) * 1000, lag, f"{type(exc).__name__}: {exc}"
                )
            with run.lock:
                run.samples.append(sample)

        rss_series: list[float] = []
        stop = threading.Event()

        def watch_memory() -> None:
            while not stop.wait(5.0):
                rss_series.append(sum(_rss_mb(pid) for pid in workers))

        watcher = threading.Thread(target=watch_memory, daemon=True)
        watcher.start()
        start = time.perf_counter() + 0.2
        with ThreadPoolExecutor(max_workers=max(8, min(128, int(options["rate"])))) as pool:
            for i, (kind, pick) in enumerate(plan):
                scheduled = start + i / options["rate"]
                delay = scheduled - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                pool.submit(send, kind, pick, scheduled, i, repeat[i])
        wall = time.perf_counter() - start
        stop.set()
        watcher.join()
        return run, rss_series, wall

    def _report(
        self,
        run: Run,
        options: dict[str, Any],
        rss_start: float,
        rss_end: float,
        rss_series: list[float],
        wall: float,
    ) -> None:
        figures: dict[str, Any] = {"rate": options["rate"], "duration_s": options["duration"]}
        self.stdout.write(
            f"{'endpoint':<10} {'requests':>8} {'errors':>6} {'p50 ms':>8} {'p95 ms':>8} "
            f"{'p99 ms':>8} {'max ms':>8}"
        )
        for kind in ("infer", "feedback"):
            samples = [s for s in run.samples if s.kind == kind]
            ms = np.array([s.ms for s in samples]) if samples else np.zeros(1)
            errors = sum(1 for s in samples if s.status != 200)
            p50, p95, p99 = (float(np.percentile(ms, q)) for q in (50, 95, 99))
            figures[kind] = {
                "requests": len(samples),
                "errors": errors,
                "p50_ms": p50,
                "p95_ms": p95,
                "p99_ms": p99,
                "max_ms": float(ms.max()),
            }
            self.stdout.write(
                f"{kind:<10} {len(samples):>8} {errors:>6} {p50:>8.2f} {p95:>8.2f} {p99:>8.2f} "
                f"{float(ms.max()):>8.2f}"
            )
        errors = [s for s in run.samples if s.status != 200]
        ok = {
            kind: sum(1 for s in run.samples if s.kind == kind and s.status == 200)
            for kind in ("infer", "feedback")
        }
        logs, feedback = run.rows.get("inference_inferencelog", 0), run.rows.get("inference_feedback", 0)
        verdict = "nothing lost" if (logs, feedback) == (ok["infer"], ok["feedback"]) else "MISMATCH"
        self.stdout.write(
            f"rows written: {logs} InferenceLog for {ok['infer']} infer answers, {feedback} Feedback for "
            f"{ok['feedback']} feedback answers ({verdict})"
        )
        for sample in errors[:5]:
            self.stdout.write(f"  error: {sample.kind} {sample.status} {sample.error}")
        lag = np.array([s.lag_ms for s in run.samples]) if run.samples else np.zeros(1)
        growth = 100.0 * (rss_end - rss_start) / rss_start if rss_start else 0.0
        achieved = len(run.samples) / wall if wall else 0.0
        self.stdout.write(
            f"workers RSS: {rss_start:.0f} MB after warm-up → {rss_end:.0f} MB at the end ({growth:+.1f} %), "
            f"peak {max(rss_series, default=rss_end):.0f} MB; client lag p95 {np.percentile(lag, 95):.1f} ms; "
            f"{run.reconnects} requests re-sent on a fresh connection (idle keep-alive closed by the server)"
        )
        goal = figures["infer"]["p95_ms"] <= options["p95_goal_ms"]
        self.stdout.write(
            f"goals: 0 errors {'met' if not errors else 'NOT met'}; infer P95 ≤ {options['p95_goal_ms']:g} ms "
            f"{'met' if goal else 'NOT met'}; memory growth ≤ 10 % {'met' if growth <= 10 else 'NOT met'}"
        )
        figures.update(
            errors=len(errors),
            achieved_rps=achieved,
            rss_start_mb=rss_start,
            rss_end_mb=rss_end,
            rss_growth_pct=growth,
            rss_series_mb=rss_series,
            max_lag_ms=float(lag.max()),
            reconnects=run.reconnects,
            rows_written=run.rows,
        )
        if options["json"]:
            Path(options["json"]).write_text(json.dumps(figures, indent=2), encoding="utf-8")
        self.stdout.write(
            f"SUMMARY rate={options['rate']:g} duration_s={options['duration']:g} requests={len(run.samples)} "
            f"errors={len(errors)} infer_p50_ms={figures['infer']['p50_ms']:.2f} "
            f"infer_p95_ms={figures['infer']['p95_ms']:.2f} feedback_p95_ms={figures['feedback']['p95_ms']:.2f} "
            f"achieved_rps={achieved:.1f} rss_start_mb={rss_start:.0f} rss_end_mb={rss_end:.0f} "
            f"rss_growth_pct={growth:.1f} max_lag_ms={float(lag.max()):.1f}"
        )
