"""The ``neo4j`` graph backend: the official driver, one per process, managed transactions.

Every statement comes from ``ontology.store.cypher`` (see its docstring for the data model) and is
sent through ``_run``, which refuses parameters other than the declared ones. Writes are managed
transactions (``session.execute_write``): the transaction function reads what the graph rules need,
checks them (``ontology.store.checks``) and writes; a ``RuleViolation`` raised inside it rolls the
transaction back, so a refusal writes nothing. A statement on a project's graph names its
*generation* (see ``ontology.store.cypher``): ``_run`` reads it from the project's head once per
transaction.

``replace_graph`` deletes and rewrites a project's graph in one transaction, in ``UNWIND`` batches of
``REPLACE_BATCH_SIZE`` rows — up to ``STAGED_ABOVE`` rows (nodes + edges + aliases, of the new graph
or of the one it replaces). A larger graph is *staged*: written as the next generation in batches of
their own transactions (no reader asks for that generation), then swapped in by one transaction that
points the head at it — one write, whatever the graph's size. Readers see the old graph or the new
one, never a part; inside a unit of work the swap is part of the unit, so it commits or rolls back
with it. The replaced generation is deleted in batches once the swap has committed; leftovers of an
interrupted replacement are deleted by the next one.

A *unit of work* (``unit_of_work()``, opened by ``ontology.store.unit_of_work.graph_atomic`` with a Django
atomic block) is one explicit Neo4j transaction that every read and write of this thread joins until
it ends: the writes of a change that also touches Django tables commit together with them or not at
all, and reads inside it see its own writes. ``savepoint()`` marks a point inside it that a failing
part can be rolled back to (Neo4j has no nested transactions: the project's graph as it was at the
savepoint is written back in the same transaction).

Labels and clusters live in the Django database (taxonomy); they are read before the Neo4j
transaction opens (the pack importer holds them in its own database transaction).
"""

from __future__ import annotations

import contextlib
import json
import threading
import weakref
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Concatenate, ParamSpec, TypeVar

from django.conf import settings
from django.utils import timezone

from arg_platform.errors import NotFound

from .checks import (
    REPLACE_BATCH_SIZE,
    batches,
    check_alias,
    check_direction,
    check_edge,
    check_graph,
    check_node,
    check_status,
    taxonomy_refs,
)
from .cypher import AUTOCOMMIT_STATEMENTS, SCHEMA_STATEMENTS, STATEMENTS
from .port import (
    AliasData,
    Direction,
    EdgeData,
    GraphCounts,
    GraphData,
    NodeData,
    StoreHealth,
    parameter_as_json,
    parameter_from_json,
    resolve_alias_chain,
)

P = ParamSpec("P")
T = TypeVar("T")

STAGED_ABOVE = 20_000
NEIGHBOUR_STATEMENTS = {"out": "NEIGHBOURS_OUT", "in": "NEIGHBOURS_IN", "both": "NEIGHBOURS_BOTH"}


# The generation of each project's graph as the transaction sees it: read from the head once.
_generations: weakref.WeakKeyDictionary[Any, dict[int, int]] = weakref.WeakKeyDictionary()


def graph_generation(tx: Any, project_id: int) -> int:
    """The generation that is ``project_id``'s graph in ``tx`` (0 for a project without a head)."""
    seen = _generations.setdefault(tx, {})
    if project_id not in seen:
        query, _ = STATEMENTS["GRAPH_GENERATION"]
        seen[project_id] = int(tx.run(query, {"project_id": project_id}).single()["generation"])
    return seen[project_id]


def _set_graph_generation(tx: Any, project_id: int, generation: int) -> None:
    _run(tx, "SET_GRAPH_GENERATION", project_id=project_id, generation=generation).consume()
    _generations.setdefault(tx, {})[project_id] = generation


def _run(tx: Any, name: str, **params: Any) -> Any:
    """Send the named statement; its parameters must be exactly the declared ones (CI lints those),
    but for ``generation``, which is the project's current one unless the caller names another."""
    query, declared = STATEMENTS[name]
    if set(params) | ({"generation"} & set(declared)) != set(declared):
        raise TypeError(f"cypher {name}: parameters {sorted(params)} differ from declared {sorted(declared)}")
    if "generation" in declared and "generation" not in params:
        params["generation"] = graph_generation(tx, params["project_id"])
    return tx.run(query, params)


