"""End-to-end latency and throughput of ``POST /api/v1/infer`` (EVALUATION.md, "Latency, throughput,
scale"); ``manage.py bench_latency`` runs it.

One run, all on loopback, all stopped by itself:

1. a temporary data folder (``ARG_DATA_DIR``: its own SQLite database, broker folder, caches) is
   migrated, and the **real web server** is started on a free loopback port exactly as
   ``run_embedded`` starts it (gunicorn, ``--workers 2`` gthread workers of 4 threads, the embedded
   gunicorn config: one torch thread per worker). The only setting changed is the per-token rate
   limit, raised so the benchmark never gets a 429 (its check still runs on every request);
2. for each size a child process (``python -m bench.latency prepare``) generates a seeded
   synthetic graph (``bench.synthetic``: ≈ 5 edges per node, hubs, a label forest whose labels
   carry 3 example utterances each) with a ``customer`` role and policy, imports it with the pack
   importer, publishes it with ``release_publish`` (validation, structural signals, label index and
   classifier, Info sentence vectors: every publish step), creates an API token of that role, and
   measures a first embed-only floor (``embed_floor_prepare_ms``): ``embed_one`` of prompts it has
   never seen, in-process, one thread — what a web worker does for the prompt of one request;
3. the server is warmed up with distinct prompts (each worker loads the release and its runtimes on
   its first request) until a whole round of concurrent requests is fast;
4. measured, each request a prompt never sent before (so the embedder's cache never answers):
   ``GET /api/v1/whoami/`` (the floor of HTTP + middleware + DRF + token authentication), then
   ``POST /api/v1/infer`` at the *latency* concurrency (default 1: one client, the time a request
   takes) in ten blocks. After each block, while the server idles, a separate process that only
   embeds (``FloorProbe``: the same model, one thread, ``embed_one`` of prompts it has never seen)
   measures the **embed-only floor** twice, in the same minutes as the requests:

   - *paced* (``embed_floor_paced_ms``, the floor ``P50 / floor`` and the SUMMARY line use): one
     prompt at a time, each started one request cycle after the previous one — the cycle being the
     block's wall time per request of one client — so the embedder works under the same arrival
     pattern as the server's embedding step. That is "the time to embed the prompt alone" that a
     request pays: the server's embedding step P50 matches the paced floor, not the tight one
     (docs/benchmarks.md, session 10). Between requests the host's other work evicts the model's
     weights and the request's data from the shared caches: a 7 ms pause before a request, slept or
     spun, makes the same in-process Python 1.5 times slower;
   - *tight* (``embed_floor_tight_ms``, reported beside it): ``BLOCK_WARM_UP`` untimed embeddings,
     then the block's prompts back to back — the embedder's best case, with warm caches no request
     at one client ever sees (until session 10 this was the floor the goal was judged by);

   then ``POST /api/v1/infer`` at the *paired* concurrency (one request per worker, default 2: both
   cores busy, shared with this load generator) and at the *throughput* concurrency (default 8, the
   workers' threads kept busy), each a bounded number of requests with a time limit;
5. the number of InferenceLog rows of the project is checked against the requests sent (every
   authenticated request leaves exactly one), then the server is stopped and the folder removed.

Vectors: the labels' texts, the label index, the classifier's training texts and every prompt are
embedded with the real model. Node vectors and the Info sentence vectors of the synthetic chunks are
*synthetic* (the real vector of the node's label's first example plus seeded noise, unit norm), handed
to publication through ``PublishOptions.node_embeddings`` and ``embedder_override``: embedding 170k
synthetic texts of ~70 word pieces with the real model would take ~40 minutes on 2 cores and tells
nothing about serving latency; the serving path does the same work either way.

The last line printed is ``SUMMARY p50_ms_10k=… p95_ms_10k=… embed_p50_ms=… rps=… growth_p95=…``
(latency-phase P50/P95 and throughput-phase requests/s at 10k nodes, the paced embed-only P50 measured
with the 10k release, P95@largest / P95@smallest). Without a 10k size, the size nearest to 10k stands in.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"
RATE_LIMIT = "100000000/min"
PHASE_TIME_LIMIT_S = 600.0
WARMUP_TIME_LIMIT_S = 900.0
SERVER_START_S = 180.0
# the floor probe embeds this many untimed texts before a block's tight (back-to-back) timed ones
BLOCK_WARM_UP = 3
SLOW_WARM_REQUEST_S = 2.0  # a warm-up round with no request slower than this means both workers are ready

Log = Callable[[str], None]
T = TypeVar("T")


# --- prompts -------------------------------------------------------------------------------------

_LABEL_TEMPLATES = (
    "my {a} {b} stopped working after the update this morning",
    "how can i change the {b} settings of {a} on my account",
    "is there a way to {a} the {b} without losing anything",
    "{a} {b} keeps failing with an error, what should i do",
    "need help setting up {a} {b} for a new colleague",
    "where do i see the status of my {a} {b} request",
    "can you explain how {b} works together with {a}",
    "why is {a} {b} so slow today",
    "i want to cancel {a} {b}, how does that work",
    "what does the {b} {a} option actually do",
)
_GENERIC_TEMPLATES = (
    "how do i update the billing details on my account",
    "the app shows an error when i try to sign in",
    "can someone check why my request is still pending",
    "where can i download last month's report",
    "i need to add a second user to my plan",
)
_SUFFIXES = ("", " please", " asap", " on my laptop", " since yesterday", " for order {n}", " (ticket {n})")


def bench_prompts(labels: Sequence[dict[str, Any]], count: int, *, seed: int) -> list[str]:
    """``count`` distinct support-style prompts: nine in ten about a random label of the release (its
    two name words in a template), one in ten generic; no two alike and none equal to a label example."""
    rng = random.Random(seed)
    examples = {e for label in labels for e in label.get("examples", [])}
    words = [label["name"].lower().split()[:2] for label in labels if len(label["name"].split()) >= 2]
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < count:
        suffix = rng.choice(_SUFFIXES).format(n=rng.randrange(1000, 99999))
        if words and rng.random() < 0.9:
            a, b = rng.choice(words)
            text = rng.choice(_LABEL_TEMPLATES).format(a=a, b=b) + suffix
        else:
            text = rng.choice(_GENERIC_TEMPLATES) + suffix + f" #{rng.randrange(10**6)}"
        if text not in seen and text not in examples:
            seen.add(text)
            out.append(text)
    return out


# --- the synthetic release (child process) --------------------------------------------------------


def bench_pack(generated: Any, *, slug: str) -> dict[str, Any]:
    """A knowledge pack of a generated graph (as ``synthetic_pack``) with a governed ``customer`` role."""
    from ontology.pack_graph import edge_to_pack, node_to_pack

    return {
        "format": "arg-pack/1",
        "project": {"slug": slug, "name": f"Latency benchmark {slug}", "description": "bench_latency"},
        "clusters": [
            {"key": key, "name": name, "description": "synthetic cluster"} for key, name in generated.clusters
        ],
        "labels": [dict(label) for label in generated.labels],
        "incompatibilities": [],
        "typologies": [
            {
                "key": "default",
                "name": "Default",
                "is_default": True,
                "complexity_budget": 3,
                "max_depth": 3,
                "max_hops": 4,
                "beam_width": 3,
                "fast_path_eligible": True,
                "preferred_node_types": ["FAQ", "InfoStable", "Info"],
            }
        ],
        "policies": [
            {
                "key": "customer",
                "name": "Customer",
                "description": "Signed-in customers of the synthetic product.",
                "allowed_labels": [],
                "forbidden_labels": [],
                "allowed_node_types": [],
                "forbidden_node_types": [],
                "max_hops": 6,
                "blocked_terms": ["botnet", "credential stuffing", "phishing kit"],
                "blocked_patterns": [r"\b\d{4}[ -]?\d{4}[ -]?\d{4}[ -]?\d{1,7}\b"],
                "sensitive_topics": [
                    {"topic": "legal-advice", "terms": ["lawsuit", "attorney"], "action": "REFOCUS"}
                ],
                "scope_statement": "Answers customers' questions about the synthetic product.",
                "refusal_template": "Sorry, I can't help with that.",
                "refocus_template": "I can only help with the synthetic product.",
                "memory_scopes": [],
            }
        ],
        "roles": [
            {"key": "customer", "name": "Customer", "policy": "customer", "default_typology": "default"}
        ],
        "nodes": [node_to_pack(node) for node in generated.graph.nodes],
        "edges": [edge_to_pack(edge) for edge in generated.graph.edges],
        "aliases": [],
    }


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def synthetic_vectors(
    generated: Any, embedder: Any, *, seed: int
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Node vectors and Info sentence vectors anchored on real label vectors (see the module doc)."""
    from inference.steps.info import sentences

    rng = np.random.default_rng(seed)
    labels = generated.labels
    anchors = embedder.embed([label["examples"][0] for label in labels])  # real vectors (cached for publish)
    row = {label["id"]: i for i, label in enumerate(labels)}
    nodes = generated.graph.nodes
    primary = np.array([row[node.labels[0]] for node in nodes], dtype=np.int64)
    dim = anchors.shape[1]
    node_vectors = _unit(anchors[primary] + rng.standard_normal((len(nodes), dim)) * (0.6 / dim**0.5))
    table: dict[str, np.ndarray] = {}
    texts = [(i, text) for i, node in enumerate(nodes) for text in sentences(node.chunk)]
    noise = rng.standard_normal((len(texts), dim)) * (0.3 / dim**0.5)
    vectors = _unit(node_vectors[[i for i, _ in texts]] + noise)
    for (_, text), vector in zip(texts, vectors, strict=True):
        table.setdefault(text, vector)
    return node_vectors, table


