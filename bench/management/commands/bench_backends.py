"""``manage.py bench_backends``: the two graph store backends side by side, in one run (issue 22).

Every measure runs once per backend — ``sql`` (``SqlGraphStore``, Django tables) and ``neo4j``
(``Neo4jGraphStore``, the official driver) — and each table has one column per backend. The ``neo4j``
column is measured when ``NEO4J_URI`` is set (``scripts/with-neo4j.sh`` sets it); otherwise only the
``sql`` column is printed, and a line says so. For each measurement the platform's own graph store
(``ontology.store.get_graph_store()``) and ``settings.GRAPH_BACKEND`` are switched to the backend under
test, so the importer, publication (its export, draft validation and analytics backend) and the offline
loop's apply step run exactly as they do in a deployment of that backend. Each backend gets a fresh
throwaway project per measured graph (slug ``bench-<backend>-<measure>-<run>``: the demo pack, then each
synthetic size), deleted afterwards from both stores (the graph through ``replace_graph(pk,
GraphData())``, the Django rows by deleting the project).

Tables and their columns (seconds are wall clock, ``time.perf_counter``):

* **demo pack** (``packs/demo/pack.yaml``): ``pack_import s`` — the whole import into a new project
  (taxonomy, profiles, graph write, audit) in its unit of work; ``release_publish s`` — publishing it
  (draft validation, export, embedding with the real model, structural signals with the backend's
  analytics — networkx for ``sql``, GDS for ``neo4j`` — hooks, bundle). An untimed import + publish on
  ``sql`` runs first, so the embedding model is loaded and its text cache warm for both columns.
* **offline loop apply**: ``proposal_apply s`` — ``review.loop.application.proposal_apply`` of one approved
  MERGE proposal (``review.loop.generators.merge.merge_changeset`` of two TLS duplicates) on the demo project
  the previous measure just imported and published (v1): the changeset, the new publication (v2) and
  the bookkeeping in one unit of work; checked afterwards (v2, both resolve to the merged node AB).
* **replace_graph** (synthetic graphs, ``bench.synthetic.generate_graph``, ≈ 5 out-edges per node):
  ``nodes``, ``edges``, ``aliases`` (alias rows: ``--alias-share`` of the nodes, in redirection chains
  of length 1–3 whose sources are DEPRECATED), then per backend the seconds of the import's graph write
  — ``replace_graph`` of the whole graph inside ``graph_atomic()`` — into a project whose taxonomy (the
  generated clusters and labels) was imported just before, untimed.
* **release_publish** of those graphs: per backend ``publish s`` (the whole ``release_publish``) and,
  from ``Release.timings``, ``draft s`` (validation of the draft + its export: the two graph reads)
  and ``signals s`` (the structural signals). Node, label and sentence texts are embedded by a hash
  embedder (seeded random unit vectors, 384 dimensions): embedding 100k synthetic texts with the real
  model takes tens of minutes and costs the same on both backends.
* **Louvain + Node Similarity**: ``compute_structural_signals`` on the same graph, networkx
  (``backend="networkx"``, the ``sql`` column) vs GDS (``backend="gds"``, the neo4j store as the
  Cypher runner, the ``neo4j`` column). ``louvain s`` / ``nodesim s`` are the stage timings the
  signals carry (for GDS: streaming the result into Python included); ``gds project s`` is building
  GDS's in-memory graph (a Cypher projection), ``total s`` the whole call (SimRank, modularity, degree,
  PageRank in Python for both); ``comms`` / ``modularity`` show that both found comparable partitions.
* **alias resolution**: ``store.resolve_alias(project_id, node_id)`` on the published graph, each call
  timed alone (after 20 untimed calls): ``--lookups`` calls on random chain heads (1–3 redirections to
  follow; every answer is checked) and as many on random nodes without an alias, median and P95 in µs.
* **memory**: after each block, the peak resident set size (``VmHWM`` of ``/proc/<pid>/status``) and the
  current one (``VmRSS``) of this Python process and of the Neo4j server's Java process (``--neo4j-pid``,
  or the ``org.arg.tools.neo4j.ThrowawayServer`` process serving ``NEO4J_URI``); both are high-water
  marks over the whole run, never reset.

A measurement that fails is shown as ``failed`` and its exception printed on a ``# FAILED`` line; the
measures that needed it are skipped for that backend and size. The last line is machine-readable:

    SUMMARY backends=sql,neo4j sql_import_s=… neo4j_import_s=… sql_publish_s=… … sql_replace_s_1k=…
    neo4j_replace_s_1k=… … sql_louvain_s_1k=… neo4j_louvain_s_1k=… … sql_alias_us_p50_1k=… …
    sql_apply_s=… neo4j_apply_s=… python_peak_rss_mb=… neo4j_peak_rss_mb=…

Run it on an empty data folder (``ARG_DATA_DIR=$(mktemp -d)``, ``migrate`` first), under
``scripts/with-neo4j.sh`` for the ``neo4j`` column. ``--measures`` picks a subset (``demo``, ``publish``,
``analytics``, ``aliases``; the synthetic graphs' ``replace_graph`` always runs), e.g. ``--nodes 100000
--measures aliases`` for the 100k write and lookups without the 100k publications; ``--demo-embedder
hash`` publishes the demo pack without the model (the tests); ``-v 2`` logs ``Release.timings``. Every
figure is also logged on stderr as soon as it is measured, so a run stopped midway still leaves them.
"""