def node_props(node: NodeData) -> dict[str, Any]:
    """Properties of an ``:OntologyNode`` (all but the key); ``embedding`` None removes the property."""
    return {
        "type": str(node.type),
        "title": node.title,
        "chunk": node.chunk,
        "staff_notes": node.staff_notes,
        "description": node.description,
        "risk": str(node.risk),
        "status": str(node.status),
        "status_reason": node.status_reason,
        "labels": list(node.labels),
        "clusters": list(node.clusters),
        "preconditions": list(node.preconditions),
        "parameters_json": json.dumps([parameter_as_json(p) for p in node.parameters]),
        "handler": node.handler,
        "products": list(node.products),
        "embedding": [float(x) for x in node.embedding] if node.embedding is not None else None,
    }


def node_from_props(props: dict[str, Any]) -> NodeData:
    parameters = tuple(parameter_from_json(p) for p in json.loads(props.get("parameters_json") or "[]"))
    embedding = props.get("embedding")
    return NodeData(
        node_id=props["node_id"],
        type=props["type"],
        title=props["title"],
        chunk=props.get("chunk", ""),
        staff_notes=props.get("staff_notes", ""),
        description=props.get("description", ""),
        risk=props.get("risk", "low"),
        status=props.get("status", "ACTIVE"),
        labels=tuple(props.get("labels") or ()),
        clusters=tuple(props.get("clusters") or ()),
        preconditions=tuple(props.get("preconditions") or ()),
        parameters=parameters,
        handler=props.get("handler", ""),
        status_reason=props.get("status_reason", ""),
        products=tuple(props.get("products") or ()),
        embedding=tuple(float(x) for x in embedding) if embedding is not None else None,
    )


def _replace_rows(graph: GraphData) -> list[tuple[str, list[dict[str, Any]]]]:
    """The ``UNWIND`` rows that write ``graph``: [(statement, rows)], nodes first."""
    node_rows = [{"node_id": n.node_id, "props": node_props(n)} for n in graph.nodes]
    edge_rows = [
        {
            "source": e.source,
            "target": e.target,
            "type": str(e.type),
            "weight": float(e.weight),
            "semantics": e.semantics,
        }
        for e in graph.edges
    ]
    alias_rows = [{"source": a.source, "targets": list(a.targets), "reason": a.reason} for a in graph.aliases]
    return [("CREATE_NODES", node_rows), ("CREATE_EDGES", edge_rows), ("CREATE_ALIASES", alias_rows)]


def _rollback_quietly(tx: Any) -> None:
    """Roll back ``tx``; a connection already gone has rolled it back on the server."""
    with contextlib.suppress(Exception):  # the original exception is the one that matters
        tx.rollback()


def _edge(record: Any) -> EdgeData:
    return EdgeData(
        record["source"], record["target"], record["type"], float(record["weight"]), record["semantics"] or ""
    )


