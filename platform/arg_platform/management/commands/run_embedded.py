"""``manage.py run_embedded`` — serve the platform with gunicorn plus a real Celery worker and beat.

Embedded defaults need no external service: SQLite, the ``sql`` graph backend, kombu's filesystem
broker. Ctrl-C stops everything.

The banner prints the address actually served (``--host``, ``--port``). Each web worker warms up before
it accepts a connection (``arg_platform.gunicorn_conf``), so the command then watches ``/healthz`` and
prints ``ready`` once it answers 200: from then on requests are answered at warm speed.
"""

from __future__ import annotations

import http.client
import sys
import threading
import time
from typing import Any

from django.core.management.base import BaseCommand

from arg_platform.supervisor import Supervisor, embedded_children

READY_POLL_S = 0.5
READY_WAIT_S = 600.0


def wait_ready(host: str, port: int, *, timeout_s: float = READY_WAIT_S) -> float | None:
    """Seconds until ``GET /healthz`` on ``host:port`` answered 200, or ``None`` after ``timeout_s``."""
    started = time.monotonic()
    probe_host = "127.0.0.1" if host in ("0.0.0.0", "") else host  # noqa: S104 — a bind-all address
    while time.monotonic() - started < timeout_s:
        conn = http.client.HTTPConnection(probe_host, port, timeout=5)
        try:
            conn.request("GET", "/healthz")
            if conn.getresponse().status == 200:
                return time.monotonic() - started
        except (OSError, http.client.HTTPException):
            pass
        finally:
            conn.close()
        time.sleep(READY_POLL_S)
    return None


class Command(BaseCommand):
    help = "Run gunicorn + Celery worker + Celery beat in the foreground (Ctrl-C stops all)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--web-workers", type=int, default=2)

    def handle(self, *args: Any, **options: Any) -> None:
        host, port = options["host"], options["port"]
        base = f"http://{host}:{port}"
        self.stdout.write(
            self.style.SUCCESS(
                f"ARG platform on {base}/  (health: {base}/healthz, API reference: {base}/api/v1/docs/, "
                f"schema: {base}/api/v1/schema/) — warming up; Ctrl-C to stop"
            )
        )
        self.stdout.flush()

        def announce() -> None:
            seconds = wait_ready(host, port)
            if seconds is not None:
                self.stdout.write(
                    self.style.SUCCESS(f"ARG platform ready on {base}/ (warm after {seconds:.0f} s)")
                )
                self.stdout.flush()

        threading.Thread(target=announce, name="ready-announcer", daemon=True).start()
        children = embedded_children(host=host, port=port, web_workers=options["web_workers"])
        sys.exit(Supervisor(children).run())