class TableEmbedder:
    """The platform embedder, except for texts of ``table``, whose vectors it returns as they are."""

    def __init__(self, base: Any, table: dict[str, np.ndarray]) -> None:
        self.base = base
        self.table = table
        self.dim = base.dim
        self.name = f"{base.name} + {len(table)} precomputed"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        rest = [i for i, text in enumerate(texts) if text not in self.table]
        for i, text in enumerate(texts):
            if text in self.table:
                out[i] = self.table[text]
        if rest:
            out[rest] = self.base.embed([texts[i] for i in rest])
        return out

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    def info(self) -> Any:
        return self.base.info()


def prepare(*, nodes: int, seed: int, slug: str, prompts: int, floor: int, log: Log) -> dict[str, Any]:
    """Child process: generate, import, publish, token, prompts and the embed-only floor (JSON-ready)."""
    from arg_platform.embedder import embedder_override, get_embedder
    from bench.synthetic import generate_graph
    from ontology.releases import PublishOptions, release_publish
    from projects.services import api_token_create
    from taxonomy.models import Role
    from taxonomy.packs import pack_import
    from taxonomy.packs.reader import PackDocument

    t = time.perf_counter()
    generated = generate_graph(nodes=nodes, seed=seed)
    pack = bench_pack(generated, slug=slug)
    generate_s = time.perf_counter() - t
    log(
        f"{nodes:,} nodes: generated {len(generated.graph.edges):,} edges, {len(generated.labels):,} labels "
        f"in {generate_s:.1f} s; importing"
    )
    t = time.perf_counter()
    project = pack_import(PackDocument(data=pack, source=f"synthetic-{nodes}")).project
    import_s = time.perf_counter() - t
    del pack
    log(f"{nodes:,} nodes: imported in {import_s:.1f} s; publishing")
    t = time.perf_counter()
    embedder = get_embedder()
    node_vectors, table = synthetic_vectors(generated, embedder, seed=seed)
    with embedder_override(TableEmbedder(embedder, table)):
        release = release_publish(
            project=project,
            actor=None,
            options=PublishOptions(node_embeddings=node_vectors, notes="bench_latency"),
        )
    publish_s = time.perf_counter() - t
    log(f"{nodes:,} nodes: published v{release.version} in {publish_s:.1f} s; measuring the embed floor")
    _, key = api_token_create(
        project=project, name="bench-latency", role=Role.objects.get(project=project, key="customer")
    )
    texts = bench_prompts(generated.labels, prompts + 2 * floor, seed=seed + nodes)
    embedder.use_threads(1)  # like a web worker (arg_platform.gunicorn_conf)
    floor_ms, floor_cpu_ms = [], []
    for text in texts[prompts : prompts + floor]:
        started, cpu = time.perf_counter(), time.thread_time()
        embedder.embed_one(text)
        floor_ms.append((time.perf_counter() - started) * 1000)
        floor_cpu_ms.append((time.thread_time() - cpu) * 1000)
    return {
        "slug": slug,
        "token": key,
        "nodes": nodes,
        "edges": len(generated.graph.edges),
        "labels": len(generated.labels),
        "clusters": len(generated.clusters),
        "generate_s": generate_s,
        "import_s": import_s,
        "publish_s": publish_s,
        "release_timings": release.timings,
        "release_bytes": release.counts.get("bytes"),
        "prompts": texts[:prompts],
        "prep_floor_ms": floor_ms,
        "prep_floor_cpu_ms": floor_cpu_ms,
        "floor_texts": texts[prompts : prompts + floor],  # the probe's tight floor
        "paced_floor_texts": texts[prompts + floor :],  # … and its paced floor (never embedded here)
    }


