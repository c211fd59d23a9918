"""Undoing a wrong merge: a reviewer takes a piece of evidence off an InfoUnit; its fact founds a unit
of its own, the old unit's counters are recounted, the MATCH attempt becomes a labelled false merge —
through the service and through the InfoUnit page (reviewers only, a reason required)."""

from __future__ import annotations

from typing import Any

import pytest

from arg_platform.errors import NotFound, RuleViolation
from memory import services
from memory.models import EpisodicMemory, InfoEvidence, InfoKey, InfoUnit, InfoUnitEvent, RegistryAttempt

pytestmark = pytest.mark.django_db

FACT = "Invoices are emailed to the billing contact on the 1st of every month."
PARAPHRASE = "On the first day of each month the invoice is sent by email to the billing contact."
LATER = "Invoices are emailed to the billing contact on the first of each month."


def write(project: Any, text: str, **kwargs: Any) -> services.MemoryWriteResult:
    common: dict[str, Any] = {"scope": "USER", "user_id": "u-1", "label_ids": ["L00001"]}
    return services.memory_write(project=project, text=text, **{**common, **kwargs})


@pytest.fixture
def merged(mem: Any) -> tuple[services.MemoryWriteResult, services.MemoryWriteResult]:
    first = write(mem, FACT, session_id="s-1")
    second = write(mem, PARAPHRASE, session_id="s-2", signal="strong")
    assert (first.decision, second.decision) == ("NEW", "MATCH")
    return first, second


def test_detaching_founds_a_unit_recounts_the_old_one_and_labels_the_attempt(mem, merged, reviewer):
    first, second = merged
    old = InfoUnit.objects.get()
    assert (old.evidence_count, old.strong_signals) == (2, 1)
    evidence = InfoEvidence.objects.get(episode=second.episode)

    new = services.info_evidence_detach(evidence=evidence, actor=reviewer, reason="another billing rule")

    old.refresh_from_db()
    assert new.pk != old.pk and new.info_key_id == old.info_key_id
    assert new.founding_text == PARAPHRASE
    assert (old.evidence_count, old.strong_signals, old.weak_signals, old.distinct_sources) == (1, 0, 1, 1)
    assert [e.episode_id for e in old.evidence.all()] == [first.episode.pk]
    assert [(e.episode_id, e.method) for e in new.evidence.all()] == [(second.episode.pk, "REVIEW")]
    assert EpisodicMemory.objects.get(pk=second.episode.pk).info_unit_id == new.pk
    assert InfoKey.objects.get().unit_count == 2
    attempt = RegistryAttempt.objects.get(pk=second.registry.attempt.pk)
    assert (attempt.decision, attempt.review_status, attempt.unit_id) == ("MATCH", "DIFFERENT", new.pk)
    assert (attempt.resolved_by, attempt.resolution_reason) == (reviewer, "another billing rule")
    detached = InfoUnitEvent.objects.filter(kind="DETACHED").order_by("id")
    assert [(e.unit_id, e.actor_name) for e in detached] == [
        (old.pk, reviewer.username),
        (new.pk, reviewer.username),
    ]
    assert detached[0].details["new_unit"] == new.pk and detached[1].details["from_unit"] == old.pk


def test_the_registry_sees_the_new_unit_at_once(mem, merged, reviewer):
    _, second = merged
    new = services.info_evidence_detach(
        evidence=InfoEvidence.objects.get(episode=second.episode), actor=reviewer, reason="not the same"
    )

    again = write(mem, PARAPHRASE, session_id="s-3")  # the detached fact, word for word

    assert again.decision == "MATCH" and again.unit.pk == new.pk


@pytest.mark.parametrize(
    ("which", "reason", "rule"),
    [
        ("founding", "wrong", "memory.detach_founding"),
        ("second", "  ", "memory.detach_reason"),
    ],
)
def test_refusals_name_the_rule_and_write_nothing(mem, merged, reviewer, which, reason, rule):
    first, second = merged
    episode = first.episode if which == "founding" else second.episode
    evidence = InfoEvidence.objects.get(episode=episode)
    before = (InfoUnit.objects.count(), InfoEvidence.objects.count(), InfoUnitEvent.objects.count())

    with pytest.raises(RuleViolation) as caught:
        services.info_evidence_detach(evidence=evidence, actor=reviewer, reason=reason)

    assert [v.rule for v in caught.value.violations] == [rule]
    assert (InfoUnit.objects.count(), InfoEvidence.objects.count(), InfoUnitEvent.objects.count()) == before


def test_a_fact_stated_word_for_word_like_another_unit_is_refused(mem, reviewer):
    write(mem, FACT, session_id="s-1")
    exact = write(mem, FACT + "  ", session_id="s-2")  # the same canonical statement: CANONICAL_EXACT
    assert exact.decision == "MATCH"

    with pytest.raises(RuleViolation) as caught:
        services.info_evidence_detach(
            evidence=InfoEvidence.objects.get(episode=exact.episode), actor=reviewer, reason="split it"
        )

    assert [v.rule for v in caught.value.violations] == ["memory.detach_identical"]
    assert InfoUnit.objects.count() == 1


