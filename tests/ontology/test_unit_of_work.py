"""One unit of work across the Django database and the graph store, on both backends.

A change that touches Django tables and the graph store commits in both or in neither: each test
forces a failure *after* the graph write and checks that the database and the graph are exactly as
they were. ``app_store`` (``conftest.py``) makes the platform's own graph store the backend under
test — on ``neo4j``, a real server (``tests/neo4j_server.py``).
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arg_platform.errors import RuleViolation
from ontology.store.port import EdgeData, GraphData, NodeData
from tests.review.loop_fixtures import store_proposal

from .conftest import sample_graph

SMALL_PACK = Path(__file__).resolve().parents[1] / "taxonomy" / "fixtures" / "small_pack.yaml"


class Boom(RuntimeError):
    """The failure a test forces after the graph write."""


def _db_state() -> tuple[int, int, int]:
    from arg_platform.models import AuditEvent
    from projects.models import Project
    from taxonomy.models import Label

    return Project.objects.count(), Label.objects.count(), AuditEvent.objects.count()


@pytest.mark.django_db
def test_a_node_edit_that_fails_after_the_graph_write_changes_neither_store(
    app_store: Any, project: Any, taxonomy: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import ontology.services as services

    app_store.replace_graph(project.pk, sample_graph())
    graph_before, db_before = app_store.export_graph(project.pk), _db_state()

    def fail(**kwargs: Any) -> None:
        raise Boom("audit trail unavailable")

    monkeypatch.setattr(services, "audit_record", fail)
    with pytest.raises(Boom):
        services.node_create(
            project=project, actor=None, node=NodeData("N-new", "FAQ", "New", "A new answer.")
        )
    with pytest.raises(Boom):
        services.edge_update(
            project=project,
            actor=None,
            source="N-a",
            target="N-b",
            type="LEADS_TO",
            weight=0.1,
            semantics="weaker",
        )

    assert app_store.get_node(project.pk, "N-new") is None
    assert app_store.export_graph(project.pk) == graph_before
    assert _db_state() == db_before


@pytest.mark.django_db
def test_a_pack_import_that_fails_after_the_graph_write_leaves_no_trace(
    app_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from taxonomy.packs import importer, pack_import, pack_read

    db_before = _db_state()

    def fail(**kwargs: Any) -> None:
        raise Boom("audit trail unavailable")

    monkeypatch.setattr(importer, "audit_record", fail)
    with pytest.raises(Boom):
        pack_import(pack_read(SMALL_PACK))

    assert _db_state() == db_before
    for project_id in range(1, 50):  # whatever id the rolled-back project had, its graph is gone
        assert app_store.counts(project_id)["nodes"] == 0


@pytest.mark.django_db
def test_a_reimport_that_fails_after_the_graph_write_keeps_the_old_graph(
    app_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ontology.services import node_create
    from taxonomy.packs import importer, pack_import, pack_read

    project = pack_import(pack_read(SMALL_PACK)).project
    node_create(project=project, actor=None, node=NodeData("N-extra", "FAQ", "Extra", "An expert's edit."))
    graph_before, db_before = app_store.export_graph(project.pk), _db_state()
    assert "N-extra" in {n.node_id for n in graph_before.nodes}  # the re-import would remove it

    def fail(**kwargs: Any) -> None:
        raise Boom("audit trail unavailable")

    monkeypatch.setattr(importer, "audit_record", fail)
    with pytest.raises(Boom):
        pack_import(pack_read(SMALL_PACK), project_slug=project.slug)

    assert app_store.export_graph(project.pk) == graph_before
    assert _db_state() == db_before


@pytest.mark.django_db
def test_a_proposal_whose_publication_fails_leaves_the_draft_as_it_was(
    app_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ontology import releases
    from ontology.models import Release
    from review.changeset import EdgeSetWeight
    from review.loop import application
    from review.loop.application import proposal_apply
    from taxonomy.packs import pack_import, pack_read

    project = pack_import(pack_read(SMALL_PACK)).project
    base = releases.release_publish(project=project, actor=None)
    edge = app_store.export_graph(project.pk).edges[0]
    ops = (EdgeSetWeight(edge.source, edge.target, edge.type, weight=0.05),)
    proposal = store_proposal(project, base, "EDGE_WEIGHT", ops, "APPROVED")
    graph_before = app_store.export_graph(project.pk)

    def fail(**kwargs: Any) -> None:
        raise RuleViolation([])

    monkeypatch.setattr(application, "release_store", fail)  # after the draft write, before the release
    with pytest.raises(RuleViolation):
        proposal_apply(proposal=proposal, actor=None)

    assert app_store.export_graph(project.pk) == graph_before
    assert Release.objects.filter(project=project).count() == 1
    proposal.refresh_from_db()
    assert proposal.status == "FAILED"


@pytest.mark.django_db
def test_inside_a_unit_reads_see_its_writes_and_other_connections_do_not(
    app_store: Any, project: Any, taxonomy: dict[str, str]
) -> None:
    from ontology.store.unit_of_work import graph_atomic

    app_store.replace_graph(project.pk, sample_graph())
    seen_elsewhere: list[bool] = []
    with graph_atomic():
        app_store.add_edge(project.pk, EdgeData("N-e", "N-f", "RELATED_TO", 0.4))
        assert any(e.target == "N-f" for e in app_store.neighbours(project.pk, "N-e", "out"))
        if app_store.backend == "neo4j":  # a second connection (another request) sees committed data only
            worker = threading.Thread(
                target=lambda: seen_elsewhere.append(
                    any(e.target == "N-f" for e in app_store.neighbours(project.pk, "N-e", "out"))
                )
            )
            worker.start()
            worker.join()
            assert seen_elsewhere == [False]
    assert any(e.target == "N-f" for e in app_store.neighbours(project.pk, "N-e", "out"))


@pytest.mark.django_db
def test_a_savepoint_rolls_back_one_part_and_keeps_the_rest(
    app_store: Any, project: Any, taxonomy: dict[str, str]
) -> None:
    from ontology.store.unit_of_work import graph_atomic, graph_savepoint

    app_store.replace_graph(project.pk, GraphData(nodes=sample_graph().nodes))
    with graph_atomic():
        app_store.add_edge(project.pk, EdgeData("N-a", "N-b", "LEADS_TO", 0.5))
        with pytest.raises(Boom), graph_savepoint(project.pk):
            app_store.add_edge(project.pk, EdgeData("N-b", "N-d", "ELABORATES", 0.5))
            raise Boom("this part fails")
        app_store.add_edge(project.pk, EdgeData("N-c", "N-b", "REQUIRES", 1.0))

    assert [e.key for e in app_store.export_graph(project.pk).edges] == [
        ("N-a", "N-b", "LEADS_TO"),
        ("N-c", "N-b", "REQUIRES"),
    ]


def _generations_stored(store: Any, project_id: int) -> tuple[set[int], int]:
    """The generations the project's nodes and aliases are stored under, and the head's."""
    from ontology.store.neo4j_backend import graph_generation

    with store.driver.session(database=store.database) as session:
        stored = {
            r["g"]
            for r in session.run(
                "MATCH (n) WHERE (n:OntologyNode OR n:NodeAlias) AND n.project_id = $p "
                "RETURN DISTINCT n.generation AS g",
                p=project_id,
            )
        }
        return stored, session.execute_read(graph_generation, project_id)


def _only_the_head_generation(store: Any, project_id: int) -> bool:
    stored, head = _generations_stored(store, project_id)
    return stored <= {head}


@pytest.fixture
def staged_store(project: Any, taxonomy: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The platform's store on a real Neo4j, staging every replacement (batches of two rows)."""
    import ontology.store.neo4j_backend as backend
    from tests.neo4j_server import neo4j_store, neo4j_wipe

    store = neo4j_store()
    store.init_schema()
    neo4j_wipe(store)
    store.staged_above = 0
    monkeypatch.setattr(backend, "REPLACE_BATCH_SIZE", 2)
    monkeypatch.setattr(backend, "batches", lambda rows: [rows[i : i + 2] for i in range(0, len(rows), 2)])
    try:
        yield store
    finally:
        neo4j_wipe(store)
        store.close()