from __future__ import annotations

import gc
import hashlib
import os
import platform
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from .bench_analytics import parse_sizes, size_key

REPO = Path(__file__).resolve().parents[3]
DEMO_PACK = REPO / "packs" / "demo" / "pack.yaml"
SURVIVOR, DUPLICATE = "N-deploy-tls-info", "N-deploy-tls-faq"
SERVER_CLASS = "org.arg.tools.neo4j.ThrowawayServer"
WARM_LOOKUPS = 20
FAILED = "failed"
# demo: pack import + publish + proposal_apply; the others: per synthetic size (after its replace_graph).
MEASURES = ("demo", "publish", "analytics", "aliases")


# --- memory ---------------------------------------------------------------------------------------


def status_mb(pid: int | str, key: str) -> float | None:
    """``key`` (VmHWM, VmRSS) of ``/proc/<pid>/status`` in MiB, or None when unreadable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024.0
    except (OSError, ValueError):
        return None
    return None


def _cmdline(pid: int | str) -> list[str]:
    try:
        return [
            a.decode(errors="replace") for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if a
        ]
    except OSError:
        return []


def find_neo4j_pid(uri: str) -> int | None:
    """The Java process of the throwaway Neo4j server that serves ``uri`` (its home's ``env`` file names
    the URI); the only such server when none names it; None when there is none."""
    found = subprocess.run(["pgrep", "-f", SERVER_CLASS], capture_output=True, text=True, check=False)
    servers: list[int] = []
    for text in found.stdout.split():
        args = _cmdline(text)
        if SERVER_CLASS not in args:
            continue
        servers.append(int(text))
        home = next((a.split("=", 1)[1] for a in args if a.startswith("--home-dir=")), None)
        try:
            env = Path(home, "env").read_text() if home else ""
        except OSError:
            env = ""
        if uri and f"NEO4J_URI={uri}\n" in env + "\n":
            return int(text)
    return servers[0] if len(servers) == 1 else None


def java_settings(pid: int | None) -> str:
    """The server JVM's max heap and JIT (the last ``-Xmx`` / ``-XX:TieredStopAtLevel`` on its command line)."""
    if pid is None:
        return "max heap ?, JIT ?"
    args = _cmdline(pid)
    heap = [a[4:] for a in args if a.startswith("-Xmx")]
    tiers = [a.split("=", 1)[1] for a in args if a.startswith("-XX:TieredStopAtLevel=")]
    jit = "C1 only (TieredStopAtLevel=1)" if tiers and tiers[-1] == "1" else "full (C1 + C2)"
    return f"max heap {heap[-1] if heap else '?'}, JIT {jit}"


# --- helpers --------------------------------------------------------------------------------------


class HashEmbedder:
    """Seeded random unit vectors from a hash of each text (``dim`` 384): publication of synthetic graphs
    without the real model, whose cost is the same on both backends and is not what is measured."""

    dim = 384
    name = "bench-hash-384"

    def embed(self, texts: Any) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")
            out[i] = np.random.default_rng(seed).standard_normal(self.dim)
        if len(texts):
            out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    def info(self) -> Any:
        from arg_platform.embedder import EmbedderInfo

        return EmbedderInfo(name=self.name, dim=self.dim, device="cpu", loaded=True, runtime="hash")


@dataclass
class AliasedGraph:
    """A synthetic graph with redirection chains: ``heads`` (chain head → where it resolves to)."""

    graph: Any
    taxonomy_pack: dict[str, Any]
    heads: dict[str, tuple[str, ...]]
    plain: list[str]
    rows: int


