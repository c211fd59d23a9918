"""``manage.py run_embedded`` — serve the platform with gunicorn plus a real Celery worker and beat.

Embedded defaults need no external service: SQLite, the ``sql`` graph backend, kombu's filesystem
broker. Ctrl-C stops everything.
"""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand

from arg_platform.supervisor import Supervisor, embedded_children


class Command(BaseCommand):
    help = "Run gunicorn + Celery worker + Celery beat in the foreground (Ctrl-C stops all)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--web-workers", type=int, default=2)

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(
            self.style.SUCCESS(
                f"ARG platform on http://{options['host']}:{options['port']}/  (health: /healthz, "
                f"API schema: /api/v1/schema/) — Ctrl-C to stop"
            )
        )
        children = embedded_children(
            host=options["host"], port=options["port"], web_workers=options["web_workers"]
        )
        sys.exit(Supervisor(children).run())
