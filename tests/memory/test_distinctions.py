"""Term distinctions: a reviewer who undoes a wrong merge (or resolves a staged pair as different) names
the terms that differ, and the Info Registry keeps such facts apart from then on, in every InfoKey of
the project — through the service, the pages and the review API; refusals write nothing."""

from __future__ import annotations

from typing import Any

import pytest

from arg_platform.errors import RuleViolation
from memory import services
from memory.distinctions import Distinction, Distinctions, mentions, separates, suggestions, term_normalize
from memory.models import InfoEvidence, InfoUnit, InfoUnitEvent, RegistryAttempt, TermDistinction

pytestmark = pytest.mark.django_db

WOOL = "The customer wants wool sweaters for the winter."
LINEN = "For winter the client would like sweaters made of linen."  # reworded: the rules merge it


def write(project: Any, text: str, user: str = "u-1", **kwargs: Any) -> services.MemoryWriteResult:
    common: dict[str, Any] = {"scope": "USER", "user_id": user, "label_ids": ["L00001"]}
    return services.memory_write(project=project, text=text, **{**common, **kwargs})


@pytest.fixture
def false_merge(mem: Any) -> InfoEvidence:
    """LINEN wrongly merged into WOOL's unit (the comparator's failure issue 6 describes)."""
    assert write(mem, WOOL).decision == "NEW"
    linen = write(mem, LINEN)
    assert linen.decision == "MATCH", "the rules no longer merge this pair: pick another false merge"
    return InfoEvidence.objects.get(episode=linen.episode)


# --- the rule itself ----------------------------------------------------------------------------------


def test_terms_are_normalized_and_mentioned_as_whole_words_with_a_plural():
    assert term_normalize("  Window Seats! ") == "window seats"
    assert mentions("the customer wants wool sweaters", "sweater")
    assert mentions("leftovers go to the food bank daily", "food bank")
    assert not mentions("woollen sweaters", "wool") and not mentions("the bank of food", "food bank")


def test_a_distinction_separates_only_when_each_side_has_its_own_term():
    rule = Distinction("linen", "wool")
    assert separates(rule, "wants wool sweaters", "would like sweaters made of linen")
    assert separates(rule, "linen shirts", "wool shirts")
    assert not separates(rule, "wool and linen blend", "linen shirts")  # both terms on one side
    assert not separates(rule, "wool sweaters", "wool scarves")


def test_a_large_rule_set_finds_the_rule_by_the_words_of_the_statements():
    noise = [Distinction(f"term{i}", f"word{i}", i) for i in range(5000)]
    rules = Distinctions(
        [*noise, Distinction("linen", "wool", 9998), Distinction("aisle seat", "window seat", 9999)]
    )

    assert rules.firing("wants wool sweaters", "sweaters made of linens") == Distinction(
        "linen", "wool", 9998
    )
    assert rules.firing("books window seats", "likes an aisle seat") == Distinction(
        "aisle seat", "window seat", 9999
    )
    assert rules.firing("wants wool sweaters", "wants wool scarves") is None
    assert rules.firing("term7 and more", "word7 instead") == Distinction("term7", "word7", 7)


def test_suggestions_are_the_words_each_side_lacks():
    unit_words, fact_words = suggestions("customer wants wool sweaters for winter", LINEN)
    assert "wool" in unit_words and "linen" in fact_words
    assert "sweaters" not in unit_words and "the" not in fact_words


# --- learned on Detach, applied everywhere in the project ----------------------------------------------


def test_a_detach_with_terms_keeps_the_next_such_pair_apart_in_another_key(mem, false_merge, reviewer):
    services.info_evidence_detach(
        evidence=false_merge, actor=reviewer, reason="another fabric", terms=("Wool", "linen")
    )

    taught = TermDistinction.objects.get()
    assert (taught.first, taught.second, taught.created_by, taught.reason) == (
        "linen",
        "wool",
        reviewer,
        "another fabric",
    )
    assert taught.attempt_id == false_merge.attempt_id
    history = InfoUnitEvent.objects.filter(kind="DETACHED").values_list("details", flat=True)
    assert [d["distinction"] for d in history] == ["linen ≠ wool", "linen ≠ wool"]
    # another user's memory: another InfoKey, where the rules alone made the false merge above
    assert write(mem, WOOL, user="u-2").decision == "NEW"
    second = write(mem, LINEN, user="u-2")
    assert second.decision == "NEW"
    assert second.registry.attempt.reasons == ["distinction: linen ≠ wool"]
    assert second.registry.decision.candidates[0].comparison.verdict == "DIFFERENT"
    # a true duplicate of either fact still merges
    assert write(mem, "The customer wants wool sweaters for winter.", user="u-2").decision == "MATCH"