def aliased_graph(nodes: int, seed: int, share: float) -> AliasedGraph:
    """``generate_graph`` plus ``round(nodes * share)`` alias rows in chains s1 → … → sL → t (L = 1–3),
    sources DEPRECATED, the final target ACTIVE; and the pack of its taxonomy (no nodes)."""
    from arg_platform.vocabulary import NodeStatus, NodeType
    from bench.synthetic import generate_graph
    from ontology.store.port import AliasData, GraphData

    generated = generate_graph(nodes=nodes, seed=seed)
    graph = generated.graph
    rng = np.random.default_rng(seed + 1)
    wanted = max(1, round(nodes * share))
    candidates = [i for i, n in enumerate(graph.nodes) if n.type != NodeType.OUT_OF_SCOPE.value]
    order = rng.permutation(np.asarray(candidates)).tolist()
    aliases: list[AliasData] = []
    deprecated: set[int] = set()
    heads: dict[str, tuple[str, ...]] = {}
    used = 0
    while len(aliases) < wanted and used + 2 <= len(order):
        length = min(int(rng.integers(1, 4)), wanted - len(aliases), len(order) - used - 1)
        chain = order[used : used + length + 1]
        used += length + 1
        ids = [graph.nodes[i].node_id for i in chain]
        for a, b in zip(ids, ids[1:], strict=False):
            aliases.append(AliasData(a, (b,), "merged (bench_backends)"))
        deprecated.update(chain[:-1])
        heads[ids[0]] = (ids[-1],)
    in_chain = set(order[:used])
    node_rows = tuple(
        replace(n, status=NodeStatus.DEPRECATED.value, status_reason="merged (bench_backends)")
        if i in deprecated
        else n
        for i, n in enumerate(graph.nodes)
    )
    plain = [n.node_id for i, n in enumerate(graph.nodes) if i not in in_chain]
    taxonomy_pack = {
        "format": "arg-pack/1",
        "project": {"slug": "bench", "name": "bench_backends", "description": f"synthetic, seed {seed}"},
        "clusters": [
            {"key": key, "name": name, "description": "synthetic cluster"} for key, name in generated.clusters
        ],
        "labels": [dict(label) for label in generated.labels],
        "typologies": [
            {"key": "default", "name": "Default", "is_default": True, "preferred_node_types": ["Info", "FAQ"]}
        ],
        "nodes": [],
        "edges": [],
        "aliases": [],
    }
    return AliasedGraph(
        graph=GraphData(
            nodes=node_rows, edges=graph.edges, aliases=tuple(sorted(aliases, key=lambda a: a.source))
        ),
        taxonomy_pack=taxonomy_pack,
        heads=heads,
        plain=plain,
        rows=len(aliases),
    )


def delete_project_rows(project_id: int) -> None:
    """Delete a project and its rows; what the taxonomy PROTECTs first (roles, label trees, clusters)."""
    from django.db import transaction

    from arg_platform.models import AuditEvent
    from projects.models import ApiToken, Project
    from taxonomy.models import Cluster, Label, Role

    with transaction.atomic():
        AuditEvent.objects.filter(project_id=project_id).delete()  # PROTECTed: the bench's own project
        ApiToken.objects.filter(project_id=project_id).delete()
        Role.objects.filter(project_id=project_id).delete()
        Label.objects.filter(project_id=project_id).update(parent=None)
        Label.objects.filter(project_id=project_id).delete()
        Cluster.objects.filter(project_id=project_id).delete()
        Project.objects.filter(pk=project_id).delete()


def neo4j_delete_in_batches(store: Any, project_id: int) -> None:
    """The bench's own fallback cleanup: a project's Neo4j graph deleted 1,000 nodes per transaction."""
    with store.driver.session(database=store.database) as session:
        session.run("MATCH (a:NodeAlias {project_id: $p}) DELETE a", p=project_id).consume()
        session.run("MATCH (h:ProjectGraph {project_id: $p}) DELETE h", p=project_id).consume()
        while True:
            deleted = (
                session.run(
                    "MATCH (n:OntologyNode {project_id: $p}) WITH n LIMIT 1000 DETACH DELETE n", p=project_id
                )
                .consume()
                .counters.nodes_deleted
            )
            if not deleted:
                return


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    if not sorted_values:
        return float("nan")
    rank = max(1, int(np.ceil(q / 100.0 * len(sorted_values))))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


@dataclass
class Run:
    """What one run measured: cells keyed by (measure, backend[, size]) and the failures seen."""

    values: dict[tuple[Any, ...], Any] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)


# --- the command ----------------------------------------------------------------------------------


