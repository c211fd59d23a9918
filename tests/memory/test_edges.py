"""Memory edges between episodic items (seed 003) and the reads they power: graph rerank, multi-hop
expansion, session reconstruction; and the offline loop's read-only door."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from memory import selectors, services
from memory.edges import expand, graph_rerank, session_reconstruct, temporal_weight
from memory.models import MemoryEdge

pytestmark = pytest.mark.django_db


def write(project: Any, text: str, **kwargs: Any) -> Any:
    defaults: dict[str, Any] = {"scope": "USER", "user_id": "u-1", "session_id": "s-1"}
    return services.memory_write(project=project, text=text, **{**defaults, **kwargs}).episode


def edges() -> set[tuple[int, int, str]]:
    return set(MemoryEdge.objects.values_list("source_id", "target_id", "type"))


def test_temporal_weight_decays_with_the_gap():
    assert temporal_weight(0) == 1.0
    assert temporal_weight(3600) == 0.5
    assert temporal_weight(36000) == pytest.approx(0.0909, abs=1e-4)


def test_a_session_gets_temporal_causal_categorical_referential_and_trajectory_edges(mem):
    start = timezone.now() - timedelta(hours=2)
    first = write(
        mem,
        "I prefer email for invoices.",
        label_ids=["L00003"],
        occurred_at=start,
        node_id="N-invoice-delivery",
    )
    second = write(
        mem,
        "Our invoices go to the finance team.",
        label_ids=["L00001"],
        occurred_at=start + timedelta(hours=1),
    )
    third = write(
        mem,
        "Actually, I prefer chat for invoices.",
        label_ids=["L00003"],
        occurred_at=start + timedelta(hours=1, seconds=30),
        node_id="N-invoice-delivery",
    )

    assert edges() == {
        (first.pk, second.pk, "TEMPORAL"),
        (second.pk, third.pk, "TEMPORAL"),
        (third.pk, first.pk, "REFERENTIAL"),
        (third.pk, first.pk, "CATEGORICAL"),
        (first.pk, third.pk, "TRAJECTORY"),
    }
    temporal = MemoryEdge.objects.get(source=first, type="TEMPORAL")
    assert temporal.weight == 0.5 and temporal.metadata == {"session_id": "s-1", "gap_seconds": 3600.0}
    assert MemoryEdge.objects.get(type="TRAJECTORY").metadata == {"session_id": "s-1", "turns": 3}
    assert [e.pk for e in session_reconstruct(second)] == [first.pk, second.pk, third.pk]


def test_a_correction_points_at_what_it_corrects(mem):
    original = write(mem, "I prefer email for invoices.", label_ids=["L00003"])
    marker = write(mem, "Sorry, I meant chat for invoices.", label_ids=["L00003"])
    explicit = write(
        mem,
        "Use chat, not email, for invoices.",
        label_ids=["L00003"],
        corrects_id=original.pk,
        session_id="s-2",
    )

    assert (marker.pk, original.pk, "CAUSAL") in edges()
    assert (explicit.pk, original.pk, "CAUSAL") in edges()
    assert MemoryEdge.objects.get(source=explicit, type="CAUSAL").metadata == {"correction_type": "explicit"}
    assert "CORRECTION" in explicit.flags


def test_graph_rerank_boosts_hits_connected_to_the_other_hits(mem):
    a = write(mem, "Invoices go to finance.", session_id="s-1")
    b = write(mem, "Finance pays invoices by transfer.", session_id="s-1")
    c = write(mem, "The deploy failed yesterday.", session_id="s-9")

    hits = graph_rerank([(c.pk, 0.80), (a.pk, 0.78), (b.pk, 0.70)], boost=0.3, k=3)

    assert [h.episode_id for h in hits] == [a.pk, b.pk, c.pk]
    assert hits[0].graph_score == 1.0 and hits[2].graph_score == 0.0
    assert hits[0].score == pytest.approx(0.7 * 0.78 + 0.3)


def test_expand_follows_edges_for_several_hops(mem):
    from arg_platform.embedder import get_embedder

    a = write(mem, "Invoices go to finance.")
    b = write(mem, "Finance pays invoices by transfer.")
    c = write(mem, "Transfers take two days, not one.", session_id="s-2", corrects_id=b.pk)

    hits = expand([a.pk], query=get_embedder().embed_one("how long do transfers take"), max_hops=2)

    assert [(h.episode_id, h.hops, h.via) for h in sorted(hits, key=lambda h: h.hops)] == [
        (b.pk, 1, "graph"),
        (c.pk, 2, "graph"),
    ]
    assert [h.episode_id for h in expand([a.pk], query=None, max_hops=1)] == [b.pk]


def test_memory_read_is_scoped_to_the_caller(mem):
    from arg_platform.embedder import get_embedder

    mine = write(mem, "I prefer email for invoices.", user_id="u-1")
    write(mem, "I prefer chat for invoices.", user_id="u-2", session_id="s-2")
    everyone = write(
        mem, "Invoices are issued on the first day of the month.", scope="GLOBAL", user_id="", session_id="g"
    )

    result = selectors.memory_read(
        project=mem,
        query=get_embedder().embed_one("how do I want my invoices"),
        user_id="u-1",
        k=5,
        max_hops=0,
    )

    assert {item.episode.pk for item in result.items} == {mine.pk, everyone.pk}
    assert result.items[0].episode.pk == mine.pk


def test_the_offline_loop_reads_the_episodes_of_its_window(mem):
    from review.loop.collection import UnifiedOutcome, episodes_for

    episode = write(mem, "Remember that invoices go to finance.", label_ids=["L00001"], signal="strong")

    (read,) = episodes_for(
        project=mem,
        window_start=timezone.now() - timedelta(hours=1),
        window_end=timezone.now() + timedelta(hours=1),
    )

    assert (read.episode_id, read.label_ids, read.scope, read.outcome) == (
        str(episode.pk),
        ("L00001",),
        "USER",
        UnifiedOutcome.CONFIRMED,
    )
    assert read.info_unit == str(episode.info_unit_id)