def test_forgetting_a_distinction_leaves_later_pairs_to_the_rules(mem, false_merge, reviewer):
    services.info_evidence_detach(evidence=false_merge, actor=reviewer, reason="x", terms=("wool", "linen"))
    write(mem, WOOL, user="u-2")
    assert write(mem, LINEN, user="u-2").decision == "NEW"  # applied (and kept by this process)

    services.term_distinction_delete(distinction=TermDistinction.objects.get(), actor=reviewer)

    write(mem, WOOL, user="u-3")
    assert write(mem, LINEN, user="u-3").decision == "MATCH"  # the process noticed it is gone
    from arg_platform.models import AuditEvent

    assert list(
        AuditEvent.objects.filter(object_type="term_distinction")
        .order_by("id")
        .values_list("action", flat=True)
    ) == ["create", "delete"]


@pytest.mark.parametrize(
    ("terms", "field", "words"),
    [
        (("wool", ""), "fact_term", "both sides"),
        (("wool", "wool"), "fact_term", "the same"),
        (("cotton", "linen"), "unit_term", "must say “cotton”"),
        (("sweaters", "linen"), "unit_term", "must say “sweaters”"),  # the fact says sweaters too
        (("wool", "a b c d e"), "fact_term", "at most 4 words"),
        (("wool", "?!"), "fact_term", "a word or a short phrase"),
        (("wool", "Jane Doe"), "fact_term", "personal data (PERSON found)"),
    ],
)
def test_bad_terms_are_refused_with_the_field_and_nothing_is_written(
    mem, false_merge, reviewer, terms, field, words
):
    before = (InfoUnit.objects.count(), InfoEvidence.objects.count())

    with pytest.raises(RuleViolation) as caught:
        services.info_evidence_detach(evidence=false_merge, actor=reviewer, reason="x", terms=terms)

    assert [(v.rule, v.field) for v in caught.value.violations] == [("memory.distinction", field)]
    assert words in caught.value.violations[0].message
    assert (InfoUnit.objects.count(), InfoEvidence.objects.count()) == before
    assert not TermDistinction.objects.exists()


def test_teaching_the_same_pair_twice_keeps_one_rule(mem, false_merge, reviewer):
    write(mem, WOOL, user="u-4")
    again = write(mem, LINEN, user="u-4")  # the same false merge in another key, before any teaching
    assert again.decision == "MATCH"
    services.info_evidence_detach(evidence=false_merge, actor=reviewer, reason="x", terms=("wool", "linen"))

    services.info_evidence_detach(
        evidence=InfoEvidence.objects.get(episode=again.episode),
        actor=reviewer,
        reason="y",
        terms=("linen", "wool"),
    )

    assert TermDistinction.objects.count() == 1 and TermDistinction.objects.get().reason == "x"
    write(mem, WOOL, user="u-6")
    minimal = write(mem, "The customer wants linen sweaters for the winter.", user="u-6")
    assert minimal.decision == "NEW" and minimal.registry.attempt.reasons == ["distinction: linen ≠ wool"]


# --- learned on an UNSURE resolution ---------------------------------------------------------------


def test_resolving_different_with_terms_teaches_and_same_with_terms_is_refused(mem, reviewer):
    write(mem, "The pub's best seller is the stout.")
    staged = write(mem, "The pub's best seller is the pale ale.")
    assert staged.decision == "UNSURE"
    attempt = staged.registry.attempt

    with pytest.raises(RuleViolation) as caught:
        services.registry_unsure_resolve(
            attempt=attempt, decision="SAME", actor=reviewer, terms=("stout", "pale ale")
        )
    assert [v.rule for v in caught.value.violations] == ["memory.distinction"]
    assert RegistryAttempt.objects.get(pk=attempt.pk).review_status == "PENDING"

    services.registry_unsure_resolve(
        attempt=attempt,
        decision="DIFFERENT",
        actor=reviewer,
        reason="other beer",
        terms=("stout", "pale ale"),
    )

    assert [(d.first, d.second) for d in TermDistinction.objects.all()] == [("pale ale", "stout")]
    write(mem, "Our best seller at the pub is the stout.", user="u-5")
    kept_apart = write(mem, "At the pub, the pale ale sells best.", user="u-5")
    assert kept_apart.decision == "NEW"