# --- the server ----------------------------------------------------------------------------------


def bench_environment(data_dir: Path) -> dict[str, str]:
    """The children's environment: the caller's, minus every platform setting, plus the bench's own."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "DATABASE_URL", "ARG_", "CELERY_", "PROMETHEUS_"))
    }
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "arg_platform.settings",
            "ARG_DATA_DIR": str(data_dir),
            "ARG_ENV": "embedded",
            "ARG_RATE_LIMIT_INFER": RATE_LIMIT,
            "ARG_RATE_LIMIT_API": RATE_LIMIT,
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env.setdefault("MKL_NUM_THREADS", "1")
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    """A gunicorn started as ``run_embedded`` starts it, in its own process group."""

    proc: subprocess.Popen[bytes]
    port: int
    log_path: Path

    def log_tail(self, lines: int = 30) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def cpu_s(self) -> float:
        """CPU time (user + system) used so far by the gunicorn master and its workers."""
        tick = os.sysconf("SC_CLK_TCK")
        pids = [self.proc.pid]
        try:
            pids += [
                int(p)
                for p in Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text().split()
            ]
        except OSError:
            return float("nan")
        total = 0
        for pid in pids:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += int(fields[11]) + int(fields[12])  # utime, stime
        return total / tick

    def stop(self, grace_s: float = 30.0) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            except ProcessLookupError:
                pass


def start_server(env: dict[str, str], data_dir: Path, *, workers: int) -> Server:
    from arg_platform.supervisor import embedded_children

    port = free_port()
    web = next(
        spec for spec in embedded_children(host=HOST, port=port, web_workers=workers) if spec.name == "web"
    )
    log_path = data_dir / "gunicorn.log"
    with log_path.open("wb") as handle:
        proc = subprocess.Popen(
            web.argv, cwd=ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True
        )
    server = Server(proc, port, log_path)
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {proc.returncode}:\n{server.log_tail()}")
        try:
            status, _ = http_get(port, "/healthz", {})
            if status in (200, 503):
                return server
        except OSError:
            pass
        time.sleep(0.3)
    server.stop()
    raise RuntimeError(f"gunicorn did not answer within {SERVER_START_S:.0f} s:\n{server.log_tail()}")


def http_get(port: int, path: str, headers: dict[str, str]) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(HOST, port, timeout=30)
    try:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


# --- load ----------------------------------------------------------------------------------------


@dataclass
class Phase:
    """What one measured phase saw: per-request client latency, status and response body."""

    name: str
    concurrency: int
    latencies_ms: list[float] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)
    wall_s: float = 0.0
    server_cpu_s: float = float("nan")
    timed_out: bool = False

    @property
    def ok(self) -> int:
        return sum(1 for s in self.statuses if s == 200)

    def percentile(self, q: float) -> float:
        return float(np.percentile(self.latencies_ms, q)) if self.latencies_ms else float("nan")

    @property
    def rps(self) -> float:
        return len(self.latencies_ms) / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def server_cpu_ms(self) -> float:
        """Server CPU time per request: robust to other processes' load, unlike wall times."""
        return 1000 * self.server_cpu_s / len(self.latencies_ms) if self.latencies_ms else float("nan")

    def server_ms(self, step: str) -> list[float]:
        """A pipeline step's server-side time (``timings_ms`` of each 200 response)."""
        out = []
        for status, body in zip(self.statuses, self.bodies, strict=True):
            if status == 200 and body:
                value = json.loads(body).get("timings_ms", {}).get(step)
                if value is not None:
                    out.append(float(value))
        return out