def test_detaching_twice_is_not_found_and_applies_once(mem, merged, reviewer):
    _, second = merged
    evidence = InfoEvidence.objects.get(episode=second.episode)
    services.info_evidence_detach(evidence=evidence, actor=reviewer, reason="not the same")

    with pytest.raises(NotFound):
        services.info_evidence_detach(evidence=evidence, actor=reviewer, reason="not the same")

    assert InfoUnit.objects.count() == 2 and InfoEvidence.objects.count() == 2


def test_the_unit_page_detaches_for_a_reviewer_only(client, mem, merged, make_user):
    _, second = merged
    old = InfoUnit.objects.get()
    evidence = InfoEvidence.objects.get(episode=second.episode)
    url = f"/p/mem/memory/units/{old.pk}/evidence/{evidence.pk}/detach/"

    client.force_login(make_user("erin", "expert", mem))
    page = client.get(f"/p/mem/memory/units/{old.pk}/").content.decode()
    denied = client.post(url, {"reason": "not the same"})
    assert 'id="detach-' not in page and denied.status_code == 403

    client.force_login(make_user("viv", "reviewer", mem))
    page = client.get(f"/p/mem/memory/units/{old.pk}/").content.decode()
    empty = client.post(url, {"reason": ""})
    assert f'id="detach-{evidence.pk}"' in page and "founded the unit" in page
    assert empty.status_code == 422 and "This field is required" in empty.content.decode()
    assert InfoUnit.objects.count() == 1

    founding = InfoEvidence.objects.exclude(pk=evidence.pk).get(unit=old)
    refused = client.post(f"/p/mem/memory/units/{old.pk}/evidence/{founding.pk}/detach/", {"reason": "x"})
    assert refused.status_code == 422 and "founded InfoUnit" in refused.content.decode()

    done = client.post(url, {"reason": "another billing rule"}, follow=True)

    new = InfoUnit.objects.exclude(pk=old.pk).get()
    html = done.content.decode()
    assert done.status_code == 200 and f"it is InfoUnit #{new.pk} now" in html and "DETACHED" in html
    other = client.post(f"/p/mem/memory/units/{new.pk}/evidence/{evidence.pk}/detach/", {"reason": "x"})
    assert other.status_code == 404  # that evidence is not the new unit's (nor anyone's any more)


@pytest.mark.django_db(transaction=True)
def test_two_reviewers_detaching_at_once_make_one_new_unit(mem, make_user):
    import threading

    from django.db import connection

    first = write(mem, FACT, session_id="s-1")
    second = write(mem, PARAPHRASE, session_id="s-2")
    assert (first.decision, second.decision) == ("NEW", "MATCH")
    evidence = InfoEvidence.objects.get(episode=second.episode)
    reviewers = [make_user(f"rev-{i}", "reviewer", mem) for i in range(2)]
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def detach(actor: Any) -> None:
        try:
            barrier.wait(timeout=10)
            services.info_evidence_detach(evidence=evidence, actor=actor, reason="not the same")
            outcomes.append("detached")
        except NotFound:
            outcomes.append("not found")
        except BaseException as exc:  # reported below
            outcomes.append(repr(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=detach, args=(r,)) for r in reviewers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert sorted(outcomes) == ["detached", "not found"]
    assert InfoUnit.objects.count() == 2 and InfoEvidence.objects.count() == 2
    assert InfoUnitEvent.objects.filter(kind="DETACHED").count() == 2  # one on each unit, once


def test_the_review_api_detaches_with_field_messages_and_scoping(
    mem, merged, api_as, make_user, make_project
):
    first, second = merged
    old = InfoUnit.objects.get()
    evidence = InfoEvidence.objects.get(episode=second.episode)
    url = f"/api/v1/projects/mem/review/memory-evidence/{evidence.pk}/detach/"
    reviewer = api_as(make_user("viv", "reviewer", mem))

    missing = reviewer.post(url, {}, format="json")
    expert = api_as(make_user("erin", "expert", mem)).post(url, {"reason": "x"}, format="json")
    outsider = api_as(make_user("mallory", "admin", make_project("globex")))
    elsewhere = outsider.post(url, {"reason": "x"}, format="json")
    unknown = reviewer.post(
        "/api/v1/projects/mem/review/memory-evidence/999999/detach/", {"reason": "x"}, format="json"
    )
    assert missing.status_code == 400 and "reason" in missing.json(), missing.json()
    assert expert.status_code == 403 and elsewhere.status_code == 404 and unknown.status_code == 404
    assert InfoUnit.objects.count() == 1

    done = reviewer.post(url, {"reason": "another billing rule"}, format="json")

    new = InfoUnit.objects.exclude(pk=old.pk).get()
    assert done.status_code == 200
    assert done.json() == {
        "evidence": evidence.pk,
        "episode": second.episode.pk,
        "from_unit": old.pk,
        "unit": new.pk,
    }
    founding = InfoEvidence.objects.get(episode=first.episode)
    refused = reviewer.post(
        f"/api/v1/projects/mem/review/memory-evidence/{founding.pk}/detach/", {"reason": "x"}, format="json"
    )
    assert refused.status_code == 400 and refused.json()["rules"] == ["memory.detach_founding"]
    assert reviewer.post(url, {"reason": "again"}, format="json").status_code == 404