# --- the doors: pages and the review API ---------------------------------------------------------------


def test_the_unit_page_teaches_on_detach_and_the_list_page_forgets(client, mem, false_merge, make_user):
    unit = InfoUnit.objects.get()
    url = f"/p/mem/memory/units/{unit.pk}/evidence/{false_merge.pk}/detach/"
    client.force_login(make_user("viv", "reviewer", mem))
    page = client.get(f"/p/mem/memory/units/{unit.pk}/").content.decode()
    assert f'id="detach-{false_merge.pk}-unit-term"' in page and '<option value="wool">' in page

    refused = client.post(url, {"reason": "fabric", "unit_term": "cotton", "fact_term": "linen"})
    assert refused.status_code == 422 and "must say “cotton”" in refused.content.decode()
    assert InfoUnit.objects.count() == 1 and not TermDistinction.objects.exists()

    done = client.post(url, {"reason": "fabric", "unit_term": "wool", "fact_term": "linen"}, follow=True)
    assert done.status_code == 200 and InfoUnit.objects.count() == 2

    listing = client.get("/p/mem/memory/distinctions/").content.decode()
    taught = TermDistinction.objects.get()
    assert f'id="distinction-{taught.pk}"' in listing and "<strong>wool</strong>" in listing

    client.force_login(make_user("erin", "expert", mem))
    assert client.get("/p/mem/memory/distinctions/").status_code == 200  # experts read
    denied = client.post(f"/p/mem/memory/distinctions/{taught.pk}/delete/")
    assert denied.status_code == 403 and TermDistinction.objects.exists()

    client.force_login(make_user("viv2", "reviewer", mem))
    gone = client.post(f"/p/mem/memory/distinctions/{taught.pk}/delete/", follow=True)
    assert gone.status_code == 200 and "Forgot the distinction linen ≠ wool" in gone.content.decode()
    assert not TermDistinction.objects.exists()
    assert client.post(f"/p/mem/memory/distinctions/{taught.pk}/delete/").status_code == 404


def test_the_staging_and_merge_lists_show_term_refusals(client, mem, make_user):
    write(mem, "The pub's best seller is the stout.")
    attempt = write(mem, "The pub's best seller is the pale ale.").registry.attempt
    client.force_login(make_user("viv", "reviewer", mem))
    staging = client.get("/p/mem/memory/staging/").content.decode()
    assert f'id="resolve-{attempt.pk}-fact-term"' in staging and '<option value="pale">' in staging

    refused = client.post(
        f"/p/mem/memory/staging/{attempt.pk}/resolve/", {"decision": "DIFFERENT", "unit_term": "stout"}
    )
    assert refused.status_code == 422 and "name the term on both sides" in refused.content.decode()
    merges = client.post(
        f"/p/mem/review/merges/{attempt.pk}/resolve/",
        {"decision": "DIFFERENT", "unit_term": "lager", "fact_term": "pale ale"},
    )
    assert merges.status_code == 422 and "must say “lager”" in merges.content.decode()
    assert RegistryAttempt.objects.get(pk=attempt.pk).review_status == "PENDING"

    done = client.post(
        f"/p/mem/review/merges/{attempt.pk}/resolve/",
        {"decision": "DIFFERENT", "unit_term": "stout", "fact_term": "pale ale"},
    )
    assert done.status_code == 302 and TermDistinction.objects.count() == 1


def test_the_review_api_takes_terms_with_field_messages(mem, false_merge, api_as, make_user):
    reviewer = api_as(make_user("viv", "reviewer", mem))
    url = f"/api/v1/projects/mem/review/memory-evidence/{false_merge.pk}/detach/"

    half = reviewer.post(url, {"reason": "fabric", "unit_term": "wool"}, format="json")
    assert half.status_code == 400 and half.json()["rules"] == ["memory.distinction"], half.json()
    assert half.json()["errors"] == {"fact_term": ["name the term on both sides, or neither"]}

    done = reviewer.post(url, {"reason": "fabric", "unit_term": "wool", "fact_term": "linen"}, format="json")
    assert done.status_code == 200 and TermDistinction.objects.count() == 1