def drive(
    server: Server,
    requests: Sequence[tuple[str, str, bytes | None]],
    *,
    headers: dict[str, str],
    concurrency: int,
    name: str,
    time_limit_s: float = PHASE_TIME_LIMIT_S,
) -> Phase:
    """Send ``requests`` (method, path, body) over ``concurrency`` keep-alive connections, each request
    once, and time each one from sending to the last byte of the response."""
    port = server.port
    phase = Phase(name, concurrency)
    lock = threading.Lock()
    cursor = iter(range(len(requests)))
    results: list[tuple[float, int, bytes] | None] = [None] * len(requests)
    deadline = time.monotonic() + time_limit_s

    def client() -> None:
        conn = http.client.HTTPConnection(HOST, port, timeout=time_limit_s)
        try:
            while time.monotonic() < deadline:
                with lock:
                    i = next(cursor, None)
                if i is None:
                    return
                method, path, body = requests[i]
                for attempt in (1, 2):
                    started = time.perf_counter()
                    try:
                        conn.request(method, path, body=body, headers=headers)
                        response = conn.getresponse()
                        data = response.read()
                    except (ConnectionError, http.client.HTTPException):
                        conn.close()  # the server closed an idle keep-alive connection: reconnect once
                        conn = http.client.HTTPConnection(HOST, port, timeout=time_limit_s)
                        if attempt == 2:
                            raise
                        continue
                    results[i] = ((time.perf_counter() - started) * 1000, response.status, data)
                    break
        finally:
            conn.close()

    threads = [threading.Thread(target=client, daemon=True) for _ in range(concurrency)]
    cpu_before = server.cpu_s()
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()) + 30)
    phase.wall_s = time.perf_counter() - started
    phase.server_cpu_s = server.cpu_s() - cpu_before
    for item in results:
        if item is None:
            phase.timed_out = True
            continue
        phase.latencies_ms.append(item[0])
        phase.statuses.append(item[1])
        phase.bodies.append(item[2])
    return phase


