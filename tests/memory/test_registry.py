"""The guarded MemoryWrite and the Info Registry through ``memory_write``: MATCH / NEW / UNSURE with
the mandatory log, label gating, the Memory Guard, bad input refused with nothing written, concurrent
duplicates, the taxonomy-safe InfoKey, anti-confirmation bias and the UNSURE staging verbs."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction

from arg_platform.errors import RuleViolation
from memory import registry, selectors, services
from memory.models import (
    EpisodicMemory,
    InfoEvidence,
    InfoKey,
    InfoUnit,
    InfoUnitEvent,
    MemoryEdge,
    RegistryAttempt,
)

pytestmark = pytest.mark.django_db

FACT = "Invoices are emailed to the billing contact on the 1st of every month."
PARAPHRASE = "On the first day of each month the invoice is sent by email to the billing contact."
OTHER_DAY = "Invoices are emailed to the billing contact on the 15th of every month."
GREY_A = "The customer wants maintenance windows on Sunday nights."
GREY_B = "Schedule this customer's maintenance for Sunday night."


def write(project: Any, text: str, **kwargs: Any) -> services.MemoryWriteResult:
    defaults: dict[str, Any] = {
        "scope": "USER",
        "user_id": "u-1",
        "label_ids": ["L00001"],
        "session_id": "s-1",
    }
    return services.memory_write(project=project, text=text, **{**defaults, **kwargs})


def counts() -> tuple[int, ...]:
    return tuple(
        m.objects.count()
        for m in (EpisodicMemory, InfoKey, InfoUnit, InfoEvidence, RegistryAttempt, MemoryEdge)
    )


def test_a_paraphrase_matches_and_becomes_evidence(mem):
    first = write(mem, FACT)
    second = write(mem, PARAPHRASE, user_id="u-1", session_id="s-2")

    assert first.decision == "NEW" and second.decision == "MATCH"
    assert second.unit.pk == first.unit.pk
    unit = InfoUnit.objects.get()
    assert (unit.evidence_count, unit.weak_signals, unit.strong_signals) == (2, 2, 0)
    assert unit.reliability <= 0.5  # one source, weak signals: repetition is not truth
    assert (
        unit.canonical_statement == "invoices are emailed to the billing contact on the 1st of every 1 month"
    )
    assert [e.episode_id for e in unit.evidence.order_by("id")] == [first.episode.pk, second.episode.pk]
    attempt = second.registry.attempt
    assert attempt.info_key.key == f"L00001|{unit.info_type}|USER:u-1"
    assert attempt.label_path_current == "Billing › Invoices"
    assert attempt.decision == "MATCH" and attempt.method == "VECTOR_ONLY"
    assert attempt.top_k[0]["unit_id"] == unit.pk and attempt.top_k[0]["verdict"] == "SAME"
    assert attempt.top_k[0]["cosine"] > 0.9
    assert attempt.latency_ms > 0


def test_same_wording_with_another_number_is_a_new_unit_and_the_reason_is_logged(mem):
    write(mem, FACT)
    other = write(mem, OTHER_DAY)

    assert other.decision == "NEW"
    assert InfoUnit.objects.count() == 2
    assert other.registry.attempt.method == "VECTOR+RULES"
    assert any("ordinal" in reason for reason in other.registry.attempt.top_k[0]["reasons"])


def test_the_grey_zone_is_staged_for_review(mem):
    first = write(mem, GREY_A, info_type="UserPreference")
    grey = write(mem, GREY_B, info_type="UserPreference")

    assert grey.decision == "UNSURE" and grey.unit is None
    attempt = grey.registry.attempt
    assert (attempt.review_status, attempt.candidate_unit_id) == ("PENDING", first.unit.pk)
    assert list(selectors.registry_unsure_list(project=mem)) == [attempt]
    assert InfoUnit.objects.count() == 1 and grey.episode.info_unit is None


def test_resolving_same_attaches_evidence_and_counts_a_strong_signal(mem, reviewer):
    first = write(mem, GREY_A, info_type="UserPreference")
    attempt = write(mem, GREY_B, info_type="UserPreference").registry.attempt

    resolved = services.registry_unsure_resolve(
        attempt=attempt, decision="SAME", actor=reviewer, reason="same window"
    )

    assert (resolved.review_status, resolved.unit_id, resolved.resolved_by) == (
        "SAME",
        first.unit.pk,
        reviewer,
    )
    unit = InfoUnit.objects.get()
    assert (unit.evidence_count, unit.strong_signals) == (2, 1)
    assert unit.evidence.order_by("-id").first().method == "REVIEW"
    assert unit.events.filter(kind="REVIEWED", actor_name=reviewer.username).count() == 1
    assert list(selectors.registry_unsure_list(project=mem)) == []
    with pytest.raises(RuleViolation) as refused:
        services.registry_unsure_resolve(attempt=attempt, decision="DIFFERENT", actor=reviewer)
    assert refused.value.violations[0].rule == "memory.review_state"
    assert InfoUnit.objects.count() == 1


def test_resolving_different_founds_a_new_unit(mem, reviewer):
    write(mem, GREY_A, info_type="UserPreference")
    grey = write(mem, GREY_B, info_type="UserPreference")

    resolved = services.registry_unsure_resolve(
        attempt=grey.registry.attempt, decision="DIFFERENT", actor=reviewer
    )

    assert resolved.review_status == "DIFFERENT"
    assert InfoUnit.objects.count() == 2
    assert EpisodicMemory.objects.get(pk=grey.episode.pk).info_unit_id == resolved.unit_id
    with pytest.raises(RuleViolation) as refused:
        services.registry_unsure_resolve(attempt=grey.registry.attempt, decision="MAYBE", actor=reviewer)
    assert refused.value.violations[0].rule == "memory.review_decision"


def test_without_a_validated_label_the_write_is_episodic_only(mem):
    result = write(mem, "Remember that our fiscal year starts in April.", label_ids=[])

    assert result.registry is None
    assert result.flags == ("MISSING_LABEL_CANDIDATE",)
    assert result.episode.semantic_candidate is False
    assert (InfoKey.objects.count(), RegistryAttempt.objects.count()) == (0, 0)


def test_pii_is_scrubbed_before_anything_is_stored(mem):
    result = write(mem, "My name is Jane Doe, reach me at jane.doe@example.com about invoices every month.")

    assert result.pii_types == ("EMAIL", "PERSON")
    assert result.episode.text == "My name is <PERSON>, reach me at <EMAIL> about invoices every month."
    assert "PII_SCRUBBED" in result.flags
    unit = InfoUnit.objects.get()
    assert "jane" not in unit.canonical_text.lower() and "jane" not in unit.founding_text.lower()
    assert result.episode.pii == [
        {"type": "PERSON", "detector": "person_cue"},
        {"type": "EMAIL", "detector": "email_pattern"},
    ]


@pytest.mark.parametrize(
    ("kwargs", "rule", "field"),
    [
        ({"scope": ""}, "memory.scope_missing", "scope"),
        ({"scope": "TEAM"}, "memory.scope", "scope"),
        ({"user_id": ""}, "memory.subject_missing", "user_id"),
        ({"scope": "ORG"}, "memory.subject_missing", "org_id"),
        ({"label_ids": ["L09999"]}, "memory.label_unknown", "labels"),
        ({"label_ids": ["L00005"]}, "memory.label_not_active", "labels"),
        ({"label_ids": ["L00002", "L00003"]}, "memory.labels_incompatible", "labels"),
        ({"text": "x" * 2001}, "memory.fact_size", "text"),
        ({"text": "   "}, "memory.fact_empty", "text"),
        (
            {"scope": "GLOBAL", "text": "Escalations go to maria.lopez@acme.example."},
            "memory.pii_in_global",
            "text",
        ),
        ({"node_id": "N-nope"}, "memory.node_unknown", "node_id"),
        ({"info_type": "Gossip"}, "memory.info_type", "info_type"),
        ({"allowed_scopes": {"ORG"}}, "memory.scope_not_allowed", "scope"),
        ({"corrects_id": 999999}, "memory.corrects_unknown", "corrects"),
    ],
)
def test_bad_input_is_refused_with_the_rule_and_field_and_nothing_is_written(mem, kwargs, rule, field):
    before = counts()
    with pytest.raises(RuleViolation) as refused:
        write(mem, kwargs.pop("text", FACT), **kwargs)

    assert (refused.value.violations[0].rule, refused.value.violations[0].field) == (rule, field)
    assert counts() == before


def test_a_global_fact_without_pii_is_fine(mem):
    result = write(mem, "The status page lives at status.acme.example.", scope="GLOBAL", user_id="")

    assert (result.episode.scope, result.episode.subject, result.decision) == ("GLOBAL", "", "NEW")


def test_two_users_never_share_an_infokey(mem):
    write(mem, FACT, user_id="u-1")
    other = write(mem, FACT, user_id="u-2")

    assert other.decision == "NEW"
    assert sorted(InfoKey.objects.values_list("subject", flat=True)) == ["u-1", "u-2"]


def test_the_unique_digest_turns_a_racing_new_into_a_match(mem, monkeypatch):
    first = write(mem, FACT)
    # as if the other writer's unit were not visible yet: recall finds nothing, the insert collides
    monkeypatch.setattr(registry.RecallIndex, "for_key", lambda self, info_key: registry._KeyIndex())

    second = write(mem, FACT, session_id="s-2")

    assert second.decision == "MATCH" and second.registry.attempt.method == "CANONICAL_EXACT"
    assert second.unit.pk == first.unit.pk and InfoUnit.objects.count() == 1
    with pytest.raises(IntegrityError), transaction.atomic():
        InfoUnit.objects.create(
            project=mem,
            info_key=first.unit.info_key,
            info_type=first.unit.info_type,
            scope="USER",
            label_signature="L00001",
            canonical_text="x",
            canonical_statement="x",
            canonical_digest=first.unit.canonical_digest,
            founding_text="x",
            embedding=b"",
        )


@pytest.mark.django_db(transaction=True)
def test_concurrent_duplicate_writes_make_one_infounit(mem):
    barrier = threading.Barrier(2)
    results: list[Any] = []
    errors: list[BaseException] = []

    def writer(session: str) -> None:
        try:
            barrier.wait(timeout=10)
            results.append(write(mem, FACT, session_id=session))
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=writer, args=(f"s-{i}",)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert errors == []
    assert sorted(r.decision for r in results) == ["MATCH", "NEW"]
    assert InfoUnit.objects.count() == 1
    assert InfoUnit.objects.get().evidence_count == 2
    assert EpisodicMemory.objects.count() == 2 and RegistryAttempt.objects.count() == 2


def test_moving_a_label_updates_labelpath_current_but_never_the_infokey(mem, expert):
    from taxonomy.services import label_move

    first = write(mem, FACT, label_ids=["L00002"])
    key = first.unit.info_key.key
    assert first.unit.label_path_current == "Billing › Invoices › Billing settings"

    label_move(label=mem.labels.get(label_id="L00002"), actor=expert, parent_id=None, cluster_key="account")
    changed = services.info_key_label_paths_refresh(project=mem)
    later = write(mem, PARAPHRASE, label_ids=["L00002"], session_id="s-2")

    assert changed == 1
    unit = InfoUnit.objects.get()
    assert later.decision == "MATCH" and later.unit.pk == unit.pk
    assert InfoKey.objects.get().key == key == "L00002|" + first.unit.info_type + "|USER:u-1"
    assert unit.label_path_current == "Account › Billing settings"
    assert InfoKey.objects.get().label_path_current == "Account › Billing settings"
    assert later.registry.attempt.label_path_current == "Account › Billing settings"
    assert unit.events.filter(kind="LABEL_PATH").count() == 1


def test_repeated_weak_signals_never_promote(mem, reviewer):
    for session in range(6):
        write(mem, FACT, session_id=f"s-{session}", user_id="u-1")
    unit = InfoUnit.objects.get()
    assert unit.weak_signals == 6

    with pytest.raises(RuleViolation) as refused:
        services.info_unit_promote(unit=unit, actor=reviewer)

    assert [v.rule for v in refused.value.violations] == ["memory.weak_signals_only", "memory.single_source"]
    assert InfoUnit.objects.get().status == "ACTIVE"
    assert unit.events.filter(kind="PROMOTION_REFUSED").count() == 1


def test_strong_signals_from_two_sources_allow_promotion(mem, reviewer):
    write(
        mem,
        "The billing contact is the finance manager.",
        signal="strong",
        user_id="u-1",
        scope="ORG",
        org_id="o-1",
    )
    write(
        mem,
        "The billing contact is the finance manager.",
        signal="strong",
        user_id="u-2",
        scope="ORG",
        org_id="o-1",
    )
    unit = InfoUnit.objects.get()

    promoted = services.info_unit_promote(unit=unit, actor=reviewer, reason="confirmed twice")

    assert (unit.strong_signals, unit.distinct_sources) == (2, 2)
    assert promoted.status == "PROMOTION_CANDIDATE"
    assert InfoUnit.objects.get().reliability > 0.6
    assert InfoUnitEvent.objects.filter(unit=unit, kind="PROMOTION").count() == 1


def test_label_signature_set_mode_uses_the_sorted_labelid_set(mem, settings):
    settings.MEMORY_LABEL_SIGNATURE = "set"

    result = write(mem, FACT, label_ids=["L00004", "L00001"])

    assert result.registry.attempt.info_key.label_signature == "L00001+L00004"
    assert result.registry.attempt.info_key.primary_label_id == ""
