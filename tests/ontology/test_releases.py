"""Releases freeze the draft; the online path reads only the active release's snapshot."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import numpy as np
import pytest

from arg_platform.errors import RuleViolation
from inference import runtime
from ontology import snapshot_registry
from ontology.models import Release
from ontology.releases import (
    PublishOptions,
    draft_publish,
    release_activate,
    release_diff,
    release_publish,
    release_snapshot,
)
from ontology.snapshot_registry import SnapshotRegistry, _Entry
from ontology.store import get_graph_store
from ontology.store.port import EdgeData
from taxonomy.models import Label, Role
from taxonomy.packs import pack_import, pack_read
from taxonomy.selectors import label_get
from taxonomy.services import label_update
from tests.taxonomy.test_packs import SMALL

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def tiny():
    return pack_import(pack_read(SMALL)).project


def test_publish_freezes_everything_under_a_version_and_checksum(tiny):
    release = release_publish(project=tiny, actor=None)
    assert (release.version, release.is_active) == (1, True)
    assert len(release.checksum) == 64
    assert release.counts["nodes"] == 3 and release.counts["edges"] == 1
    snapshot = release_snapshot(release=release)
    assert snapshot.checksum == release.checksum
    assert snapshot.node_ids == ("N-invoice-download", "N-oos", "N-resend-invoice")
    assert snapshot.embeddings.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(snapshot.embeddings, axis=1), 1.0, atol=1e-5)
    assert not snapshot.embeddings.flags.writeable
    idx, types, weights = snapshot.neighbours(snapshot.position["N-invoice-download"])
    assert [snapshot.node_ids[i] for i in idx] == ["N-resend-invoice"]
    assert snapshot.edge_type_name(types[0]) == "LEADS_TO"
    assert weights[0] == pytest.approx(0.7)
    assert list(snapshot.label_nodes["L00002"]) == [0, 2]
    entries = snapshot.documents["label_index"]["entries"]
    assert [e["label_id"] for e in entries] == ["L00001", "L00002", "L00003"]  # DEPRECATED L00004 not indexed
    assert snapshot.documents["label_embeddings"].shape == (3, 384)
    assert set(snapshot.documents["signals"]["nodes"]) == set(snapshot.node_ids)
    assert snapshot.community is not None and snapshot.community.shape == (3,)
    assert snapshot.documents["policies"][0]["key"] == "customer"


def test_checksum_is_reproducible_for_the_same_draft(tiny):
    first = release_publish(project=tiny, actor=None)
    second = release_publish(project=tiny, actor=None, options=PublishOptions(force=True))
    assert second.version == 2
    assert second.checksum == first.checksum
    assert second.content_digest == first.content_digest
    assert list(Release.objects.filter(project=tiny, is_active=True)) == [second]


def test_publishing_a_draft_identical_to_the_active_release_is_a_no_op_that_says_so(tiny, make_user):
    expert = make_user("e1")
    first, created = draft_publish(project=tiny, actor=None)
    assert created and (first.source, first.parent) == (Release.Source.DRAFT, None)
    again, created = draft_publish(project=tiny, actor=None)
    assert (again.pk, created) == (first.pk, False)
    assert Release.objects.filter(project=tiny).count() == 1
    # an edit makes the draft differ; undoing it makes it identical again
    label = label_get(project=tiny, label_id="L00002")
    label_update(label=label, actor=expert, name="Get an invoice PDF")
    second, created = draft_publish(project=tiny, actor=None)
    assert created and second.version == 2 and second.parent_id == first.pk
    label_update(label=label_get(project=tiny, label_id="L00002"), actor=expert, name="Invoices")
    label_update(label=label_get(project=tiny, label_id="L00002"), actor=expert, name="Get an invoice PDF")
    assert draft_publish(project=tiny, actor=None) == (second, False)


def test_expert_edits_go_to_the_draft_not_the_active_release(tiny, make_user):
    expert = make_user("e1")
    release = release_publish(project=tiny, actor=expert)
    registry = SnapshotRegistry(check_interval_s=0)
    before = registry.pin(tiny.pk)
    label_update(label=label_get(project=tiny, label_id="L00002"), actor=expert, name="Get an invoice PDF")
    get_graph_store().add_edge(tiny.pk, EdgeData("N-resend-invoice", "N-oos", "RELATED_TO", 0.2))
    after = registry.pin(tiny.pk)
    assert after is before  # same release, same frozen object
    assert after.edge_count == 1
    assert [x["name"] for x in after.documents["labels"] if x["id"] == "L00002"] == ["Download invoice"]
    assert Release.objects.get(pk=release.pk).is_active


def test_rollback_reactivates_an_earlier_release_and_diff_shows_changes(tiny, make_user):
    expert = make_user("e2")
    v1 = release_publish(project=tiny, actor=expert)
    label_update(label=label_get(project=tiny, label_id="L00002"), actor=expert, name="Get an invoice PDF")
    get_graph_store().add_edge(tiny.pk, EdgeData("N-resend-invoice", "N-oos", "RELATED_TO", 0.2))
    v2 = release_publish(project=tiny, actor=expert)
    registry = SnapshotRegistry(check_interval_s=0)
    assert registry.pin(tiny.pk).version == 2
    diff = release_diff(old=v1, new=v2)
    assert diff.labels_changed == (("L00002", ("name",)),)
    assert diff.edges_added == (("N-resend-invoice", "N-oos", "RELATED_TO"),)
    assert not diff.nodes_added and not diff.edges_removed
    release_activate(release=v1, actor=expert, reason="bad wording")
    pinned = registry.pin(tiny.pk)
    assert (pinned.version, pinned.edge_count) == (1, 1)
    assert Release.objects.get(pk=v2.pk).is_active is False


def test_publishing_an_invalid_draft_is_refused_and_nothing_changes(tiny):
    v1 = release_publish(project=tiny, actor=None)
    # a draft can only become invalid behind the services' back (e.g. a raw SQL fix-up)
    Label.objects.filter(project=tiny, label_id="L00002").update(status="DEPRECATED")
    with pytest.raises(RuleViolation) as info:
        release_publish(project=tiny, actor=None)
    assert {v.rule for v in info.value.violations} == {"release.invalid_draft"}
    assert "graph.attach_label_deprecated" in info.value.message
    assert list(Release.objects.filter(project=tiny)) == [v1]


def test_a_request_never_sees_a_half_swapped_release(tiny, make_user):
    expert = make_user("e3")
    v1 = release_publish(project=tiny, actor=expert)
    get_graph_store().add_edge(tiny.pk, EdgeData("N-resend-invoice", "N-oos", "RELATED_TO", 0.2))
    v2 = release_publish(project=tiny, actor=expert)
    expected = {1: (1, v1.checksum), 2: (2, v2.checksum)}
    snapshots = {1: release_snapshot(release=v1), 2: release_snapshot(release=v2)}
    registry = SnapshotRegistry(
        check_interval_s=0, loader=lambda _p, rid: snapshots[1 if rid == v1.pk else 2]
    )
    active = {"id": (v2.pk, v2.checksum)}
    registry._active = lambda _pid: active["id"]  # the swapper below flips the active release
    errors: list[str] = []
    seen: set[int] = set()
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            snapshot = registry.pin(tiny.pk)
            seen.add(snapshot.version)
            edges, checksum = expected[snapshot.version]
            # everything read from one pinned object belongs to one release
            for _ in range(50):
                if snapshot.edge_count != edges or snapshot.checksum != checksum:
                    errors.append(f"mixed view: v{snapshot.version} {snapshot.edge_count} edges")

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for i in range(400):
        active["id"] = (v1.pk, v1.checksum) if i % 2 else (v2.pk, v2.checksum)
        time.sleep(0.001)
    stop.set()
    for t in threads:
        t.join()
    assert errors == []
    assert seen == {1, 2}  # the swaps really happened under the readers
    assert registry.loads >= 2


def test_a_reused_release_id_with_another_checksum_is_not_served_from_the_registry(tiny, make_user):
    """SQLite reuses the id of a deleted row: the registry must tell releases apart by checksum too."""
    v1 = release_publish(project=tiny, actor=make_user("e4"))
    stale = release_snapshot(release=v1)
    fresh = replace(stale, checksum="0" * len(stale.checksum))
    registry = SnapshotRegistry(check_interval_s=0, loader=lambda _p, _rid: fresh)
    registry._entries[tiny.pk] = _Entry(replace(stale, checksum="f" * len(stale.checksum)), 0.0)
    registry._active = lambda _pid: (v1.pk, fresh.checksum)

    assert registry.pin(tiny.pk) is fresh
    assert registry.loads == 1


def test_refresh_loads_each_newly_active_release_so_a_pin_loads_nothing(tiny, make_user):
    expert = make_user("e5")
    registry = SnapshotRegistry(check_interval_s=60)
    assert registry.refresh() == 0  # nothing published yet
    v1 = release_publish(project=tiny, actor=expert)
    assert registry.refresh() == 1
    assert registry.pin(tiny.pk, force_check=True).release_id == v1.pk
    assert registry.loads == 1  # the pin found it loaded
    assert registry.refresh() == 0  # nothing new
    get_graph_store().add_edge(tiny.pk, EdgeData("N-resend-invoice", "N-oos", "RELATED_TO", 0.2))
    v2 = release_publish(project=tiny, actor=expert)
    assert registry.refresh() == 1
    assert registry.pin(tiny.pk, force_check=True).release_id == v2.pk
    assert registry.loads == 2


def test_the_refresher_builds_the_runtime_before_a_request_asks(tiny, make_user, token_client, monkeypatch):
    """A web worker's refresher thread loads the newly active release and builds its runtime; the
    request that follows is served from them (building either would fail here)."""
    runtime.runtime_cache_clear()
    snapshot_registry.registry.clear()
    release = release_publish(project=tiny, actor=make_user("e6"))
    stop = threading.Event()
    thread = snapshot_registry.registry.refresher_start(interval_s=0.05, stop=stop)
    try:
        deadline = time.monotonic() + 60
        while (tiny.pk, release.pk, release.checksum) not in runtime._cache:
            assert time.monotonic() < deadline, "the refresher never built the runtime"
            time.sleep(0.05)
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not thread.is_alive()

    def built_on_a_request(*_args: object) -> None:
        raise AssertionError("built on a request")

    monkeypatch.setattr(runtime.ReleaseRuntime, "build", built_on_a_request)
    monkeypatch.setattr(snapshot_registry.SnapshotRegistry, "_load", built_on_a_request)
    client = token_client(tiny, role=Role.objects.filter(project=tiny).first())
    response = client.post("/api/v1/infer", {"prompt": "resend my invoice"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["release"]["id"] == release.pk