class FloorProbe:
    """A child process that only embeds (``python -m bench.latency floor``): the embed-only
    floor measured *between* blocks of requests. It loads the platform embedder with one thread (what
    a web worker runs), embeds a few texts to warm up, then answers each line of JSON on its stdin
    (``{"texts": [...], "period_ms": p}``) with one line of ``[wall ms, thread CPU ms]`` per text,
    ``embed_one`` one after the other: back to back after ``BLOCK_WARM_UP`` untimed embeddings when
    ``p`` is 0 (the *tight* floor), otherwise after one untimed embedding, each started ``p`` ms after
    the previous one (the *paced* floor: the arrival pattern of the requests it is compared with)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.latency", "floor"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        while self._line() != "ready":  # anything a library prints while loading comes first
            pass

    def _line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the floor probe exited ({self.proc.poll()})")
        return line.strip()

    def embed(self, texts: Sequence[str], *, period_ms: float = 0.0) -> list[tuple[float, float]]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"texts": list(texts), "period_ms": period_ms}) + "\n")
        self.proc.stdin.flush()
        return [(float(w), float(c)) for w, c in json.loads(self._line())]

    def stop(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()  # end of input: the child returns
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@dataclass
class Floors:
    """The embed-only floor samples (``[wall ms, thread CPU ms]`` each) of the latency phase, and the
    request cycle each paced block was embedded at."""

    tight: list[tuple[float, float]] = field(default_factory=list)
    paced: list[tuple[float, float]] = field(default_factory=list)
    periods_ms: list[float] = field(default_factory=list)


def _share(items: Sequence[T], k: int, blocks: int) -> Sequence[T]:
    """Block ``k`` of ``blocks`` near-equal consecutive blocks of ``items``."""
    return items[k * len(items) // blocks : (k + 1) * len(items) // blocks]


def interleaved(
    server: Server,
    requests: Sequence[tuple[str, str, bytes | None]],
    probe: FloorProbe,
    floor_texts: Sequence[str],
    paced_texts: Sequence[str],
    *,
    headers: dict[str, str],
    concurrency: int,
    blocks: int = 10,
) -> tuple[Phase, Floors]:
    """The latency phase in ``blocks`` blocks of requests, each followed (the server idle meanwhile) by
    its share of the floor texts embedded by ``probe`` back to back (tight) and of the paced texts
    embedded one request cycle apart — the block's wall time per request of one client — in turns,
    so that neither floor always comes first: one merged phase and the floor samples."""
    blocks = max(1, min(blocks, len(requests), len(floor_texts), len(paced_texts)))
    merged = Phase("latency", concurrency)
    merged.server_cpu_s = 0.0
    floors = Floors()
    for k in range(blocks):
        phase = drive(
            server, _share(requests, k, blocks), headers=headers, concurrency=concurrency, name="latency"
        )
        merged.latencies_ms += phase.latencies_ms
        merged.statuses += phase.statuses
        merged.bodies += phase.bodies
        merged.wall_s += phase.wall_s
        merged.server_cpu_s += phase.server_cpu_s
        merged.timed_out = merged.timed_out or phase.timed_out
        period_ms = 1000 * phase.wall_s * concurrency / max(1, len(phase.latencies_ms))
        floors.periods_ms.append(period_ms)
        turns = [(floor_texts, 0.0, floors.tight), (paced_texts, period_ms, floors.paced)]
        for texts, period, samples in turns if k % 2 == 0 else turns[::-1]:
            samples.extend(probe.embed(_share(texts, k, blocks), period_ms=period))
    return merged, floors


def infer_requests(prompts: Sequence[str]) -> list[tuple[str, str, bytes | None]]:
    return [("POST", "/api/v1/infer", json.dumps({"prompt": p}).encode()) for p in prompts]


def warm_up(
    server: Server, headers: dict[str, str], prompts: list[str], *, concurrency: int, log: Log
) -> int:
    """Rounds of ``concurrency`` concurrent requests until one round has no slow request (every worker
    has loaded the release and its runtimes); returns the number of requests sent."""
    sent, rounds = 0, 0
    deadline = time.monotonic() + WARMUP_TIME_LIMIT_S
    while True:
        batch = prompts[sent : sent + 2 * concurrency]
        if len(batch) < 2 * concurrency:
            raise RuntimeError("ran out of warm-up prompts")
        phase = drive(server, infer_requests(batch), headers=headers, concurrency=concurrency, name="warm-up")
        sent += len(batch)
        rounds += 1
        bad = [s for s in phase.statuses if s != 200]
        if bad or phase.timed_out:
            detail = next((b for s, b in zip(phase.statuses, phase.bodies, strict=True) if s != 200), b"")
            raise RuntimeError(
                f"warm-up request failed ({bad[:3]}): {detail[:500]!r}\nserver log:\n{server.log_tail(60)}"
            )
        slowest = max(phase.latencies_ms) / 1000
        log(f"   warm-up round {rounds}: {len(batch)} requests, slowest {slowest:.2f} s")
        if rounds >= 2 and slowest < SLOW_WARM_REQUEST_S:
            return sent
        if time.monotonic() > deadline:
            raise RuntimeError(f"the server was not warm after {WARMUP_TIME_LIMIT_S:.0f} s")


def log_rows(db_path: Path, slug: str) -> int:
    with sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=30) as conn:
        row = conn.execute(
            "SELECT COUNT(*) FROM inference_inferencelog l JOIN projects_project p ON p.id = l.project_id "
            "WHERE p.slug = ?",
            (slug,),
        ).fetchone()
    return int(row[0])


# --- the run ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BenchConfig:
    sizes: tuple[int, ...] = (1000, 10000, 100000)
    requests: int = 1000
    concurrency: int = 1
    paired_concurrency: int = 2
    throughput_concurrency: int = 8
    workers: int = 2
    seed: int = 7
    floor: int = 200
    keep: bool = False


def _loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _child(env: dict[str, str], args: list[str], log: Log) -> dict[str, Any]:
    """Run ``python -m bench.latency …`` and relay its progress lines; its last stdout line
    is its JSON result."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.latency", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    errors: list[str] = []

    def relay() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.startswith("[bench] "):
                log("   " + line[8:].rstrip())
            else:
                errors.append(line.rstrip())

    thread = threading.Thread(target=relay, daemon=True)
    thread.start()
    assert proc.stdout is not None
    out = proc.stdout.read()  # not communicate(): it would read stderr too, racing the relay
    proc.wait()
    thread.join(5)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:1])} failed ({proc.returncode}):\n" + "\n".join(errors[-40:]))
    return json.loads(out.strip().splitlines()[-1])


