"""New semantic nodes from episodic memory: InfoUnit-first, and the slow-poisoning protection."""

from __future__ import annotations

from typing import Any

import pytest

from review.loop.collection import Episode, UnifiedOutcome
from tests.review.test_loop_generators import collection_of

FACT = "Invoices can be paid by bank transfer in Swiss francs from the payment settings."


def _episode(n: int, *, source: str, segment: str, outcome: UnifiedOutcome, text: str = FACT) -> Episode:
    return Episode(
        episode_id=str(n),
        text=text,
        label_ids=("L00002",),
        info_type="ProductConfig",
        scope="GLOBAL",
        source=source,
        segment=segment,
        outcome=outcome,
        flags=(),
        info_unit="7",
    )


def _generate(small_release: Any, episodes: list[Episode]) -> list[Any]:
    from review.loop.generators import memory
    from review.loop.generators.base import GeneratorContext
    from review.loop.params import loop_params
    from review.loop.shadow import BaseRelease

    project, release = small_release
    collection = collection_of([])
    collection.episodes = episodes
    context = GeneratorContext(
        project=project, base=BaseRelease.load(release), collection=collection, params=loop_params(), seed=1
    )
    return memory.generate(context)


@pytest.mark.django_db
def test_a_recurring_confirmed_fact_from_diverse_users_becomes_a_node_proposal(small_release):
    segments = ("member|web", "member|chat", "admin|email")
    episodes = [
        _episode(n, source=f"u{n}", segment=segments[n % 3], outcome=UnifiedOutcome.CONFIRMED)
        for n in range(6)
    ]

    [candidate] = _generate(small_release, episodes)

    assert candidate.kind == "NODE_ADD"
    node = candidate.ops[0]
    assert (node.type, node.labels, node.clusters, node.chunk) == (
        "InfoStable",
        ("L00002",),
        ("billing",),
        FACT,
    )
    assert candidate.guard["no_autocommit"] is False
    assert (candidate.evidence["strong"], candidate.evidence["sources"]) == (6, 6)


@pytest.mark.django_db
def test_repeated_weak_episodes_from_one_segment_can_never_be_auto_committed(small_release):
    episodes = [
        _episode(n, source=f"u{n % 4}", segment="member|web", outcome=UnifiedOutcome.UNCERTAIN)
        for n in range(40)
    ]

    [candidate] = _generate(small_release, episodes)

    assert candidate.guard["no_autocommit"] is True
    assert "dominated by uncertain outcomes" in candidate.guard["reason"]
    assert "too homogeneous" in candidate.guard["reason"]


@pytest.mark.django_db
def test_repetition_from_a_single_source_is_not_a_fact(small_release):
    episodes = [
        _episode(n, source="u1", segment="member|web", outcome=UnifiedOutcome.CONFIRMED) for n in range(20)
    ]

    assert _generate(small_release, episodes) == []


@pytest.mark.django_db
def test_a_fact_the_graph_already_carries_is_not_proposed_again(small_release):
    known = "Invoices are in Billing › Invoices as PDF."  # the chunk of N-invoice-download
    segments = ("member|web", "member|chat", "admin|email")
    episodes = [
        _episode(n, source=f"u{n}", segment=segments[n % 3], outcome=UnifiedOutcome.CONFIRMED, text=known)
        for n in range(6)
    ]

    assert _generate(small_release, episodes) == []


@pytest.mark.django_db
def test_no_episodes_means_no_candidates(small_release):
    assert _generate(small_release, []) == []


@pytest.mark.django_db
def test_a_consolidated_unit_becomes_a_proposal_only_with_enough_distinct_users(small_release):
    """The generator's source-diversity gate on memory consolidation's semantic units: the sources are
    the distinct users who wrote the fact, not its episodes."""
    from memory.models import InfoUnit
    from memory.services import info_unit_promote, memory_consolidate, memory_write

    project, _ = small_release
    fact = "The invoice PDF export times out for invoices with more than 200 lines"

    def users_write(users: list[str]) -> None:
        for user in users:
            for session in ("s1", "s2", "s3"):
                memory_write(
                    project=project,
                    text=fact,
                    scope="GLOBAL",
                    user_id=user,
                    session_id=f"{user}-{session}",
                    label_ids=["L00001"],
                    labels_trusted=True,
                    info_type="Incident",
                    signal="strong",
                )

    def promoted_and_consolidated() -> None:
        info_unit_promote(unit=InfoUnit.objects.get(project=project, scope="GLOBAL"), actor="reviewer")
        assert memory_consolidate(project=project)["candidates_handled"] == 1

    users_write(["u-1", "u-2"])  # six episodes, two users
    promoted_and_consolidated()

    assert _generate(small_release, []) == []

    users_write(["u-3"])
    promoted_and_consolidated()

    [candidate] = _generate(small_release, [])
    assert candidate.kind == "NODE_ADD" and candidate.evidence["consolidated"] is True
    assert (candidate.evidence["sources"], candidate.evidence["episodes"]) == (3, 9)
    assert candidate.ops[0].chunk == fact
