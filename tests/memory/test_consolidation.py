"""Offline consolidation (ARG §4.2, ``memory.services.memory_consolidate``): private facts several users
wrote over time become one PII-free semantic (GLOBAL) InfoUnit through the Info Registry; too few users,
no recurrence across time, personal data or personal facts promote nothing; a second run writes nothing
twice; PROMOTION_CANDIDATE units are consumed."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from memory import services
from memory.models import EpisodicMemory, InfoUnit, InfoUnitEvent, RegistryAttempt

pytestmark = pytest.mark.django_db

FACT = "The invoice PDF export times out for invoices with more than 200 lines"
OTHER = "Billing settings: the payment terms field rejects 45 days"


def write(project: Any, text: str, user: str, session: str, days_ago: float, **kwargs: Any) -> Any:
    values: dict[str, Any] = {
        "scope": "USER",
        "user_id": user,
        "session_id": session,
        "label_ids": ["L00001"],
        "labels_trusted": True,
        "info_type": "Incident",
        "signal": "strong",
        "source": "pipeline",
        "provenance": {"role": "customer", "channel": "web" if user[-1] in "13579" else "chat"},
        "occurred_at": timezone.now() - timedelta(days=days_ago),
    }
    return services.memory_write(project=project, text=text, **{**values, **kwargs})


def users_write(project: Any, text: str, users: list[str], **kwargs: Any) -> None:
    """Each user writes ``text`` in two sessions two days apart."""
    for user in users:
        write(project, text, user, f"{user}-s1", 2.0, **kwargs)
        write(project, text, user, f"{user}-s2", 0.1, **kwargs)


def semantic_units(project: Any) -> list[InfoUnit]:
    return list(InfoUnit.objects.filter(project=project, scope="GLOBAL"))


def test_a_fact_three_users_wrote_over_time_becomes_one_semantic_unit(mem):
    users_write(mem, FACT, ["u-1", "u-2", "u-3"])

    stats = services.memory_consolidate(project=mem)

    assert (stats["patterns"], stats["promoted"], stats["reinforced"], stats["unsure"]) == (1, 1, 0, 0)
    [semantic] = semantic_units(mem)
    assert semantic.founding_text == FACT and semantic.info_key.key == "L00001|Incident|GLOBAL"
    episode = EpisodicMemory.objects.get(project=mem, source="offline")
    assert (episode.scope, episode.user_id, episode.session_id, episode.info_unit_id) == (
        "GLOBAL",
        "",
        "",
        semantic.pk,
    )
    support = episode.provenance["consolidation"]
    assert (support["subjects"], support["sessions"], support["episodes"], support["strong"]) == (3, 6, 6, 6)
    assert not any(u in str(episode.provenance) for u in ("u-1", "u-2", "u-3"))  # counts, never who
    private = InfoUnit.objects.filter(project=mem, scope="USER")
    assert private.count() == 3 and set(private.values_list("status", flat=True)) == {"ACTIVE"}
    assert InfoUnitEvent.objects.filter(kind="CONSOLIDATED", unit__in=private).count() == 3
    [read] = services_consolidated(mem)
    assert (read.unit_id, read.subjects, read.episodes, read.label_ids) == (semantic.pk, 3, 6, ("L00001",))


def services_consolidated(project: Any) -> list[Any]:
    from memory.selectors import consolidated_units

    return consolidated_units(project=project)


def test_two_users_are_too_few_sources(mem):
    users_write(mem, FACT, ["u-1", "u-2"])

    stats = services.memory_consolidate(project=mem)

    assert (stats["skipped_sources"], stats["promoted"]) == (1, 0)
    assert semantic_units(mem) == [] and services_consolidated(mem) == []


def test_recurrence_within_one_hour_is_not_stable(mem):
    for user in ("u-1", "u-2", "u-3"):
        write(mem, FACT, user, f"{user}-s1", 0.01)

    stats = services.memory_consolidate(project=mem)

    assert (stats["skipped_unstable"], stats["promoted"]) == (1, 0)
    assert semantic_units(mem) == []


def test_personal_data_is_never_aggregated(mem):
    text = "The invoice PDF export times out, write to me at {} about it"
    for n, user in enumerate(("u-1", "u-2", "u-3")):
        write(mem, text.format(f"person{n}@example.com"), user, f"{user}-s1", 2.0)
        write(mem, text.format(f"person{n}@example.com"), user, f"{user}-s2", 0.1)

    stats = services.memory_consolidate(project=mem)

    assert (stats["patterns"], stats["skipped_pii"], stats["promoted"]) == (1, 1, 0)
    assert semantic_units(mem) == []


def test_the_representative_is_a_clean_wording_when_one_exists(mem):
    users_write(mem, FACT, ["u-1", "u-2", "u-3"])
    write(mem, FACT + " (call me on +33 6 12 34 56 78)", "u-4", "u-4-s1", 1.0)

    services.memory_consolidate(project=mem)

    for unit in semantic_units(mem):
        assert "<" not in unit.founding_text and "+33" not in unit.founding_text
        assert "<" not in unit.canonical_text


def test_facts_about_one_person_are_never_aggregated(mem):
    users_write(
        mem, "I prefer to receive my invoices by email", ["u-1", "u-2", "u-3"], info_type="UserPreference"
    )

    stats = services.memory_consolidate(project=mem)

    assert stats["patterns"] == 0 and semantic_units(mem) == []


def test_a_second_run_writes_nothing_twice_and_new_evidence_reinforces(mem):
    users_write(mem, FACT, ["u-1", "u-2", "u-3"])
    services.memory_consolidate(project=mem)

    again = services.memory_consolidate(project=mem)  # a retried task

    assert (again["unchanged"], again["promoted"], again["reinforced"]) == (1, 0, 0)
    assert EpisodicMemory.objects.filter(project=mem, source="offline").count() == 1
    [semantic] = semantic_units(mem)
    assert semantic.evidence_count == 1
    write(mem, FACT, "u-4", "u-4-s1", 0.05)

    later = services.memory_consolidate(project=mem)

    assert (later["reinforced"], later["promoted"]) == (1, 0)
    semantic.refresh_from_db()
    assert semantic.evidence_count == 2
    assert services_consolidated(mem)[0].subjects == 4


def test_a_different_fact_under_the_same_key_is_staged_or_kept_apart_never_merged(mem):
    users_write(mem, FACT, ["u-1", "u-2", "u-3"])
    users_write(
        mem, "The invoice PDF export times out for invoices with more than 900 lines", ["u-4", "u-5", "u-6"]
    )

    stats = services.memory_consolidate(project=mem)

    # 200 and 900 lines are different facts: two patterns, never one semantic unit holding both
    assert stats["patterns"] == 2
    texts = sorted(u.founding_text for u in semantic_units(mem))
    assert FACT in texts and all(len(u.evidence.all()) == 1 for u in semantic_units(mem))
    staged = RegistryAttempt.objects.filter(project=mem, episode__source="offline", decision="UNSURE")
    assert stats["promoted"] + stats["unsure"] == 2 and staged.count() == stats["unsure"]


def test_a_promotion_candidate_is_consumed_and_makes_its_pattern_stable(mem):
    for user in ("u-1", "u-2", "u-3"):  # all within the hour: not stable by recurrence alone
        write(mem, FACT, user, f"{user}-s1", 0.01)
        write(mem, FACT, user, f"{user}-s2", 0.005)
    unit = InfoUnit.objects.filter(project=mem, scope="USER", subject="u-1").get()
    unit.distinct_sources = 2  # as if confirmed from two places (info_unit_promote's bar)
    unit.save(update_fields=["distinct_sources"])
    services.info_unit_promote(unit=unit, actor="reviewer")

    stats = services.memory_consolidate(project=mem)

    unit.refresh_from_db()
    assert (stats["promoted"], stats["candidates_handled"], unit.status) == (1, 1, "ACTIVE")
    again = services.memory_consolidate(project=mem)
    assert (again["candidates_handled"], again["promoted"], again["skipped_unstable"]) == (0, 0, 1)


def test_a_global_promotion_candidate_is_marked_handled(mem):
    for user in ("u-1", "u-2"):
        write(mem, FACT, user, f"{user}-s1", 1.0, scope="GLOBAL")
    unit = InfoUnit.objects.get(project=mem, scope="GLOBAL")
    services.info_unit_promote(unit=unit, actor="reviewer")

    stats = services.memory_consolidate(project=mem)

    unit.refresh_from_db()
    assert (stats["candidates_handled"], unit.status) == (1, "ACTIVE")
    assert [c.unit_id for c in services_consolidated(mem)] == [unit.pk]
    assert services.memory_consolidate(project=mem)["candidates_handled"] == 0


def test_the_operator_sets_the_bars_and_one_person_is_never_enough(mem, settings):
    from django.core.exceptions import ImproperlyConfigured

    from memory.services import ConsolidationParams

    users_write(mem, FACT, ["u-1", "u-2"])
    settings.MEMORY_CONSOLIDATION = {"min_subjects": 2}

    stats = services.memory_consolidate(project=mem)

    assert (stats["promoted"], stats["params"]["min_subjects"], stats["params"]["min_span_hours"]) == (
        1,
        2,
        24.0,
    )
    assert [u.founding_text for u in semantic_units(mem)] == [FACT]
    for bad in ({"min_subjects": 1}, {"min_subjects": "3"}, {"window_days": 0}, {"min_span": 1}):
        with pytest.raises(ImproperlyConfigured, match="MEMORY_CONSOLIDATION"):
            ConsolidationParams.checked(bad)
