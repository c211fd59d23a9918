"""Health checks of the parts the platform depends on, for ``GET /healthz``.

Each check returns a ``ComponentHealth``; the endpoint answers 200 when every required part is up and
503 when one is down; the parts, and what failed, are shown to operators only (``arg_platform.views``).
"No active release yet" is reported but is not a failure: a new platform starts without one.

*Ready* means every part is up and this process is *warm*: it has loaded what a request needs
(``warm_up_run``: the encoder, the active releases' runtimes and indexes, … —
``inference.runtime.warm_up_steps``), so its first request costs what any other does. A serving process
(a gunicorn worker, ``arg_platform.gunicorn_conf``) runs the warm-up before it accepts a connection;
until it has finished, and when a step failed, the ``warm_up`` check fails and ``/healthz`` answers 503
``{"status": "starting"}`` (``"degraded"`` when a step failed or another part is down); operators also
read ``"ready"`` and each step's duration. A process that never warms up (``ARG_WARM_UP=0``,
``manage.py runserver``, a shell) loads on first use and counts as ready, with the state ``off``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import connection


@dataclass(frozen=True)
class ComponentHealth:
    name: str
    ok: bool
    detail: str = ""
    info: dict[str, object] = field(default_factory=dict)
    latency_ms: float = 0.0


def _timed(name: str, check: Callable[[], tuple[bool, str, dict[str, object]]]) -> ComponentHealth:
    started = time.perf_counter()
    try:
        ok, detail, info = check()
    except Exception as exc:  # a health check reports failures, it never raises
        ok, detail, info = False, f"{type(exc).__name__}: {exc}", {}
    return ComponentHealth(name, ok, detail, info, round((time.perf_counter() - started) * 1000, 2))


def check_database() -> tuple[bool, str, dict[str, object]]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return True, "ok", {"vendor": connection.vendor}


def check_graph_store() -> tuple[bool, str, dict[str, object]]:
    from ontology.store import get_graph_store  # late: upward import (ignore list), read per probe

    status = get_graph_store().health()
    return status.ok, status.detail, {"backend": status.backend, **status.info}


def _worker_heartbeat_age() -> float | None:
    from .tasks import heartbeat_path

    try:
        stamp = float(heartbeat_path().read_text(encoding="utf-8").split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return round(time.time() - stamp, 1)


def check_broker() -> tuple[bool, str, dict[str, object]]:
    ok, detail, info = _check_broker_connection()
    info["worker_heartbeat_age_s"] = _worker_heartbeat_age()
    return ok, detail, info


def _check_broker_connection() -> tuple[bool, str, dict[str, object]]:
    url = settings.CELERY_BROKER_URL
    if url.startswith("filesystem://"):
        folder = Path(str(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"]))
        folder.mkdir(parents=True, exist_ok=True)
        if not os.access(folder, os.W_OK):
            return False, f"broker folder {folder} is not writable", {"transport": "filesystem"}
        return True, "ok", {"transport": "filesystem", "queued_messages": sum(1 for _ in folder.iterdir())}
    from kombu import Connection

    with Connection(url, connect_timeout=2) as conn:
        conn.ensure_connection(max_retries=1, timeout=2)
        transport = conn.transport_cls
    return True, "ok", {"transport": str(transport)}


def check_embedder() -> tuple[bool, str, dict[str, object]]:
    from .embedder import get_embedder

    embedder = get_embedder()
    path = Path(embedder.model_path())
    if not (path / "model.safetensors").exists() and not (path / "pytorch_model.bin").exists():
        return False, f"model weights missing under {path}", {}
    info = embedder.info()
    return True, "ok", {"model": info.name, "dim": info.dim, "loaded": info.loaded, "runtime": info.runtime}


def check_release() -> tuple[bool, str, dict[str, object]]:
    from ontology.selectors import release_active_summary  # late: upward import (ignore list), read per probe

    summary = release_active_summary()
    if summary is None:
        return True, "no active release yet", {"active": None}
    return True, "ok", {"active": summary}


class Readiness:
    """This process's warm-up: its state, when it started and each step's duration.

    States: ``off`` (no warm-up in this process: parts load on first use), ``warming``, ``ready``,
    ``failed`` (a step raised; the process still serves, loading lazily, but is not reported ready).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.state = "off"
            self.started_at: float | None = None
            self.seconds: float | None = None
            self.steps_ms: dict[str, float] = {}
            self.error = ""

    def begin(self) -> None:
        with self._lock:
            self.state, self.started_at, self.seconds, self.steps_ms, self.error = (
                "warming",
                time.monotonic(),
                None,
                {},
                "",
            )

    def step_done(self, name: str, ms: float) -> None:
        with self._lock:
            self.steps_ms[name] = round(ms, 1)

    def finish(self, error: str = "") -> None:
        with self._lock:
            self.state = "failed" if error else "ready"
            self.error = error
            if self.started_at is not None:
                self.seconds = round(time.monotonic() - self.started_at, 2)

    @property
    def ready(self) -> bool:
        return self.state in ("off", "ready")

    def as_info(self) -> dict[str, object]:
        with self._lock:
            return {
                "state": self.state,
                "pid": os.getpid(),
                "seconds": self.seconds,
                "steps_ms": dict(self.steps_ms),
            }