def measure_size(
    server: Server,
    probe: FloorProbe,
    prepared: dict[str, Any],
    config: BenchConfig,
    db_path: Path,
    log: Log,
) -> dict[str, Any]:
    n = prepared["nodes"]
    headers = {"Authorization": f"Bearer {prepared['token']}", "Content-Type": "application/json"}
    prompts = list(prepared["prompts"])
    warm_concurrency = config.workers * 4
    warm = prompts[: 20 * warm_concurrency]
    latency_prompts = prompts[len(warm) : len(warm) + config.requests]
    paired_prompts = prompts[len(warm) + config.requests : len(warm) + 2 * config.requests]
    throughput_prompts = prompts[len(warm) + 2 * config.requests :]
    log(f"{n:,} nodes: warming up both workers")
    t = time.perf_counter()
    warm_sent = warm_up(server, headers, warm, concurrency=warm_concurrency, log=log)
    warm_s = time.perf_counter() - t
    load = {"before": _loadavg()}
    log(f"{n:,} nodes: GET /api/v1/whoami/ × {min(config.requests, 300)} (HTTP + DRF + auth floor)")
    whoami = drive(
        server,
        [("GET", "/api/v1/whoami/", None)] * min(config.requests, 300),
        headers=headers,
        concurrency=config.concurrency,
        name="whoami",
    )
    log(
        f"{n:,} nodes: POST /api/v1/infer × {len(latency_prompts)} at concurrency {config.concurrency}, "
        f"in blocks with {len(prepared['floor_texts'])} tight and {len(prepared['paced_floor_texts'])} "
        "paced embed-only floor prompts between them"
    )
    latency, floors = interleaved(
        server,
        infer_requests(latency_prompts),
        probe,
        prepared["floor_texts"],
        prepared["paced_floor_texts"],
        headers=headers,
        concurrency=config.concurrency,
    )
    log(f"{n:,} nodes: POST /api/v1/infer × {len(paired_prompts)} at concurrency {config.paired_concurrency}")
    paired = drive(
        server,
        infer_requests(paired_prompts),
        headers=headers,
        concurrency=config.paired_concurrency,
        name="paired",
    )
    log(
        f"{n:,} nodes: POST /api/v1/infer × {len(throughput_prompts)} "
        f"at concurrency {config.throughput_concurrency}"
    )
    throughput = drive(
        server,
        infer_requests(throughput_prompts),
        headers=headers,
        concurrency=config.throughput_concurrency,
        name="throughput",
    )
    load["after"] = _loadavg()
    sent = warm_sent + len(latency.statuses) + len(paired.statuses) + len(throughput.statuses)
    rows = log_rows(db_path, prepared["slug"])
    failures = [
        (phase.name, status, body[:300].decode(errors="replace"))
        for phase in (whoami, latency, paired, throughput)
        for status, body in zip(phase.statuses, phase.bodies, strict=True)
        if status != 200
    ]

    def step_p50(phase: Phase, step: str) -> float:
        values = phase.server_ms(step)
        return float(np.median(values)) if values else float("nan")

    outcomes: dict[str, int] = {}
    for body in latency.bodies + paired.bodies + throughput.bodies:
        if body:
            kind = json.loads(body).get("outcome", {}).get("kind", "?")
            outcomes[kind] = outcomes.get(kind, 0) + 1
    return {
        "nodes": n,
        "edges": prepared["edges"],
        "labels": prepared["labels"],
        "import_s": round(prepared["import_s"], 2),
        "publish_s": round(prepared["publish_s"], 2),
        "release_timings": prepared["release_timings"],
        "release_mb": round((prepared["release_bytes"] or 0) / 2**20, 1),
        "warm_up_s": round(warm_s, 2),
        "warm_up_requests": warm_sent,
        "load_average": load,
        # both interleaved with the latency phase (``interleaved``); the paced one is the goal's floor
        "embed_floor_paced_ms": {
            **_floor_json(floors.paced),
            "period_p50_ms": float(np.median(floors.periods_ms)),
        },
        "embed_floor_tight_ms": _floor_json(floors.tight),
        "embed_floor_prepare_ms": {  # measured by the prepare child right after publication
            "p50": float(np.median(prepared["prep_floor_ms"])),
            "p95": float(np.percentile(prepared["prep_floor_ms"], 95)),
            "cpu_p50": float(np.median(prepared["prep_floor_cpu_ms"])),
        },
        "whoami_ms": {
            "p50": whoami.percentile(50),
            "p95": whoami.percentile(95),
            "rps": whoami.rps,
            "server_cpu_ms": whoami.server_cpu_ms,
        },
        "latency": _phase_json(latency, step_p50),
        "paired": _phase_json(paired, step_p50),
        "throughput": _phase_json(throughput, step_p50),
        "outcomes": outcomes,
        "requests_sent": sent,
        "log_rows": rows,
        "failures": failures[:10],
        "timed_out": latency.timed_out or paired.timed_out or throughput.timed_out or whoami.timed_out,
    }


