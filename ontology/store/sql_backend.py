"""The ``sql`` graph backend: the ontology graph as node/edge/attachment tables in the Django database.

The shape is an edge table: one typed, weighted edge row per pair of nodes (``ontology.models``).
Every write runs inside ``transaction.atomic()`` — so it joins an outer atomic block, e.g. the
knowledge-pack importer's one transaction — reads the rows it depends on with ``select_for_update``
where it overwrites them, checks the graph rules (``ontology.store.checks``) and only then writes: a
refusal writes nothing.
"""

from __future__ import annotations

import struct
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection, transaction
from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from arg_platform.errors import NotFound
from ontology.models import NodeAlias, NodeCluster, NodeLabel, OntologyEdge, OntologyNode

from .checks import (
    REPLACE_BATCH_SIZE,
    check_alias,
    check_direction,
    check_edge,
    check_graph,
    check_node,
    check_status,
    taxonomy_refs,
)
from .port import (
    AliasData,
    Direction,
    EdgeData,
    GraphCounts,
    GraphData,
    NodeData,
    ParameterSpec,
    StoreHealth,
    parameter_as_json,
    parameter_from_json,
    resolve_alias_chain,
)


def pack_embedding(embedding: tuple[float, ...] | None) -> bytes | None:
    """float64 little-endian bytes: exact round trip, 8 bytes a dimension."""
    if embedding is None:
        return None
    return struct.pack(f"<{len(embedding)}d", *embedding)


def unpack_embedding(raw: bytes | memoryview | None) -> tuple[float, ...] | None:
    if raw is None:
        return None
    data = bytes(raw)
    return struct.unpack(f"<{len(data) // 8}d", data)


def parameters_as_json(parameters: tuple[ParameterSpec, ...]) -> list[dict[str, Any]]:
    return [parameter_as_json(p) for p in parameters]


def parameters_from_json(raw: list[dict[str, Any]]) -> tuple[ParameterSpec, ...]:
    return tuple(parameter_from_json(p) for p in raw)


def _node_data(row: OntologyNode, labels: tuple[str, ...], clusters: tuple[str, ...]) -> NodeData:
    return NodeData(
        node_id=row.node_id,
        type=row.type,
        title=row.title,
        chunk=row.chunk,
        risk=row.risk,
        status=row.status,
        labels=labels,
        clusters=clusters,
        preconditions=tuple(row.preconditions),
        parameters=parameters_from_json(row.parameters),
        handler=row.handler,
        status_reason=row.status_reason,
        embedding=unpack_embedding(row.embedding),
        staff_notes=row.staff_notes,
        description=row.description,
        products=tuple(row.products),
    )


def _node_fields(node: NodeData) -> dict[str, Any]:
    return {
        "type": str(node.type),
        "title": node.title,
        "chunk": node.chunk,
        "staff_notes": node.staff_notes,
        "description": node.description,
        "risk": str(node.risk),
        "status": str(node.status),
        "status_reason": node.status_reason,
        "preconditions": list(node.preconditions),
        "parameters": parameters_as_json(node.parameters),
        "handler": node.handler,
        "products": list(node.products),
        "embedding": pack_embedding(node.embedding),
    }