def test_the_review_api_lists_and_forgets_distinctions(mem, false_merge, api_as, make_user, make_project):
    services.info_evidence_detach(
        evidence=false_merge,
        actor=make_user("viv", "reviewer", mem),
        reason="fabric",
        terms=("wool", "linen"),
    )
    taught = TermDistinction.objects.get()
    url = "/api/v1/projects/mem/review/memory-distinctions/"
    reviewer = api_as(make_user("rex", "reviewer", mem))

    listed = reviewer.get(url)
    assert listed.status_code == 200
    assert [(d["first"], d["second"], d["created_by"], d["attempt"]) for d in listed.json()["results"]] == [
        ("linen", "wool", "viv", false_merge.attempt_id)
    ]
    expert = api_as(make_user("erin", "expert", mem)).delete(f"{url}{taught.pk}/")
    outsider = api_as(make_user("mallory", "admin", make_project("globex"))).delete(f"{url}{taught.pk}/")
    assert expert.status_code == 403 and outsider.status_code == 404 and TermDistinction.objects.exists()

    assert reviewer.delete(f"{url}{taught.pk}/").status_code == 204
    assert not TermDistinction.objects.exists() and reviewer.delete(f"{url}{taught.pk}/").status_code == 404


# --- declared up front --------------------------------------------------------------------------------


def test_a_declared_set_makes_every_pair_a_distinction_and_keeps_such_facts_apart(mem, reviewer):
    created = services.term_distinctions_declare(
        project=mem, terms=["Window seat", "aisle seat", " middle seat ", "aisle seat"], actor=reviewer
    )

    assert sorted(str(d) for d in created) == [
        "aisle seat ≠ middle seat",
        "aisle seat ≠ window seat",
        "middle seat ≠ window seat",
    ]
    again = services.term_distinctions_declare(
        project=mem, terms=["window seat", "aisle seat"], actor=reviewer
    )
    assert again == [] and TermDistinction.objects.count() == 3
    write(mem, WOOL, user="u-7")
    assert write(mem, LINEN, user="u-7").decision == "MATCH"  # wool / linen were not declared
    services.term_distinctions_declare(project=mem, terms=["wool", "linen", "cotton"], actor=reviewer)
    write(mem, WOOL, user="u-8")
    assert write(mem, LINEN, user="u-8").decision == "NEW"


@pytest.mark.parametrize(
    ("terms", "words"),
    [
        (["wool"], "give 2 to 20 different terms (1 given)"),
        (["wool", "Wool"], "give 2 to 20 different terms (1 given)"),
        (["wool", "a b c d e"], "at most 4 words"),
        ([f"t{i}" for i in range(21)], "give 2 to 20 different terms (21 given)"),
    ],
)
def test_a_bad_declared_set_is_refused_whole(mem, reviewer, terms, words):
    with pytest.raises(RuleViolation) as caught:
        services.term_distinctions_declare(project=mem, terms=terms, actor=reviewer)

    assert [(v.rule, v.field) for v in caught.value.violations] == [("memory.distinction", "terms")]
    assert words in caught.value.violations[0].message
    assert not TermDistinction.objects.exists()


def test_the_page_and_the_api_declare_sets(client, mem, make_user, api_as):
    client.force_login(make_user("erin", "expert", mem))
    assert 'id="declare"' not in client.get("/p/mem/memory/distinctions/").content.decode()
    denied = client.post("/p/mem/memory/distinctions/declare/", {"terms": "wool, linen"})
    assert denied.status_code == 403

    client.force_login(make_user("viv", "reviewer", mem))
    refused = client.post("/p/mem/memory/distinctions/declare/", {"terms": "wool"})
    assert refused.status_code == 422 and "give 2 to 20 different terms" in refused.content.decode()
    done = client.post("/p/mem/memory/distinctions/declare/", {"terms": "wool, linen, cotton"}, follow=True)
    assert "3 new distinction(s) declared" in done.content.decode() and TermDistinction.objects.count() == 3

    api = api_as(make_user("rex", "reviewer", mem))
    url = "/api/v1/projects/mem/review/memory-distinctions/"
    one = api.post(url, {"terms": ["stout"]}, format="json")
    assert one.status_code == 400 and "terms" in one.json()
    made = api.post(url, {"terms": ["stout", "pale ale", "wool"], "reason": "menu"}, format="json")
    assert made.status_code == 201
    assert sorted((d["first"], d["second"]) for d in made.json()) == [
        ("pale ale", "stout"),
        ("pale ale", "wool"),
        ("stout", "wool"),
    ]
    assert (
        api_as(make_user("erin2", "expert", mem)).post(url, {"terms": ["a", "b"]}, format="json").status_code
        == 403
    )