@pytest.mark.neo4j
@pytest.mark.django_db
def test_a_large_replacement_is_staged_in_batches_and_swapped_whole(staged_store: Any, project: Any) -> None:
    small = GraphData(nodes=sample_graph().nodes[:3])
    staged_store.replace_graph(project.pk, small)
    staged_store.replace_graph(project.pk, sample_graph())

    exported = staged_store.export_graph(project.pk)
    assert {n.node_id for n in exported.nodes} == {n.node_id for n in sample_graph().nodes}
    assert len(exported.edges) == len(sample_graph().edges) and len(exported.aliases) == 1
    assert _only_the_head_generation(staged_store, project.pk)  # the replaced generation is gone


@pytest.mark.neo4j
@pytest.mark.django_db
def test_a_staged_replacement_that_fails_midway_leaves_the_old_graph(
    staged_store: Any, project: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ontology.store.neo4j_backend as backend

    staged_store.replace_graph(project.pk, sample_graph())
    before = staged_store.export_graph(project.pk)
    real_run, sent = backend._run, []

    def failing_run(tx: Any, name: str, **params: Any) -> Any:
        sent.append(name)
        if sent.count("CREATE_NODES") == 3:
            raise Boom("the server went away during the third batch")
        return real_run(tx, name, **params)

    monkeypatch.setattr(backend, "_run", failing_run)
    with pytest.raises(Boom):
        staged_store.replace_graph(project.pk, GraphData(nodes=sample_graph().nodes[:5]))
    monkeypatch.setattr(backend, "_run", real_run)

    assert sent.count("CREATE_NODES") >= 2  # several batches of the next generation had committed
    assert len(_generations_stored(staged_store, project.pk)[0]) == 2
    assert staged_store.export_graph(project.pk) == before
    staged_store.replace_graph(project.pk, GraphData(nodes=sample_graph().nodes[:5]))
    assert len(staged_store.export_graph(project.pk).nodes) == 5
    assert _only_the_head_generation(staged_store, project.pk)  # the next one cleared the leftovers


@pytest.mark.neo4j
@pytest.mark.django_db
def test_readers_see_the_old_graph_until_a_swap_that_writes_only_the_head(
    staged_store: Any, project: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ontology.store.neo4j_backend as backend

    staged_store.replace_graph(project.pk, sample_graph())
    before = staged_store.export_graph(project.pk)
    real_run, seen_midway, sent = backend._run, [], []

    def spying_run(tx: Any, name: str, **params: Any) -> Any:
        # the transaction itself, not its id(): a closed transaction's id can be reused by the next one
        sent.append((tx, name))
        result = real_run(tx, name, **params)
        if name == "CREATE_EDGES" and not seen_midway:  # every node batch of the new graph committed
            seen_midway.append(staged_store.export_graph(project.pk))
        return result

    monkeypatch.setattr(backend, "_run", spying_run)
    new = dataclasses.replace(
        before, nodes=tuple(dataclasses.replace(n, title=f"{n.title} (v2)") for n in before.nodes)
    )
    staged_store.replace_graph(project.pk, new)
    monkeypatch.setattr(backend, "_run", real_run)

    assert seen_midway == [before]
    assert staged_store.export_graph(project.pk) == new
    swap = [tx for tx, name in sent if name == "SET_GRAPH_GENERATION"]
    assert len(swap) == 1
    assert [name for tx, name in sent if tx is swap[0]] == ["SET_GRAPH_GENERATION"]
    assert _only_the_head_generation(staged_store, project.pk)


@pytest.mark.neo4j
@pytest.mark.django_db
def test_a_staged_replacement_inside_a_unit_rolls_back_with_it(staged_store: Any, project: Any) -> None:
    from ontology.store.unit_of_work import graph_atomic

    staged_store.replace_graph(project.pk, sample_graph())
    before = staged_store.export_graph(project.pk)
    import ontology.store as store_module

    saved = (store_module._store, store_module._store_pid)
    store_module._store, store_module._store_pid = staged_store, os.getpid()
    try:
        with pytest.raises(Boom), graph_atomic():
            staged_store.replace_graph(project.pk, GraphData(nodes=sample_graph().nodes[:2]))
            assert len(staged_store.export_graph(project.pk).nodes) == 2  # the unit sees the swap
            raise Boom("the database part failed")
        assert staged_store.export_graph(project.pk) == before
        with graph_atomic():
            staged_store.replace_graph(project.pk, GraphData(nodes=sample_graph().nodes[:2]))
    finally:
        store_module._store, store_module._store_pid = saved
    assert len(staged_store.export_graph(project.pk).nodes) == 2
    assert _only_the_head_generation(staged_store, project.pk)  # the old one went after the commit


@pytest.mark.neo4j
@pytest.mark.django_db
def test_emptying_a_large_graph_is_staged_too(
    staged_store: Any, project: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What decides staging is the larger of the new graph and the one it replaces: deleting a large
    graph in one transaction fails as writing one does."""
    staged_store.staged_above = 10
    staged_store.replace_graph(project.pk, sample_graph())  # 8 nodes + 6 edges + 1 alias: staged

    def single_transaction(*args: Any) -> None:
        raise AssertionError("a large graph was deleted in one transaction")

    monkeypatch.setattr(staged_store, "_replace", single_transaction)
    staged_store.replace_graph(project.pk, GraphData())

    assert staged_store.counts(project.pk)["nodes"] == 0
    assert _generations_stored(staged_store, project.pk)[0] == set()