def _floor_json(samples: list[tuple[float, float]]) -> dict[str, Any]:
    walls = [wall for wall, _ in samples]
    return {
        "p50": float(np.median(walls)),
        "p95": float(np.percentile(walls, 95)),
        "cpu_p50": float(np.median([cpu for _, cpu in samples])),
        "samples": len(walls),
    }


def _phase_json(phase: Phase, step_p50: Callable[[Phase, str], float]) -> dict[str, Any]:
    steps = sorted({k for body in phase.bodies[:50] if body for k in json.loads(body).get("timings_ms", {})})
    return {
        "server_steps_p50_ms": {step: round(step_p50(phase, step), 3) for step in steps},
        "concurrency": phase.concurrency,
        "requests": len(phase.latencies_ms),
        "ok": phase.ok,
        "p50_ms": phase.percentile(50),
        "p95_ms": phase.percentile(95),
        "p99_ms": phase.percentile(99),
        "rps": phase.rps,
        "server_cpu_ms_per_request": phase.server_cpu_ms,
        "server_total_p50_ms": step_p50(phase, "total"),
        "server_embed_p50_ms": step_p50(phase, "embed"),
    }


def run(config: BenchConfig, *, log: Log) -> dict[str, Any]:
    """The whole benchmark (see the module docstring); returns the results as a JSON-ready dict."""
    data_dir = Path(tempfile.mkdtemp(prefix="arg-bench-latency-"))
    env = bench_environment(data_dir)
    results: dict[str, Any] = {
        "config": {k: v for k, v in config.__dict__.items()},
        "machine": {"cores": os.cpu_count(), "load_average_start": _loadavg()},
        "sizes": [],
    }
    server: Server | None = None
    probe: FloorProbe | None = None
    try:
        log(f"data folder {data_dir}: migrating")
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput"],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
        )
        log(f"starting gunicorn ({config.workers} workers) on {HOST}")
        server = start_server(env, data_dir, workers=config.workers)
        log(f"gunicorn answers on port {server.port}")
        probe = FloorProbe(env)
        log("embed-only floor probe ready")
        for n in config.sizes:
            count = 20 * config.workers * 4 + 3 * config.requests
            prepared = _child(
                env,
                [
                    "prepare",
                    "--nodes",
                    str(n),
                    "--seed",
                    str(config.seed),
                    "--slug",
                    f"bench-{n}",
                    "--prompts",
                    str(count),
                    "--floor",
                    str(config.floor),
                ],
                log,
            )
            row = measure_size(server, probe, prepared, config, data_dir / "arg.sqlite3", log)
            results["sizes"].append(row)
            log(
                f"{n:,} nodes: P50 {row['latency']['p50_ms']:.1f} ms, P95 {row['latency']['p95_ms']:.1f} ms, "
                f"{row['throughput']['rps']:.0f} req/s; embed floor P50 {row['embed_floor_paced_ms']['p50']:.1f} ms "
                f"paced, {row['embed_floor_tight_ms']['p50']:.1f} ms tight"
            )
            if server.proc.poll() is not None:
                raise RuntimeError(f"gunicorn died:\n{server.log_tail()}")
    finally:
        if probe is not None:
            probe.stop()
        if server is not None:
            log("stopping gunicorn")
            server.stop()
        results["machine"]["load_average_end"] = _loadavg()
        if config.keep:
            log(f"kept {data_dir}")
        else:
            shutil.rmtree(data_dir, ignore_errors=True)
    return results


def stand_in(sizes: Sequence[int], target: int = 10_000) -> int:
    return min(sizes, key=lambda n: (abs(np.log(n / target)), -n))


def summary_line(results: dict[str, Any]) -> str:
    rows = {row["nodes"]: row for row in results["sizes"]}
    mid = rows[stand_in(list(rows))]
    small, large = rows[min(rows)], rows[max(rows)]
    growth = large["latency"]["p95_ms"] / small["latency"]["p95_ms"]
    return (
        f"SUMMARY p50_ms_10k={mid['latency']['p50_ms']:.1f} p95_ms_10k={mid['latency']['p95_ms']:.1f} "
        f"embed_p50_ms={mid['embed_floor_paced_ms']['p50']:.1f} rps={mid['throughput']['rps']:.0f} "
        f"growth_p95={growth:.2f}"
    )


