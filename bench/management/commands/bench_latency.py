"""``manage.py bench_latency --nodes 1000,10000,100000`` — end-to-end latency and throughput of
``POST /api/v1/infer`` against the real server, with the embed-only floor measured in the same run.

Everything runs against a temporary data folder of its own (SQLite database, broker, caches) and a
gunicorn it starts and stops itself on loopback; see ``bench/latency.py`` for the protocol.
Prints progress on stderr, a table on stdout, and ends with
``SUMMARY p50_ms_10k=… p95_ms_10k=… embed_p50_ms=… rps=… growth_p95=…``. ``--json OUT`` also writes
every figure. Quick variant for iterating: ``--nodes 1000 --requests 200``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Benchmark POST /api/v1/infer over HTTP (gunicorn, 2 workers) on synthetic graphs, with floors."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--nodes", default="1000,10000,100000", help="comma-separated graph sizes")
        parser.add_argument("--requests", type=int, default=1000, help="measured requests per phase and size")
        parser.add_argument(
            "--concurrency", type=int, default=1, help="latency phase: requests in flight (1: one client)"
        )
        parser.add_argument(
            "--paired-concurrency",
            type=int,
            default=2,
            help="paired phase: requests in flight (one per worker)",
        )
        parser.add_argument(
            "--throughput-concurrency", type=int, default=8, help="throughput phase: requests in flight"
        )
        parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
        parser.add_argument(
            "--floor",
            type=int,
            default=200,
            help="prompts embedded for each embed-only floor (paced and tight)",
        )
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument("--json", help="also write the results to this JSON file")
        parser.add_argument("--keep", action="store_true", help="keep the temporary data folder")

    def handle(self, *args: Any, **options: Any) -> None:
        from bench.latency import BenchConfig, run, stand_in, summary_line, table

        try:
            sizes = tuple(int(x) for x in options["nodes"].split(",") if x.strip())
        except ValueError as exc:
            raise CommandError(f"--nodes {options['nodes']!r}: give comma-separated integers") from exc
        if not sizes or min(sizes) < 50:
            raise CommandError("--nodes: every size must be at least 50")
        concurrencies = (
            options["concurrency"],
            options["paired_concurrency"],
            options["throughput_concurrency"],
        )
        if options["requests"] < 10 or min(concurrencies) < 1:
            raise CommandError("--requests must be ≥ 10 and the concurrencies ≥ 1")
        config = BenchConfig(
            sizes=sizes,
            requests=options["requests"],
            concurrency=options["concurrency"],
            paired_concurrency=options["paired_concurrency"],
            throughput_concurrency=options["throughput_concurrency"],
            workers=options["workers"],
            seed=options["seed"],
            floor=options["floor"],
            keep=options["keep"],
        )

        def log(message: str) -> None:
            self.stderr.write(f"… {message}")
            self.stderr.flush()

        try:
            results = run(config, log=log)
        except RuntimeError as exc:
            raise CommandError(str(exc)) from exc
        for line in table(results):
            self.stdout.write(line)
        machine = results["machine"]
        self.stdout.write(
            f"{machine['cores']} cores; load average (1, 5, 15 min) at start {machine['load_average_start']}, "
            f"at end {machine['load_average_end']} — other processes share the cores"
        )
        broken = [row["nodes"] for row in results["sizes"] if row["log_rows"] != row["requests_sent"]]
        failed = [row["nodes"] for row in results["sizes"] if row["failures"] or row["timed_out"]]
        if options.get("json"):
            Path(options["json"]).parent.mkdir(parents=True, exist_ok=True)
            Path(options["json"]).write_text(json.dumps(results, indent=2))
        if broken:
            raise CommandError(f"InferenceLog rows ≠ requests sent for {broken} nodes")
        if failed:
            first = next(row for row in results["sizes"] if row["nodes"] == failed[0])
            raise CommandError(f"failed or unfinished requests at {failed} nodes: {first['failures'][:3]}")
        if 10_000 not in sizes:
            self.stdout.write(
                f"(no 10k size: the SUMMARY's 10k figures are those of {stand_in(sizes):,} nodes)"
            )
        self.stdout.write(summary_line(results))