class Neo4jGraphStore:
    backend = "neo4j"
    staged_above = STAGED_ABOVE  # rows; a larger replace_graph is staged (see the module docstring)

    def __init__(
        self, *, uri: str, user: str, password: str, database: str, max_retry_s: float = 3.0
    ) -> None:
        from neo4j import GraphDatabase

        self.database = database
        self._local = threading.local()  # .tx: the open unit of work of this thread, if any
        # max_transaction_retry_time: the driver's default (30 s) would hold a web request that long
        # while Neo4j is down; a few seconds, then ServiceUnavailable → 503 (arg_platform.unavailable).
        self.driver: Any = GraphDatabase.driver(
            uri,
            auth=(user, password),
            connection_timeout=5,
            max_connection_lifetime=3600,
            max_transaction_retry_time=max_retry_s,
            # The server's notes on statements (an index that IF NOT EXISTS skipped, a property no node
            # has yet in an empty graph) are not the operator's concern: statements are linted in CI.
            notifications_min_severity="OFF",
        )

    @classmethod
    def from_settings(cls) -> Neo4jGraphStore:
        return cls(
            uri=settings.NEO4J_URI,
            user=settings.NEO4J_USER,
            password=settings.NEO4J_PASSWORD,
            database=settings.NEO4J_DATABASE,
            max_retry_s=settings.NEO4J_MAX_RETRY_S,
        )

    def health(self) -> StoreHealth:
        try:
            self.driver.verify_connectivity()
            info = self.driver.get_server_info()
            return StoreHealth(
                self.backend, True, "ok", {"server": str(info.agent), "database": self.database}
            )
        except Exception as exc:
            return StoreHealth(self.backend, False, f"{type(exc).__name__}: {exc}")

    def close(self) -> None:
        self.driver.close()

    def _write(self, fn: Callable[Concatenate[Any, P], T], *args: P.args, **kwargs: P.kwargs) -> T:
        tx = getattr(self._local, "tx", None)
        if tx is not None:
            return fn(tx, *args, **kwargs)
        with self.driver.session(database=self.database) as session:
            result: T = session.execute_write(fn, *args, **kwargs)
            return result

    def _read(self, fn: Callable[Concatenate[Any, P], T], *args: P.args, **kwargs: P.kwargs) -> T:
        tx = getattr(self._local, "tx", None)
        if tx is not None:
            return fn(tx, *args, **kwargs)
        with self.driver.session(database=self.database) as session:
            result: T = session.execute_read(fn, *args, **kwargs)
            return result

    def run_cypher(self, query: str, params: dict[str, Any]) -> Any:
        """Run one read statement (GDS analytics) on this store's connection and answer a pandas
        ``DataFrame`` — the shape ``graphdatascience``'s ``run_cypher`` answers. Inside a unit of work
        it runs in that transaction, so a GDS projection sees the unit's own, uncommitted writes."""
        import pandas as pd

        def work(tx: Any) -> Any:
            result = tx.run(query, params)
            keys = list(result.keys())
            return pd.DataFrame([record.values() for record in result], columns=keys)

        return self._read(work)

    # --- units of work ----------------------------------------------------------------------------

    @property
    def in_unit_of_work(self) -> bool:
        return getattr(self._local, "tx", None) is not None

    @contextmanager
    def unit_of_work(self) -> Iterator[None]:
        """One Neo4j transaction for every store call of this thread inside the block.

        Commits when the block ends without an exception, rolls back otherwise. A nested call joins
        the open unit (the outermost block decides)."""
        if self.in_unit_of_work:
            yield
            return
        session = self.driver.session(database=self.database)
        try:
            tx = session.begin_transaction()
            self._local.tx = tx
            try:
                yield
            except BaseException:
                self._local.tx = None
                _rollback_quietly(tx)
                raise
            self._local.tx = None
            if getattr(self._local, "broken", False):
                _rollback_quietly(tx)
                raise RuntimeError("the graph unit of work could not return to a savepoint; rolled back")
            tx.commit()
            for project_id in getattr(self._local, "after_commit", []):
                self._purge(project_id)
        finally:
            self._local.tx = None
            self._local.broken = False
            self._local.after_commit = []
            session.close()

    @contextmanager
    def savepoint(self, project_id: int) -> Iterator[None]:
        """Inside a unit of work: on an exception, put the project's graph back as it was, then re-raise.

        Outside one there is nothing to roll back to, and the block runs as it is."""
        if not self.in_unit_of_work:
            yield
            return
        before = self.export_graph(project_id)
        try:
            yield
        except BaseException:
            try:
                self._write(self._replace, project_id, before)
            except Exception:  # noqa: BLE001 - the unit cannot commit now; the first error is re-raised
                self._local.broken = True
            raise

    def init_schema(self) -> list[str]:
        """Create the uniqueness constraints and indexes (idempotent: IF NOT EXISTS); names what ran."""
        self.driver.verify_connectivity()  # fail fast instead of retrying for a minute
        with self.driver.session(database=self.database) as session:
            for name in SCHEMA_STATEMENTS:
                if name in AUTOCOMMIT_STATEMENTS:  # CALL … IN TRANSACTIONS commits its own batches
                    session.run(STATEMENTS[name][0]).consume()
                    continue
                # Schema commands cannot share a transaction with writes; each runs on its own.
                session.execute_write(lambda tx, n=name: _run(tx, n).consume())
        return list(SCHEMA_STATEMENTS)

    # --- whole graph ------------------------------------------------------------------------------

    def replace_graph(self, project_id: int, graph: GraphData) -> None:
        check_graph(graph, taxonomy_refs(project_id))
        current = self.counts(project_id)  # a large graph replaced by a small one is deleted in batches too
        rows = len(graph.nodes) + len(graph.edges) + len(graph.aliases)
        if max(rows, int(current["nodes"]) + int(current["edges"])) <= self.staged_above:
            self._write(self._replace, project_id, graph)
            return
        generation = self._read(graph_generation, project_id)  # the unit's view, inside one
        keep = {generation, self._committed_generation(project_id)}
        staged = max(keep) + 1
        with self.driver.session(database=self.database) as session:  # not the unit: these commit now
            self._delete_other_generations(session, project_id, keep)  # an interrupted replacement's
            now = timezone.now()
            for name, params in _replace_rows(graph):
                for batch in batches(params):
                    extra = {"now": now} if name != "CREATE_EDGES" else {}
                    session.execute_write(
                        lambda tx, n=name, b=batch, e=extra: _run(
                            tx, n, project_id=project_id, generation=staged, rows=b, **e
                        ).consume()
                    )
        self._write(_set_graph_generation, project_id, staged)
        if self.in_unit_of_work:
            self._local.after_commit = [*getattr(self._local, "after_commit", []), project_id]
        else:
            self._purge(project_id)

    def _committed_generation(self, project_id: int) -> int:
        with self.driver.session(database=self.database) as session:
            return int(session.execute_read(graph_generation, project_id))

    def _purge(self, project_id: int) -> None:
        """Delete every generation of the project's graph but the committed current one."""
        with self.driver.session(database=self.database) as session:
            keep = {int(session.execute_read(graph_generation, project_id))}
            self._delete_other_generations(session, project_id, keep)

    @staticmethod
    def _delete_other_generations(session: Any, project_id: int, keep: set[int]) -> None:
        """Delete the project's nodes and aliases of generations not in ``keep``, a batch per
        transaction."""
        for name in ("DELETE_OTHER_ALIASES_BATCH", "DELETE_OTHER_NODES_BATCH"):
            deleted = 1
            while deleted:
                deleted = session.execute_write(
                    lambda tx, n=name: (
                        _run(tx, n, project_id=project_id, keep=sorted(keep), limit=REPLACE_BATCH_SIZE)
                        .consume()
                        .counters.nodes_deleted
                    )
                )

    @staticmethod
    def _replace(tx: Any, project_id: int, graph: GraphData) -> None:
        """Delete the project's graph and write ``graph`` in ``UNWIND`` batches (no checks: callers')."""
        now = timezone.now()
        _run(tx, "DELETE_PROJECT_ALIASES", project_id=project_id).consume()
        _run(tx, "DELETE_PROJECT_NODES", project_id=project_id).consume()
        rows = _replace_rows(graph)
        for name, params in rows:
            for batch in batches(params):
                extra = {"now": now} if name != "CREATE_EDGES" else {}
                _run(tx, name, project_id=project_id, rows=batch, **extra).consume()

    def export_graph(self, project_id: int) -> GraphData:
        def work(tx: Any) -> GraphData:
            # Sorted in Python as well, so both backends order by code point whatever the server does.
            nodes = sorted(
                (node_from_props(r["node"]) for r in _run(tx, "EXPORT_NODES", project_id=project_id)),
                key=lambda n: n.node_id,
            )
            edges = sorted(
                (_edge(r) for r in _run(tx, "EXPORT_EDGES", project_id=project_id)), key=lambda e: e.key
            )
            aliases = sorted(
                (
                    AliasData(r["source"], tuple(r["targets"]), r["reason"] or "")
                    for r in _run(tx, "EXPORT_ALIASES", project_id=project_id)
                ),
                key=lambda a: a.source,
            )
            return GraphData(nodes=tuple(nodes), edges=tuple(edges), aliases=tuple(aliases))

        return self._read(work)

    # --- nodes ------------------------------------------------------------------------------------

    def upsert_node(self, project_id: int, node: NodeData) -> None:
        refs = taxonomy_refs(project_id)
        props = node_props(node)

        def work(tx: Any) -> None:
            state = _run(tx, "NODE_STATE", project_id=project_id, node_id=node.node_id).single()
            check_node(
                node,
                refs,
                current_status=state["status"] if state else None,
                touching_edges=state["touching"] if state else 0,
            )
            name = "UPDATE_NODE" if state else "CREATE_NODE"
            _run(
                tx, name, project_id=project_id, node_id=node.node_id, props=props, now=timezone.now()
            ).consume()

        self._write(work)

    def set_node_status(self, project_id: int, node_id: str, status: str, reason: str) -> None:
        def work(tx: Any) -> None:
            state = _run(tx, "NODE_STATE", project_id=project_id, node_id=node_id).single()
            check_status(
                node_id,
                current_status=state["status"] if state else None,
                status=status,
                reason=reason,
                touching_edges=state["touching"] if state else 0,
            )
            _run(
                tx,
                "SET_NODE_STATUS",
                project_id=project_id,
                node_id=node_id,
                status=str(status),
                reason=reason,
                now=timezone.now(),
            ).consume()

        self._write(work)

    def get_node(self, project_id: int, node_id: str) -> NodeData | None:
        def work(tx: Any) -> NodeData | None:
            record = _run(tx, "GET_NODE", project_id=project_id, node_id=node_id).single()
            return node_from_props(record["node"]) if record else None

        return self._read(work)

    def list_nodes(
        self,
        project_id: int,
        *,
        type: str | None = None,
        status: str | None = None,
        label: str | None = None,
        search: str | None = None,
        offset: int = 0,
        limit: int = 50,
    ) -> tuple[list[NodeData], int]:
        filters = {
            "project_id": project_id,
            "type": type or None,
            "status": status or None,
            "label": label or None,
            "search": search.lower() if search else None,
        }

        def work(tx: Any) -> tuple[list[NodeData], int]:
            total = _run(tx, "COUNT_LIST_NODES", **filters).single()["n"]
            rows = _run(tx, "LIST_NODES", **filters, offset=max(offset, 0), limit=max(limit, 0))
            return [node_from_props(r["node"]) for r in rows], total

        return self._read(work)

    def _statuses(self, tx: Any, project_id: int, node_ids: list[str]) -> dict[str, str]:
        return {
            r["node_id"]: r["status"]
            for r in _run(tx, "NODE_STATUSES", project_id=project_id, node_ids=node_ids)
        }

    # --- edges ------------------------------------------------------------------------------------

    def add_edge(self, project_id: int, edge: EdgeData) -> None:
        def work(tx: Any) -> None:
            statuses = self._statuses(tx, project_id, [edge.source, edge.target])
            key = {
                "project_id": project_id,
                "source": edge.source,
                "target": edge.target,
                "type": str(edge.type),
            }
            exists = _run(tx, "EDGE_EXISTS", **key).single()["n"] > 0
            check_edge(edge, statuses=statuses, exists=exists)
            _run(tx, "CREATE_EDGE", **key, weight=float(edge.weight), semantics=edge.semantics).consume()

        self._write(work)

    def remove_edge(self, project_id: int, source: str, target: str, type: str) -> None:
        def work(tx: Any) -> int:
            summary = _run(
                tx, "DELETE_EDGE", project_id=project_id, source=source, target=target, type=type
            ).consume()
            return int(summary.counters.relationships_deleted)

        if not self._write(work):
            raise NotFound(f"edge {source} -[{type}]-> {target} not found")

    def neighbours(
        self,
        project_id: int,
        node_id: str,
        direction: Direction = "out",
        edge_types: tuple[str, ...] | None = None,
    ) -> list[EdgeData]:
        check_direction(direction)
        types = [str(t) for t in edge_types] if edge_types is not None else None

        def work(tx: Any) -> list[EdgeData]:
            rows = _run(
                tx, NEIGHBOUR_STATEMENTS[direction], project_id=project_id, node_id=node_id, edge_types=types
            )
            return sorted((_edge(r) for r in rows), key=lambda e: e.key)

        return self._read(work)

    # --- aliases ----------------------------------------------------------------------------------

    def add_alias(self, project_id: int, alias: AliasData) -> None:
        def work(tx: Any) -> None:
            check_alias(alias, statuses=self._statuses(tx, project_id, [alias.source, *alias.targets]))
            _run(
                tx,
                "MERGE_ALIAS",
                project_id=project_id,
                source=alias.source,
                targets=list(alias.targets),
                reason=alias.reason,
                now=timezone.now(),
            ).consume()

        self._write(work)

    def resolve_alias(self, project_id: int, node_id: str) -> tuple[str, ...]:
        """Reads only the alias rows on the chain from ``node_id``: one indexed lookup per step."""

        def work(tx: Any) -> dict[str, tuple[str, ...]]:
            table: dict[str, tuple[str, ...]] = {}
            frontier = [node_id]
            while frontier:
                rows = _run(tx, "ALIAS_ROWS", project_id=project_id, sources=frontier)
                found = {r["source"]: tuple(r["targets"]) for r in rows}
                table.update(found)
                frontier = sorted({t for targets in found.values() for t in targets} - set(table))
            return table

        return resolve_alias_chain(self._read(work), node_id)

    # --- counts -----------------------------------------------------------------------------------

    def counts(self, project_id: int) -> GraphCounts:
        def work(tx: Any) -> GraphCounts:
            by_type: Counter[str] = Counter()
            by_status: Counter[str] = Counter()
            for r in _run(tx, "COUNT_NODES", project_id=project_id):
                by_type[r["type"]] += r["n"]
                by_status[r["status"]] += r["n"]
            return {
                "nodes": sum(by_type.values()),
                "edges": _run(tx, "COUNT_EDGES", project_id=project_id).single()["n"],
                "aliases": _run(tx, "COUNT_ALIASES", project_id=project_id).single()["n"],
                "nodes_by_type": dict(sorted(by_type.items())),
                "nodes_by_status": dict(sorted(by_status.items())),
            }

        return self._read(work)
