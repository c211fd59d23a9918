"""``manage.py bench_analytics``: time and memory of the structural analytics on synthetic graphs.

For each size: generate a seeded synthetic graph (``bench.synthetic``), compute its structural
signals with the networkx backend (``ontology.analytics``), serialize them as a release would, and
print one table row: wall-clock seconds per stage (``total_s`` is the whole analytics call, ``other_s``
its projection, modularity, PageRank and assembly) and the process CPU seconds of the call (``cpu_s``,
a figure other load on the machine does not inflate). Memory is the process's peak resident set size
(VmHWM), reset before each stage through ``/proc/self/clear_refs`` where Linux allows it (otherwise
``getrusage`` ru_maxrss, a high-water mark over the whole process). The last line is machine-readable:

    SUMMARY analytics_s_1k=<s> analytics_s_10k=<s> analytics_s_100k=<s> peak_rss_mb_100k=<mb>
"""

from __future__ import annotations

import gc
import platform
import resource
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

CLEAR_REFS = Path("/proc/self/clear_refs")
STATUS = Path("/proc/self/status")
COLUMNS = (
    ("nodes", 8),
    ("edges", 8),
    ("gen_s", 7),
    ("louvain_s", 9),
    ("jaccard_s", 9),
    ("simrank_s", 9),
    ("other_s", 7),
    ("total_s", 8),
    ("cpu_s", 7),
    ("gen_rss_mb", 10),
    ("peak_rss_mb", 11),
    ("comms", 6),
    ("modularity", 10),
    ("json_mb", 7),
)


def _status_kb(key: str) -> int | None:
    try:
        for line in STATUS.read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def reset_peak_rss() -> bool:
    """Reset the process's peak RSS (Linux ≥ 4.0: write 5 to clear_refs); False when not possible."""
    try:
        CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return True


def peak_rss_mb() -> float:
    """Peak resident set size since the last reset (VmHWM), or ru_maxrss over the process lifetime."""
    kb = _status_kb("VmHWM")
    if kb is None:
        kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return kb / 1024.0


def size_key(nodes: int) -> str:
    return f"{nodes // 1000}k" if nodes % 1000 == 0 else str(nodes)


def parse_sizes(text: str) -> list[int]:
    sizes: list[int] = []
    for part in text.split(","):
        part = part.strip().lower()
        if not part:
            continue
        factor = 1000 if part.endswith("k") else 1
        try:
            value = int(part.rstrip("k")) * factor
        except ValueError:
            raise CommandError(f"--nodes: {part!r} is not a number of nodes") from None
        if value < 11:
            raise CommandError("--nodes: a synthetic graph has at least 11 nodes")
        sizes.append(value)
    if not sizes:
        raise CommandError("--nodes: give at least one size, e.g. 1000,10000,100000")
    return sizes


class Command(BaseCommand):
    help = (
        "Benchmark the structural analytics (Louvain, Node Similarity, SimRank, degree, PageRank) on seeded "
        "synthetic graphs: prints a table and a final SUMMARY line."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--nodes", default="1000,10000,100000", help="comma-separated sizes (1k = 1000)")
        parser.add_argument("--seed", type=int, default=7, help="seed of the generator and of Louvain")
        parser.add_argument("--edges-per-node", type=float, default=5.0)
        parser.add_argument("--top-k", type=int, default=10, help="top-k of Node Similarity and SimRank")
        parser.add_argument("--simrank-cap", type=int, default=2000, help="largest SimRank block")

    def handle(self, *args: Any, **options: Any) -> None:
        from bench.synthetic import generate_graph
        from ontology.analytics import compute_structural_signals, signals_to_json

        sizes = parse_sizes(options["nodes"])
        exact = reset_peak_rss()
        self.stdout.write(
            f"# bench_analytics seed={options['seed']} edges_per_node={options['edges_per_node']} "
            f"top_k={options['top_k']} simrank_cap={options['simrank_cap']} python={platform.python_version()} "
            f"peak_rss={'VmHWM reset per stage' if exact else 'ru_maxrss (process lifetime)'}"
        )
        self.stdout.write(" ".join(name.rjust(width) for name, width in COLUMNS))
        summary: dict[str, str] = {}
        for nodes in sizes:
            gc.collect()
            reset_peak_rss()
            start = time.perf_counter()
            generated = generate_graph(
                nodes=nodes, seed=options["seed"], edges_per_node=options["edges_per_node"]
            )
            gen_seconds = time.perf_counter() - start
            gen_rss = peak_rss_mb()
            reset_peak_rss()
            cpu_start = time.process_time()
            signals = compute_structural_signals(
                generated.graph,
                seed=options["seed"],
                jaccard_top_k=options["top_k"],
                simrank_top_k=options["top_k"],
                simrank_cap=options["simrank_cap"],
            )
            cpu_seconds = time.process_time() - cpu_start
            analytics_rss = peak_rss_mb()
            json_mb = len(signals_to_json(signals).encode("utf-8")) / 2**20
            timings = dict(signals.timings)
            staged = sum(timings.get(k, 0.0) for k in ("louvain", "jaccard", "simrank"))
            row = {
                "nodes": nodes,
                "edges": len(generated.graph.edges),
                "gen_s": f"{gen_seconds:.2f}",
                "louvain_s": f"{timings.get('louvain', 0.0):.2f}",
                "jaccard_s": f"{timings.get('jaccard', 0.0):.2f}",
                "simrank_s": f"{timings.get('simrank', 0.0):.2f}",
                "other_s": f"{signals.seconds - staged:.2f}",
                "total_s": f"{signals.seconds:.2f}",
                "cpu_s": f"{cpu_seconds:.2f}",
                "gen_rss_mb": f"{gen_rss:.0f}",
                "peak_rss_mb": f"{max(gen_rss, analytics_rss):.0f}",
                "comms": signals.community_count,
                "modularity": f"{signals.modularity:.4f}",
                "json_mb": f"{json_mb:.1f}",
            }
            self.stdout.write(" ".join(str(row[name]).rjust(width) for name, width in COLUMNS))
            summary[f"analytics_s_{size_key(nodes)}"] = f"{signals.seconds:.2f}"
            summary[f"peak_rss_mb_{size_key(nodes)}"] = f"{max(gen_rss, analytics_rss):.0f}"
            del generated, signals
        keys = [f"analytics_s_{size_key(n)}" for n in sizes] + [f"peak_rss_mb_{size_key(max(sizes))}"]
        self.stdout.write("SUMMARY " + " ".join(f"{key}={summary[key]}" for key in keys))
