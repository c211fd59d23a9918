"""``manage.py bench_snapshot --nodes 1000,10000,100000`` — release bundle → GraphSnapshot, and lookups.

For each size: a seeded synthetic graph with 384-dimensional embeddings is frozen into a release
bundle (graph columns + embedding matrix + documents), written to a file, and then **loaded in a fresh
Python process** (so its memory is the snapshot's alone): ``bundle_load`` + ``snapshot_build``, timed,
with the child's peak RSS. Then neighbourhood lookups (out-edges of a random node, CSR slices) are
timed one by one in that process, beside a baseline in the same run: the same lookups on a
``dict[node_id, list[(target, type, weight)]]`` adjacency built from the same graph.
Last line: ``SUMMARY load_s_100k=… rss_mb_100k=… lookup_us_p50_100k=… dict_lookup_us_p50_100k=…``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand

CHILD = r"""
import json, random, resource, sys, time
t0 = time.perf_counter()
from ontology.graph_arrays import bundle_load
from ontology.graph_snapshot import snapshot_build
imported = time.perf_counter() - t0
blob = open(sys.argv[1], "rb").read()
t = time.perf_counter()
bundle = bundle_load(blob)
snapshot = snapshot_build(bundle.arrays, project_id=1, release_id=1, version=1, checksum=bundle.checksum,
                          embeddings=bundle.matrices.get("node_embeddings"), documents=bundle.documents)
load_s = time.perf_counter() - t
del blob, bundle
rng = random.Random(7)
positions = [rng.randrange(snapshot.node_count) for _ in range(20000)]
times = []
for p in positions:
    s = time.perf_counter_ns()
    idx, typ, wt = snapshot.neighbours(p)
    times.append(time.perf_counter_ns() - s)
times.sort()
# the baseline: a plain dict adjacency of the same graph, same lookups
adjacency = {}
out = snapshot.out_edges
for i in range(snapshot.node_count):
    a, b = out.indptr[i], out.indptr[i + 1]
    row = zip(out.indices[a:b].tolist(), out.types[a:b].tolist(), out.weights[a:b].tolist())
    adjacency[snapshot.node_ids[i]] = list(row)
base = []
for p in positions:
    key = snapshot.node_ids[p]
    s = time.perf_counter_ns()
    row = adjacency[key]
    base.append(time.perf_counter_ns() - s)
base.sort()
print(json.dumps({
    "load_s": load_s, "import_s": imported,
    "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "lookup_us_p50": times[len(times) // 2] / 1000, "lookup_us_p99": times[int(len(times) * 0.99)] / 1000,
    "dict_us_p50": base[len(base) // 2] / 1000,
    "nodes": snapshot.node_count, "edges": snapshot.edge_count,
}))
"""


class Command(BaseCommand):
    help = "Benchmark release bundle → snapshot load time and memory, and neighbourhood lookups."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--nodes", default="1000,10000,100000", help="comma-separated graph sizes")
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument("--json", help="also write the results to this JSON file")

    def handle(self, *args: Any, **options: Any) -> None:
        from bench.synthetic import generate_graph
        from ontology.graph_arrays import bundle_checksum, bundle_dump, bundle_members, graph_to_arrays

        sizes = [int(x) for x in options["nodes"].split(",") if x.strip()]
        rows: list[dict[str, Any]] = []
        header = (
            f"{'nodes':>8} {'edges':>8} {'generate s':>10} {'freeze s':>9} {'bundle MB':>9} {'load s':>7} "
            f"{'load RSS MB':>11} {'lookup p50 µs':>13} {'lookup p99 µs':>13} {'dict p50 µs':>11}"
        )
        self.stdout.write(header)
        for n in sizes:
            self.stderr.write(f"… {n:,} nodes: generating")
            t = time.perf_counter()
            synthetic = generate_graph(nodes=n, seed=options["seed"], embedding_dim=384)
            generate_s = time.perf_counter() - t
            self.stderr.write(f"… {n:,} nodes: freezing the bundle")
            t = time.perf_counter()
            arrays = graph_to_arrays(synthetic.graph)
            members = bundle_members(
                arrays=arrays,
                matrices={"node_embeddings": synthetic.embeddings},
                documents={"labels": list(synthetic.labels)},
            )
            bundle_checksum(members)
            blob = bundle_dump(members)
            freeze_s = time.perf_counter() - t
            with tempfile.NamedTemporaryFile(suffix=".npz", delete=False) as handle:
                handle.write(blob)
                path = handle.name
            del blob, members, arrays, synthetic
            self.stderr.write(f"… {n:,} nodes: loading in a fresh process")
            proc = subprocess.run(
                [sys.executable, "-c", CHILD, path],
                capture_output=True,
                text=True,
                check=True,
                cwd=str(Path(__file__).resolve().parents[3]),
            )
            child = json.loads(proc.stdout.strip().splitlines()[-1])
            row = {
                "nodes": n,
                "edges": child["edges"],
                "generate_s": generate_s,
                "freeze_s": freeze_s,
                "bundle_mb": Path(path).stat().st_size / 2**20,
                **child,
            }
            Path(path).unlink()
            rows.append(row)
            self.stdout.write(
                f"{n:>8,} {row['edges']:>8,} {generate_s:>10.2f} {freeze_s:>9.2f} {row['bundle_mb']:>9.1f} "
                f"{row['load_s']:>7.2f} {row['rss_mb']:>11.0f} {row['lookup_us_p50']:>13.2f} "
                f"{row['lookup_us_p99']:>13.2f} {row['dict_us_p50']:>11.2f}"
            )
        if options.get("json"):
            Path(options["json"]).write_text(json.dumps(rows, indent=2))
        last = rows[-1]
        tag = f"{last['nodes'] // 1000}k"
        self.stdout.write(
            f"SUMMARY load_s_{tag}={last['load_s']:.2f} rss_mb_{tag}={last['rss_mb']:.0f} "
            f"lookup_us_p50_{tag}={last['lookup_us_p50']:.2f} dict_lookup_us_p50_{tag}={last['dict_us_p50']:.2f}"
        )
