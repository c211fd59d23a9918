"""Health checks of the parts the platform depends on, for ``GET /healthz``.

Each check returns a ``ComponentHealth``; the endpoint answers 200 when every required part is up and
503 when one is down; the parts, and what failed, are shown to operators only (``arg_platform.views``).
"No active release yet" is reported but is not a failure: a new platform starts without one.
"""

from __future__ import annotations

import os
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


CHECKS: dict[str, Callable[[], tuple[bool, str, dict[str, object]]]] = {
    "database": check_database,
    "graph_store": check_graph_store,
    "broker": check_broker,
    "embedder": check_embedder,
    "release": check_release,
}


def health_report() -> tuple[bool, list[ComponentHealth]]:
    results = [_timed(name, check) for name, check in CHECKS.items()]
    return all(r.ok for r in results), results


def report_as_json(ok: bool, results: list[ComponentHealth]) -> dict[str, object]:
    return {
        "status": "ok" if ok else "degraded",
        "failing": [r.name for r in results if not r.ok],
        "components": {r.name: {k: v for k, v in asdict(r).items() if k != "name"} for r in results},
    }