class SqlGraphStore:
    """The graph as Django tables: a unit of work and its savepoints are the Django atomic blocks that
    ``graph_atomic`` / ``graph_savepoint`` open, so the store adds nothing to them."""

    backend = "sql"

    @property
    def in_unit_of_work(self) -> bool:
        return False

    @contextmanager
    def unit_of_work(self) -> Iterator[None]:
        yield

    @contextmanager
    def savepoint(self, project_id: int) -> Iterator[None]:
        yield

    def health(self) -> StoreHealth:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
            return StoreHealth(self.backend, True, "ok", {"vendor": connection.vendor})
        except Exception as exc:
            return StoreHealth(self.backend, False, f"{type(exc).__name__}: {exc}")

    # --- whole graph ------------------------------------------------------------------------------

    def replace_graph(self, project_id: int, graph: GraphData) -> None:
        with transaction.atomic():
            check_graph(graph, taxonomy_refs(project_id))
            self._delete_graph(project_id)
            now = timezone.now()
            OntologyNode.objects.bulk_create(
                [
                    OntologyNode(
                        project_id=project_id, node_id=n.node_id, status_changed_at=now, **_node_fields(n)
                    )
                    for n in graph.nodes
                ],
                batch_size=REPLACE_BATCH_SIZE,
            )
            pks = dict(OntologyNode.objects.filter(project_id=project_id).values_list("node_id", "pk"))
            NodeLabel.objects.bulk_create(
                [
                    NodeLabel(node_id=pks[n.node_id], label_id=label)
                    for n in graph.nodes
                    for label in n.labels
                ],
                batch_size=REPLACE_BATCH_SIZE,
            )
            NodeCluster.objects.bulk_create(
                [
                    NodeCluster(node_id=pks[n.node_id], cluster_key=key)
                    for n in graph.nodes
                    for key in n.clusters
                ],
                batch_size=REPLACE_BATCH_SIZE,
            )
            OntologyEdge.objects.bulk_create(
                [
                    OntologyEdge(
                        project_id=project_id,
                        source_id=pks[e.source],
                        target_id=pks[e.target],
                        type=str(e.type),
                        weight=float(e.weight),
                        semantics=e.semantics,
                    )
                    for e in graph.edges
                ],
                batch_size=REPLACE_BATCH_SIZE,
            )
            NodeAlias.objects.bulk_create(
                [
                    NodeAlias(project_id=project_id, source=a.source, target=t, reason=a.reason)
                    for a in graph.aliases
                    for t in a.targets
                ],
                batch_size=REPLACE_BATCH_SIZE,
            )

    @staticmethod
    def _delete_graph(project_id: int) -> None:
        # Children first, so deleting the nodes has nothing left to cascade into.
        NodeAlias.objects.filter(project_id=project_id).delete()
        OntologyEdge.objects.filter(project_id=project_id).delete()
        NodeLabel.objects.filter(node__project_id=project_id).delete()
        NodeCluster.objects.filter(node__project_id=project_id).delete()
        OntologyNode.objects.filter(project_id=project_id).delete()

    def export_graph(self, project_id: int) -> GraphData:
        labels: dict[int, list[str]] = defaultdict(list)
        for node_pk, label_id in (
            NodeLabel.objects.filter(node__project_id=project_id)
            .order_by("id")
            .values_list("node_id", "label_id")
        ):
            labels[node_pk].append(label_id)
        clusters: dict[int, list[str]] = defaultdict(list)
        for node_pk, key in (
            NodeCluster.objects.filter(node__project_id=project_id)
            .order_by("id")
            .values_list("node_id", "cluster_key")
        ):
            clusters[node_pk].append(key)
        # Sorted in Python, not by the database: a database collation may not order by code point.
        nodes = tuple(
            sorted(
                (
                    _node_data(row, tuple(labels[row.pk]), tuple(clusters[row.pk]))
                    for row in OntologyNode.objects.filter(project_id=project_id).iterator(chunk_size=2000)
                ),
                key=lambda n: n.node_id,
            )
        )
        edges = self._edges(OntologyEdge.objects.filter(project_id=project_id))
        return GraphData(nodes=nodes, edges=tuple(edges), aliases=self._aliases(project_id))

    # --- nodes ------------------------------------------------------------------------------------

    def upsert_node(self, project_id: int, node: NodeData) -> None:
        with transaction.atomic():
            refs = taxonomy_refs(project_id)
            row = (
                OntologyNode.objects.select_for_update()
                .filter(project_id=project_id, node_id=node.node_id)
                .first()
            )
            check_node(
                node,
                refs,
                current_status=row.status if row else None,
                touching_edges=self._touching(row) if row else 0,
            )
            now = timezone.now()
            if row is None:
                row = OntologyNode(project_id=project_id, node_id=node.node_id, status_changed_at=now)
            elif row.status != node.status:
                row.status_changed_at = now
            for name, value in _node_fields(node).items():
                setattr(row, name, value)
            row.save()
            NodeLabel.objects.filter(node=row).delete()
            NodeCluster.objects.filter(node=row).delete()
            NodeLabel.objects.bulk_create([NodeLabel(node=row, label_id=label) for label in node.labels])
            NodeCluster.objects.bulk_create([NodeCluster(node=row, cluster_key=key) for key in node.clusters])

    @staticmethod
    def _touching(row: OntologyNode) -> int:
        return OntologyEdge.objects.filter(Q(source=row) | Q(target=row)).count()

    def set_node_status(self, project_id: int, node_id: str, status: str, reason: str) -> None:
        with transaction.atomic():
            row = (
                OntologyNode.objects.select_for_update()
                .filter(project_id=project_id, node_id=node_id)
                .first()
            )
            check_status(
                node_id,
                current_status=row.status if row else None,
                status=status,
                reason=reason,
                touching_edges=self._touching(row) if row else 0,
            )
            assert row is not None  # check_status raised NotFound otherwise
            if row.status != status:
                row.status_changed_at = timezone.now()
            row.status, row.status_reason = str(status), reason
            row.save(update_fields=["status", "status_reason", "status_changed_at", "updated_at"])

    def get_node(self, project_id: int, node_id: str) -> NodeData | None:
        row = OntologyNode.objects.filter(project_id=project_id, node_id=node_id).first()
        if row is None:
            return None
        labels = tuple(NodeLabel.objects.filter(node=row).order_by("id").values_list("label_id", flat=True))
        clusters = tuple(
            NodeCluster.objects.filter(node=row).order_by("id").values_list("cluster_key", flat=True)
        )
        return _node_data(row, labels, clusters)

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
        qs = OntologyNode.objects.filter(project_id=project_id)
        if type:
            qs = qs.filter(type=type)
        if status:
            qs = qs.filter(status=status)
        if label:
            qs = qs.filter(label_links__label_id=label)
        if search:
            qs = qs.filter(Q(title__icontains=search) | Q(node_id__icontains=search))
        total = qs.count()
        rows = list(qs.order_by("node_id")[max(offset, 0) : max(offset, 0) + max(limit, 0)])
        labels: dict[int, list[str]] = defaultdict(list)
        clusters: dict[int, list[str]] = defaultdict(list)
        pks = [row.pk for row in rows]
        for node_pk, label_id in (
            NodeLabel.objects.filter(node_id__in=pks).order_by("id").values_list("node_id", "label_id")
        ):
            labels[node_pk].append(label_id)
        for node_pk, key in (
            NodeCluster.objects.filter(node_id__in=pks).order_by("id").values_list("node_id", "cluster_key")
        ):
            clusters[node_pk].append(key)
        return [_node_data(row, tuple(labels[row.pk]), tuple(clusters[row.pk])) for row in rows], total

    # --- edges ------------------------------------------------------------------------------------

    @staticmethod
    def _edges(qs: QuerySet[OntologyEdge]) -> list[EdgeData]:
        rows = qs.order_by().values_list("source__node_id", "target__node_id", "type", "weight", "semantics")
        return sorted((EdgeData(s, t, kind, w, sem) for s, t, kind, w, sem in rows), key=lambda e: e.key)

    def add_edge(self, project_id: int, edge: EdgeData) -> None:
        with transaction.atomic():
            rows = {
                row.node_id: row
                for row in OntologyNode.objects.select_for_update().filter(
                    project_id=project_id, node_id__in=[edge.source, edge.target]
                )
            }
            source, target = rows.get(edge.source), rows.get(edge.target)
            exists = bool(
                source
                and target
                and OntologyEdge.objects.filter(source=source, target=target, type=edge.type).exists()
            )
            check_edge(edge, statuses={k: r.status for k, r in rows.items()}, exists=exists)
            OntologyEdge.objects.create(
                project_id=project_id,
                source=rows[edge.source],  # both ends exist: check_edge refused a missing one
                target=rows[edge.target],
                type=str(edge.type),
                weight=float(edge.weight),
                semantics=edge.semantics,
            )

    def remove_edge(self, project_id: int, source: str, target: str, type: str) -> None:
        with transaction.atomic():
            deleted, _ = OntologyEdge.objects.filter(
                project_id=project_id, source__node_id=source, target__node_id=target, type=type
            ).delete()
            if not deleted:
                raise NotFound(f"edge {source} -[{type}]-> {target} not found")

    def neighbours(
        self,
        project_id: int,
        node_id: str,
        direction: Direction = "out",
        edge_types: tuple[str, ...] | None = None,
    ) -> list[EdgeData]:
        check_direction(direction)
        where = {
            "out": Q(source__node_id=node_id),
            "in": Q(target__node_id=node_id),
            "both": Q(source__node_id=node_id) | Q(target__node_id=node_id),
        }[direction]
        qs = OntologyEdge.objects.filter(where, project_id=project_id)
        if edge_types is not None:
            qs = qs.filter(type__in=[str(t) for t in edge_types])
        return self._edges(qs)

    # --- aliases ----------------------------------------------------------------------------------

    @staticmethod
    def _aliases(project_id: int) -> tuple[AliasData, ...]:
        grouped: dict[str, list[str]] = defaultdict(list)
        reasons: dict[str, str] = {}
        for source, target, reason in (
            NodeAlias.objects.filter(project_id=project_id)
            .order_by("id")
            .values_list("source", "target", "reason")
        ):
            grouped[source].append(target)
            reasons.setdefault(source, reason)
        return tuple(
            AliasData(source, tuple(targets), reasons[source]) for source, targets in sorted(grouped.items())
        )

    def add_alias(self, project_id: int, alias: AliasData) -> None:
        with transaction.atomic():
            ids = [alias.source, *alias.targets]
            statuses = dict(
                OntologyNode.objects.select_for_update()
                .filter(project_id=project_id, node_id__in=ids)
                .values_list("node_id", "status")
            )
            check_alias(alias, statuses=statuses)
            NodeAlias.objects.filter(project_id=project_id, source=alias.source).delete()
            NodeAlias.objects.bulk_create(
                [
                    NodeAlias(project_id=project_id, source=alias.source, target=t, reason=alias.reason)
                    for t in alias.targets
                ]
            )

    def resolve_alias(self, project_id: int, node_id: str) -> tuple[str, ...]:
        table = {a.source: a.targets for a in self._aliases(project_id)}
        return resolve_alias_chain(table, node_id)

    # --- counts -----------------------------------------------------------------------------------

    def counts(self, project_id: int) -> GraphCounts:
        by_type: Counter[str] = Counter()
        by_status: Counter[str] = Counter()
        for kind, status, n in (
            OntologyNode.objects.filter(project_id=project_id)
            .values_list("type", "status")
            .annotate(n=Count("id"))
            .order_by()
        ):
            by_type[kind] += n
            by_status[status] += n
        return {
            "nodes": sum(by_type.values()),
            "edges": OntologyEdge.objects.filter(project_id=project_id).count(),
            "aliases": NodeAlias.objects.filter(project_id=project_id).values("source").distinct().count(),
            "nodes_by_type": dict(sorted(by_type.items())),
            "nodes_by_status": dict(sorted(by_status.items())),
        }
