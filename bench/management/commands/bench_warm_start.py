"""``manage.py bench_warm_start`` — each web worker's first-request latency after a restart, with warm
start off (``ARG_WARM_UP=0``) and on, beside a warm request; see ``bench/warm_start.py``.

Everything runs against a temporary data folder of its own and a gunicorn it starts and stops itself on
loopback. Prints progress on stderr, a table on stdout, and ends with
``SUMMARY cold_first_ms=… warm_first_ms=… warm_steady_ms=… ready_s=…``. ``--json OUT`` writes every figure.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Benchmark the first request of each web worker after a restart, warm start off and on."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--restarts", type=int, default=3, help="restarts per mode")
        parser.add_argument("--requests", type=int, default=24, help="infer requests after each restart")
        parser.add_argument("--json", help="also write the results to this JSON file")
        parser.add_argument("--keep", action="store_true", help="keep the temporary data folder")

    def handle(self, *args: Any, **options: Any) -> None:
        from bench.warm_start import run, summary_line, table

        data_dir = Path(tempfile.mkdtemp(prefix="arg-warm-start-"))

        def log(message: str) -> None:
            self.stderr.write(message)

        try:
            results = run(data_dir, restarts=options["restarts"], requests=options["requests"], log=log)
        finally:
            if not options["keep"]:
                shutil.rmtree(data_dir, ignore_errors=True)
            else:
                log(f"data folder kept: {data_dir}")
        for line in table(results):
            self.stdout.write(line)
        self.stdout.write(json.dumps(results["summary"]))
        if options["json"]:
            Path(options["json"]).write_text(json.dumps(results, indent=2, default=str), encoding="utf-8")
        self.stdout.write(summary_line(results["summary"]))