def table(results: dict[str, Any]) -> list[str]:
    """The printed table: one line per size."""
    config = results["config"]
    c, big_c = config["concurrency"], config["throughput_concurrency"]
    pair_c = config.get("paired_concurrency", 2)
    header = (
        f"{'nodes':>8} {'edges':>8} {'labels':>6} {'publish s':>9} | "
        f"{'P50 ms':>7} {'P95 ms':>7} {'P99 ms':>7} {'req/s':>6} @c={c} | "
        f"{'P50 ms':>7} {'P95 ms':>7} @c={pair_c} | "
        f"{'P50 ms':>7} {'P95 ms':>7} {'req/s':>6} @c={big_c} | "
        f"{'server P50':>10} {'embed P50':>9} {'embed floor':>11} {'tight floor':>11} {'prep floor':>10} "
        f"{'whoami P50':>10} {'P50/floor':>9} {'P50/tight':>9} | {'CPU ms/req':>10} {'floor CPU':>9} | "
        f"{'logs':>11}"
    )
    lines = [header]
    for row in results["sizes"]:
        lat, pair, tp = row["latency"], row["paired"], row["throughput"]
        floor, tight = row["embed_floor_paced_ms"]["p50"], row["embed_floor_tight_ms"]["p50"]
        logs = f"{row['log_rows']}/{row['requests_sent']}"
        lines.append(
            f"{row['nodes']:>8,} {row['edges']:>8,} {row['labels']:>6,} {row['publish_s']:>9.1f} | "
            f"{lat['p50_ms']:>7.1f} {lat['p95_ms']:>7.1f} {lat['p99_ms']:>7.1f} {lat['rps']:>6.0f} "
            f"{'':>{4 + len(str(c))}} | "
            f"{pair['p50_ms']:>7.1f} {pair['p95_ms']:>7.1f} {'':>{4 + len(str(pair_c))}} | "
            f"{tp['p50_ms']:>7.1f} {tp['p95_ms']:>7.1f} {tp['rps']:>6.0f} {'':>{4 + len(str(big_c))}} | "
            f"{lat['server_total_p50_ms']:>10.1f} {lat['server_embed_p50_ms']:>9.1f} {floor:>11.1f} "
            f"{tight:>11.1f} {row['embed_floor_prepare_ms']['p50']:>10.1f} {row['whoami_ms']['p50']:>10.1f} "
            f"{lat['p50_ms'] / floor:>9.2f} {lat['p50_ms'] / tight:>9.2f} | "
            f"{tp['server_cpu_ms_per_request']:>10.1f} {row['embed_floor_paced_ms']['cpu_p50']:>9.1f} | "
            f"{logs:>11}"
        )
    return lines


# --- child entry point -----------------------------------------------------------------------------


def _child_main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.latency")
    sub = parser.add_subparsers(dest="step", required=True)
    step = sub.add_parser("prepare")
    step.add_argument("--nodes", type=int, required=True)
    step.add_argument("--seed", type=int, required=True)
    step.add_argument("--slug", required=True)
    step.add_argument("--prompts", type=int, required=True)
    step.add_argument("--floor", type=int, required=True)
    sub.add_parser("floor")
    args = parser.parse_args(argv)
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arg_platform.settings")
    django.setup()

    def log(message: str) -> None:
        print(f"[bench] {message}", file=sys.stderr, flush=True)

    if args.step == "floor":
        _floor_main()
        return
    result = prepare(
        nodes=args.nodes, seed=args.seed, slug=args.slug, prompts=args.prompts, floor=args.floor, log=log
    )
    print(json.dumps(result), flush=True)


def _floor_main() -> None:
    """The ``FloorProbe`` child: embed each line's texts one by one and answer with their timings."""
    from arg_platform.embedder import get_embedder

    embedder = get_embedder()
    embedder.use_threads(1)  # like a web worker (arg_platform.gunicorn_conf)
    for i, text in enumerate(_GENERIC_TEMPLATES * 4):
        embedder.embed_one(f"{text} (warm-up {i})")
    print("ready", flush=True)
    for n, line in enumerate(sys.stdin):
        block = json.loads(line)
        period_s = float(block["period_ms"]) / 1000
        warm_up = _GENERIC_TEMPLATES[: BLOCK_WARM_UP if period_s <= 0 else 1]
        for i, text in enumerate(warm_up):  # after the server's turn: untimed
            embedder.embed_one(f"{text} (block {n}, {i})")
        timings = []
        next_start = time.perf_counter() + period_s
        for text in block["texts"]:
            if period_s > 0:
                time.sleep(max(0.0, next_start - time.perf_counter()))
            started, cpu = time.perf_counter(), time.thread_time()
            embedder.embed_one(text)
            timings.append(((time.perf_counter() - started) * 1000, (time.thread_time() - cpu) * 1000))
            next_start = started + period_s
        print(json.dumps(timings), flush=True)


if __name__ == "__main__":
    _child_main(sys.argv[1:])