readiness = Readiness()


def warm_up_run(
    steps: list[tuple[str, Callable[[], object]]], *, after_step: Callable[[str, float], None] | None = None
) -> Readiness:
    """Run the warm-up steps in order, recording each one's duration in ``readiness``; a failing step is
    logged and recorded (state ``failed``), the next ones still run. ``after_step(name, ms)`` is called
    after each step (a gunicorn worker tells its master it is alive there)."""
    import logging

    logger = logging.getLogger(__name__)
    readiness.begin()
    errors = []
    for name, step in steps:
        started = time.perf_counter()
        try:
            step()
        except Exception as exc:  # recorded and reported by /healthz; the worker still serves
            logger.exception("warm-up step %s failed", name)
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
        ms = (time.perf_counter() - started) * 1000
        readiness.step_done(name, ms)
        if after_step is not None:
            after_step(name, ms)
    readiness.finish("; ".join(errors))
    return readiness


def check_warm_up() -> tuple[bool, str, dict[str, object]]:
    info = readiness.as_info()
    detail = {
        "off": "no warm-up in this process (loads on first use)",
        "warming": "warming up",
        "ready": "ok",
        "failed": f"warm-up failed: {readiness.error}",
    }[readiness.state]
    return readiness.ready, detail, info


CHECKS: dict[str, Callable[[], tuple[bool, str, dict[str, object]]]] = {
    "database": check_database,
    "graph_store": check_graph_store,
    "broker": check_broker,
    "embedder": check_embedder,
    "release": check_release,
    "warm_up": check_warm_up,
}


def health_report() -> tuple[bool, list[ComponentHealth]]:
    results = [_timed(name, check) for name, check in CHECKS.items()]
    return all(r.ok for r in results), results


def report_status(ok: bool, results: list[ComponentHealth]) -> str:
    """``ok``; ``starting`` while this process warms up and nothing else is down; else ``degraded``."""
    if ok:
        return "ok"
    failing = [r.name for r in results if not r.ok]
    return "starting" if failing == ["warm_up"] and readiness.state == "warming" else "degraded"


def public_report(ok: bool, results: list[ComponentHealth]) -> dict[str, object]:
    """What anyone may read: the status alone (``ok`` is ready: warm and every part up)."""
    return {"status": report_status(ok, results)}


def report_as_json(ok: bool, results: list[ComponentHealth]) -> dict[str, object]:
    """The operators' report: the status, ``ready`` (this process is warm and every part is up), the
    failing parts and every part's check."""
    return {
        **public_report(ok, results),
        "ready": ok,
        "failing": [r.name for r in results if not r.ok],
        "components": {r.name: {k: v for k, v in asdict(r).items() if k != "name"} for r in results},
    }