class Command(BaseCommand):
    help = (
        "Benchmark the sql and neo4j graph store backends side by side (pack import, publication, "
        "replace_graph, Louvain + Node Similarity, alias resolution, the offline loop's apply step, "
        "memory): a table per measure, a column per backend, and a final SUMMARY line."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--nodes", default="1000,10000", help="comma-separated sizes (1k = 1000)")
        parser.add_argument("--seed", type=int, default=7, help="seed of the generator and of Louvain")
        parser.add_argument("--lookups", type=int, default=1000, help="timed resolve_alias calls per kind")
        parser.add_argument("--alias-share", type=float, default=0.01, help="alias rows per node")
        parser.add_argument("--top-k", type=int, default=10, help="top-k of Node Similarity and SimRank")
        parser.add_argument("--neo4j-pid", type=int, help="pid of the Neo4j server (default: found)")
        parser.add_argument("--pack", default=str(DEMO_PACK), help="the demo knowledge pack")
        parser.add_argument(
            "--measures",
            default=",".join(MEASURES),
            help=f"comma-separated subset of {','.join(MEASURES)} (default all; replace_graph always runs "
            "for the synthetic sizes, the other synthetic measures need its graph)",
        )
        parser.add_argument(
            "--demo-embedder",
            choices=("real", "hash"),
            default="real",
            help="embedder of the demo pack's publications: the platform's model (default) or the hash one",
        )

    # --- plumbing ---------------------------------------------------------------------------------

    def log(self, text: str) -> None:
        self.stderr.write(f"… {text}")
        self.stderr.flush()

    @contextmanager
    def backend(self, name: str) -> Iterator[Any]:
        """The platform's graph store and ``settings.GRAPH_BACKEND`` switched to ``name``."""
        import ontology.store as store_module

        saved = (settings.GRAPH_BACKEND, store_module._store, store_module._store_pid)
        settings.GRAPH_BACKEND = name
        store_module._store, store_module._store_pid = self.stores[name], os.getpid()
        try:
            yield self.stores[name]
        finally:
            settings.GRAPH_BACKEND, store_module._store, store_module._store_pid = saved

    @contextmanager
    def demo_embedder(self) -> Iterator[None]:
        """The embedder of the demo pack's publications (``--demo-embedder``)."""
        if self.options["demo_embedder"] == "real":
            yield
            return
        from arg_platform.embedder import embedder_override

        with embedder_override(HashEmbedder()):  # type: ignore[arg-type]
            yield

    def new_project(self, name: str, measure: str, pack: Any) -> Any:
        """Import ``pack`` into a new throwaway project; remembered for the cleanup."""
        from taxonomy.packs import pack_import

        slug = f"bench-{name}-{measure}-{self.tag}"
        project = pack_import(pack, project_slug=slug).project
        self.created.append((name, project.pk))
        return project

    def drop_project(self, name: str, project_id: int) -> None:
        """Delete a project from its graph store (empty graph) and the database; never raises."""
        from ontology.store.port import GraphData

        try:
            self.stores[name].replace_graph(project_id, GraphData())
        except Exception as exc:  # noqa: BLE001 - a leftover must not hide the figures
            self.run.failures.append(f"cleanup {name} project {project_id}: {type(exc).__name__}: {exc}")
            self.stdout.write(
                f"# FAILED cleanup of the {name} graph of project {project_id} by replace_graph(pk, GraphData()): "
                f"{type(exc).__name__}: {exc}"
            )
            if name == "neo4j":
                self.attempt(
                    f"cleanup of the neo4j graph of project {project_id} in batches",
                    lambda: neo4j_delete_in_batches(self.stores[name], project_id),
                )
        delete_project_rows(project_id)
        if (name, project_id) in self.created:
            self.created.remove((name, project_id))

    def attempt(self, label: str, fn: Callable[[], Any]) -> tuple[bool, Any]:
        """Run ``fn``; on an exception record it (a ``# FAILED`` line) and answer (False, message)."""
        try:
            return True, fn()
        except Exception as exc:  # noqa: BLE001 - a failure is a figure of the benchmark
            message = f"{type(exc).__name__}: {exc}"
            self.run.failures.append(f"{label}: {message}")
            self.stdout.write(f"# FAILED {label}: {message}")
            self.log(f"FAILED {label}: {message}")
            return False, message

    def note(self, label: str, key: tuple[Any, ...]) -> None:
        """Log a measured value as soon as it is known (a run cut short still leaves its figures)."""
        value = self.run.values.get(key)
        self.log(f"{label}: {value:.3f}" if isinstance(value, float) else f"{label}: {value}")

    def memory(self, checkpoint: str) -> None:
        row = {
            "python_peak": status_mb("self", "VmHWM"),
            "python_rss": status_mb("self", "VmRSS"),
            "neo4j_peak": status_mb(self.neo4j_pid, "VmHWM") if self.neo4j_pid else None,
            "neo4j_rss": status_mb(self.neo4j_pid, "VmRSS") if self.neo4j_pid else None,
        }
        self.checkpoints.append((checkpoint, row))

    def table(self, title: str, header: list[str], rows: list[list[Any]], *, measure: str = "") -> None:
        if measure and measure not in self.measures:
            return
        cells = [[fmt(c) for c in row] for row in rows]
        widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(header)]
        self.stdout.write("")
        self.stdout.write(f"## {title}")
        self.stdout.write(
            "  ".join(
                h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(header, widths, strict=True))
            )
        )
        for row in cells:
            self.stdout.write(
                "  ".join(
                    c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
                )
            )

    # --- measures ---------------------------------------------------------------------------------

    def demo(self, name: str, pack: Any) -> Any:
        """Import and publish the demo pack into a new project; answers the project (published as v1)
        when both worked, for the apply measurement, else None."""
        from ontology.releases import release_publish
        from taxonomy.packs import pack_import

        values = self.run.values
        slug = f"bench-{name}-demo-{self.tag}"
        with self.backend(name), self.demo_embedder():
            start = time.perf_counter()
            ok, result = self.attempt(
                f"{name} demo pack_import", lambda: pack_import(pack, project_slug=slug)
            )
            values[("import", name)] = time.perf_counter() - start if ok else FAILED
            self.note(f"{name} demo pack_import s", ("import", name))
            if not ok:
                return None
            project = result.project
            self.created.append((name, project.pk))
            values[("demo_nodes",)] = result.created.get("nodes")
            values[("demo_edges",)] = result.created.get("edges")
            start = time.perf_counter()
            ok, release = self.attempt(
                f"{name} demo release_publish", lambda: release_publish(project=project, actor=None)
            )
            values[("publish", name)] = time.perf_counter() - start if ok else FAILED
            self.note(f"{name} demo release_publish s", ("publish", name))
            if ok:
                timings = release.timings
                values[("publish_draft", name)] = timings.get("validate_s", 0.0) + timings.get(
                    "export_s", 0.0
                )
                values[("publish_signals", name)] = timings.get("signals_s")
                values[("publish_rest", name)] = (
                    values[("publish", name)]
                    - values[("publish_draft", name)]
                    - (timings.get("signals_s") or 0.0)
                )
                return project
            self.drop_project(name, project.pk)
            return None

    def apply(self, name: str, project: Any) -> None:
        """``proposal_apply`` of one MERGE on ``project``: the demo pack just imported and published."""
        from ontology.models import Release
        from ontology.store import get_graph_store
        from review.changeset import changeset_dump, changeset_fingerprint, changeset_targets
        from review.loop.application import proposal_apply
        from review.loop.generators.merge import merge_changeset
        from review.models import Proposal

        values = self.run.values
        with self.backend(name), self.demo_embedder():

            def prepare() -> Any:
                ops = merge_changeset(
                    get_graph_store().export_graph(project.pk), SURVIVOR, DUPLICATE, reason="duplicate TLS"
                )
                proposal = Proposal.objects.create(
                    project=project,
                    kind="MERGE",
                    status="APPROVED",
                    confidence_bin="MID_CONF",
                    title="bench_backends: merge the TLS duplicates",
                    fingerprint=changeset_fingerprint("MERGE", ops),
                    base_release=Release.objects.get(project=project, version=1),
                    changeset=changeset_dump(ops),
                    target_keys=changeset_targets(ops),
                )
                return proposal

            ok, proposal = self.attempt(f"{name} apply: building the MERGE proposal", prepare)
            if not ok:
                values[("apply", name)] = FAILED
                self.drop_project(name, project.pk)
                return
            start = time.perf_counter()
            ok, release = self.attempt(
                f"{name} proposal_apply", lambda: proposal_apply(proposal=proposal, actor=None)
            )
            values[("apply", name)] = time.perf_counter() - start if ok else FAILED
            self.note(f"{name} proposal_apply s", ("apply", name))
            if ok:
                resolved = get_graph_store().resolve_alias(project.pk, DUPLICATE)
                if release.version != 2 or resolved != (f"{SURVIVOR}.m1",):  # A + B → AB
                    self.run.failures.append(
                        f"{name} proposal_apply: v{release.version}, {DUPLICATE} → {resolved}"
                    )
                    self.stdout.write(f"# FAILED {name} proposal_apply check: v{release.version}, {resolved}")
            self.drop_project(name, project.pk)

    def synthetic(self, name: str, nodes: int, data: AliasedGraph, options: dict[str, Any]) -> None:
        from arg_platform.embedder import embedder_override
        from ontology.analytics import compute_structural_signals
        from ontology.releases import release_publish
        from ontology.store.unit_of_work import graph_atomic
        from taxonomy.packs.reader import PackDocument

        values, key = self.run.values, size_key(nodes)
        store = self.stores[name]
        with self.backend(name):
            project = self.new_project(
                name, f"{key}", PackDocument(data=data.taxonomy_pack, source=f"synthetic-{key}")
            )
            pk = project.pk
            self.log(f"{name} {nodes:,} nodes: replace_graph")

            def write() -> None:
                with graph_atomic():
                    store.replace_graph(pk, data.graph)

            start = time.perf_counter()
            ok, _ = self.attempt(f"{name} {key} replace_graph", write)
            values[("replace", name, nodes)] = time.perf_counter() - start if ok else FAILED
            self.note(f"{name} {key} replace_graph s", ("replace", name, nodes))
            if ok:  # a re-import: the graph replaced by itself, so both the old and the new one are large
                self.log(f"{name} {nodes:,} nodes: replace_graph again")
                start = time.perf_counter()
                ok_again, _ = self.attempt(f"{name} {key} replace_graph again", write)
                values[("rereplace", name, nodes)] = time.perf_counter() - start if ok_again else FAILED
                self.note(f"{name} {key} replace_graph again s", ("rereplace", name, nodes))
            measures = self.measures
            if ok and "publish" in measures:
                self.log(f"{name} {nodes:,} nodes: release_publish")
                start = time.perf_counter()

                def publish() -> Any:
                    with embedder_override(HashEmbedder()):  # type: ignore[arg-type]
                        return release_publish(project=project, actor=None)

                ok_pub, release = self.attempt(f"{name} {key} release_publish", publish)
                values[("spublish", name, nodes)] = time.perf_counter() - start if ok_pub else FAILED
                self.note(f"{name} {key} release_publish s", ("spublish", name, nodes))
                if ok_pub:
                    timings = release.timings
                    if self.options["verbosity"] >= 2:
                        self.log(f"{name} {nodes:,} nodes: Release.timings {dict(timings)}")
                    values[("draft", name, nodes)] = timings.get("validate_s", 0.0) + timings.get(
                        "export_s", 0.0
                    )
                    values[("signals", name, nodes)] = timings.get("signals_s")
                gc.collect()
            if ok and "analytics" in measures:
                self.log(f"{name} {nodes:,} nodes: structural analytics")

                def run_analytics() -> Any:
                    common = {"seed": options["seed"], "jaccard_top_k": options["top_k"]}
                    common["simrank_top_k"] = options["top_k"]
                    if name == "sql":
                        return compute_structural_signals(data.graph, backend="networkx", **common)
                    return compute_structural_signals(
                        data.graph, backend="gds", project_id=pk, gds=store, **common
                    )

                ok_an, signals = self.attempt(f"{name} {key} structural analytics", run_analytics)
                if ok_an:
                    t = signals.timings
                    self.log(f"{name} {key} analytics: {signals.seconds:.3f} s, {dict(t)}")
                    values[("louvain", name, nodes)] = t.get("louvain")
                    values[("nodesim", name, nodes)] = t.get("jaccard")
                    values[("gdsproj", name, nodes)] = t.get("gds_projection")
                    values[("antotal", name, nodes)] = signals.seconds
                    values[("comms", name, nodes)] = signals.community_count
                    values[("modularity", name, nodes)] = signals.modularity
                else:
                    values[("antotal", name, nodes)] = FAILED
                del signals
                gc.collect()
            if ok and "aliases" in measures:
                self.log(f"{name} {nodes:,} nodes: alias resolution")
                ok_al, lookups = self.attempt(
                    f"{name} {key} resolve_alias", lambda: self.lookups(store, pk, data, options)
                )
                if ok_al:
                    for kind, times in lookups.items():
                        values[(f"alias_{kind}_p50", name, nodes)] = percentile(times, 50)
                        values[(f"alias_{kind}_p95", name, nodes)] = percentile(times, 95)
                        self.note(
                            f"{name} {key} resolve_alias {kind} p50 µs", (f"alias_{kind}_p50", name, nodes)
                        )
                else:
                    values[("alias_head_p50", name, nodes)] = FAILED
            self.log(f"{name} {nodes:,} nodes: cleanup")
            self.drop_project(name, pk)
        gc.collect()

    def lookups(
        self, store: Any, pk: int, data: AliasedGraph, options: dict[str, Any]
    ) -> dict[str, list[float]]:
        rng = np.random.default_rng(options["seed"] + 2)
        heads = sorted(data.heads)
        plain = data.plain
        for node_id in heads[:WARM_LOOKUPS]:
            store.resolve_alias(pk, node_id)
        out: dict[str, list[float]] = {}
        for kind, pool in (("head", heads), ("plain", plain)):
            times: list[float] = []
            for i in rng.integers(0, len(pool), size=options["lookups"]).tolist():
                node_id = pool[i]
                start = time.perf_counter_ns()
                answer = store.resolve_alias(pk, node_id)
                times.append((time.perf_counter_ns() - start) / 1000.0)
                expected = data.heads[node_id] if kind == "head" else (node_id,)
                if answer != expected:
                    raise AssertionError(f"resolve_alias({node_id!r}) = {answer}, expected {expected}")
            times.sort()
            out[kind] = times
        return out

    # --- main -------------------------------------------------------------------------------------

    def handle(self, *args: Any, **options: Any) -> None:
        from ontology.store.sql_backend import SqlGraphStore
        from taxonomy.packs import pack_read

        sizes = parse_sizes(options["nodes"])
        if options["lookups"] < 1:
            raise CommandError("--lookups must be at least 1")
        if not 0.0 < options["alias_share"] < 0.5:
            raise CommandError("--alias-share must be in (0, 0.5)")
        self.options = options
        self.measures = {m.strip() for m in options["measures"].split(",") if m.strip()}
        if not self.measures <= set(MEASURES):
            raise CommandError(f"--measures: unknown {sorted(self.measures - set(MEASURES))}; use {MEASURES}")
        self.run = Run()
        self.created: list[tuple[str, int]] = []
        self.checkpoints: list[tuple[str, dict[str, float | None]]] = []
        self.tag = uuid.uuid4().hex[:6]
        self.stores: dict[str, Any] = {"sql": SqlGraphStore()}
        self.neo4j_pid: int | None = None
        names = ["sql"]
        if settings.NEO4J_URI:
            from ontology.store.neo4j_backend import Neo4jGraphStore

            neo = Neo4jGraphStore.from_settings()
            neo.init_schema()
            self.stores["neo4j"] = neo
            names.append("neo4j")
            self.neo4j_pid = options.get("neo4j_pid") or find_neo4j_pid(settings.NEO4J_URI)
        pack = pack_read(Path(options["pack"]))
        self.stdout.write(
            f"# bench_backends backends={','.join(names)} nodes={','.join(str(n) for n in sizes)} "
            f"seed={options['seed']} lookups={options['lookups']} alias_share={options['alias_share']} "
            f"top_k={options['top_k']} demo_embedder={options['demo_embedder']} measures={options['measures']} "
            f"python={platform.python_version()} db={settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}"
        )
        if "neo4j" in names:
            info = self.stores["neo4j"].health().info
            self.stdout.write(
                f"# neo4j: {info.get('server', '?')} at {settings.NEO4J_URI}, server pid "
                f"{self.neo4j_pid or 'not found (no RSS)'}, {java_settings(self.neo4j_pid)}"
            )
        else:
            self.stdout.write(
                "# neo4j: not measured — NEO4J_URI is not set (run under scripts/with-neo4j.sh): sql column only"
            )
        try:
            self.measure(names, sizes, pack, options)
        finally:
            for name, pk in list(self.created):
                self.drop_project(name, pk)
            if "neo4j" in self.stores:
                self.stores["neo4j"].close()
        self.report(names, sizes)

    def measure(self, names: list[str], sizes: list[int], pack: Any, options: dict[str, Any]) -> None:
        from ontology.releases import release_publish

        if options["demo_embedder"] == "real" and "demo" in self.measures:
            self.log("warm-up: an untimed import + publish of the demo pack on sql (model load, text cache)")
            with self.backend("sql"):
                project = self.new_project("sql", "warmup", pack)
                release_publish(project=project, actor=None)
                self.drop_project("sql", project.pk)
        self.memory("start")
        for name in names if "demo" in self.measures else ():
            self.log(f"{name}: demo pack import + publish, then proposal_apply of a MERGE on it")
            project = self.demo(name, pack)
            if project is not None:
                self.apply(name, project)
            self.memory(f"after demo pack + apply {name}")
        for nodes in sizes:
            self.log(f"{nodes:,} nodes: generating")
            data = aliased_graph(nodes, options["seed"], options["alias_share"])
            self.run.values[("edges", nodes)] = len(data.graph.edges)
            self.run.values[("aliases", nodes)] = data.rows
            for name in names:
                self.synthetic(name, nodes, data, options)
                self.memory(f"after {size_key(nodes)} {name}")
            del data
            gc.collect()

    def report(self, names: list[str], sizes: list[int]) -> None:
        v = self.run.values
        get = v.get
        self.table(
            f"demo pack ({get(('demo_nodes',), '?')} nodes, {get(('demo_edges',), '?')} edges), seconds",
            ["measure", *names],
            [
                ["pack_import s", *(get(("import", n)) for n in names)],
                ["release_publish s", *(get(("publish", n)) for n in names)],
                ["  of which draft s", *(get(("publish_draft", n)) for n in names)],
                ["  of which signals s", *(get(("publish_signals", n)) for n in names)],
                ["  of which the rest s", *(get(("publish_rest", n)) for n in names)],
            ],
            measure="demo",
        )
        self.table(
            "offline loop apply: proposal_apply of one MERGE on the demo pack (publication included), seconds",
            ["measure", *names],
            [["proposal_apply s", *(get(("apply", n)) for n in names)]],
            measure="demo",
        )
        self.table(
            "replace_graph (the import's graph write, in graph_atomic; again: replaced by itself), seconds",
            ["nodes", "edges", "aliases", *(f"{n} s" for n in names), *(f"{n} again s" for n in names)],
            [
                [
                    s,
                    get(("edges", s)),
                    get(("aliases", s)),
                    *(get(("replace", n, s)) for n in names),
                    *(get(("rereplace", n, s)) for n in names),
                ]
                for s in sizes
            ],
        )
        self.table(
            "release_publish of the synthetic graphs (hash embedder), seconds",
            [
                "nodes",
                *(f"{n} publish s" for n in names),
                *(f"{n} draft s" for n in names),
                *(f"{n} signals s" for n in names),
            ],
            [
                [
                    s,
                    *(get(("spublish", n, s)) for n in names),
                    *(get(("draft", n, s)) for n in names),
                    *(get(("signals", n, s)) for n in names),
                ]
                for s in sizes
            ],
            measure="publish",
        )
        engine = {"sql": "networkx", "neo4j": "gds"}
        cols = [
            ("louvain s", "louvain"),
            ("nodesim s", "nodesim"),
            ("gds project s", "gdsproj"),
            ("total s", "antotal"),
            ("comms", "comms"),
            ("modularity", "modularity"),
        ]
        header = ["nodes"]
        for label, measure in cols:
            for n in names:
                if measure == "gdsproj" and n == "sql":
                    continue
                header.append(label if measure == "gdsproj" else f"{engine[n]} {label}")
        rows = []
        for s in sizes:
            row: list[Any] = [s]
            for _, measure in cols:
                for n in names:
                    if measure == "gdsproj" and n == "sql":
                        continue
                    value = get((measure, n, s))
                    row.append(
                        f"{value:.4f}" if measure == "modularity" and isinstance(value, float) else value
                    )
            rows.append(row)
        self.table(
            "Louvain + Node Similarity: networkx (sql) vs GDS (neo4j), seconds",
            header,
            rows,
            measure="analytics",
        )
        self.table(
            "alias resolution: store.resolve_alias, µs per call",
            [
                "nodes",
                "aliases",
                *(f"{n} chain p50" for n in names),
                *(f"{n} chain p95" for n in names),
                *(f"{n} no-alias p50" for n in names),
                *(f"{n} no-alias p95" for n in names),
            ],
            [
                [
                    s,
                    get(("aliases", s)),
                    *(self._us(get(("alias_head_p50", n, s))) for n in names),
                    *(self._us(get(("alias_head_p95", n, s))) for n in names),
                    *(self._us(get(("alias_plain_p50", n, s))) for n in names),
                    *(self._us(get(("alias_plain_p95", n, s))) for n in names),
                ]
                for s in sizes
            ],
            measure="aliases",
        )
        self.table(
            "memory: peak (VmHWM) and current (VmRSS) resident set, MiB",
            ["checkpoint", "python peak", "python rss", "neo4j peak", "neo4j rss"],
            [
                [
                    name,
                    *(
                        f"{row[k]:.0f}" if row[k] is not None else "-"
                        for k in ("python_peak", "python_rss", "neo4j_peak", "neo4j_rss")
                    ),
                ]
                for name, row in self.checkpoints
            ],
        )
        summary: dict[str, str] = {"backends": ",".join(names)}

        def put(key: str, value: Any, digits: int = 2) -> None:
            summary[key] = (
                value if isinstance(value, str) else fmt(float(value), digits) if value is not None else "-"
            )

        for n in names:
            put(f"{n}_import_s", get(("import", n)))
            put(f"{n}_publish_s", get(("publish", n)))
        for s in sizes:
            k = size_key(s)
            for n in names:
                put(f"{n}_replace_s_{k}", get(("replace", n, s)))
                put(f"{n}_replace_again_s_{k}", get(("rereplace", n, s)))
            for n in names:
                put(f"{n}_publish_s_{k}", get(("spublish", n, s)))
            for n in names:
                put(f"{n}_louvain_s_{k}", get(("louvain", n, s)))
                put(f"{n}_nodesim_s_{k}", get(("nodesim", n, s)))
            for n in names:
                put(f"{n}_alias_us_p50_{k}", get(("alias_head_p50", n, s)), 1)
                put(f"{n}_alias_us_p95_{k}", get(("alias_head_p95", n, s)), 1)
        for n in names:
            put(f"{n}_apply_s", get(("apply", n)))
        peaks = [row for _, row in self.checkpoints]
        put("python_peak_rss_mb", max((r["python_peak"] or 0.0) for r in peaks) if peaks else None, 0)
        if "neo4j" in names:
            neo_peaks = [r["neo4j_peak"] for r in peaks if r["neo4j_peak"] is not None]
            put("neo4j_peak_rss_mb", max(neo_peaks) if neo_peaks else None, 0)
        summary["failures"] = str(len(self.run.failures))
        self.stdout.write("")
        self.stdout.write("SUMMARY " + " ".join(f"{key}={value}" for key, value in summary.items()))

    @staticmethod
    def _us(value: Any) -> Any:
        return f"{value:.0f}" if isinstance(value, float) else value
