"""The project's merge bar (``memory.models.MergeBar``): the operator sets it on the UNSURE staging page
(project admins only; bad input refused with nothing saved; every change audited), the registry's writes
and the nightly consolidation of that project compare with it, the API shows it, and it never crosses
projects."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from arg_platform.models import AuditEvent
from memory import selectors, services
from memory.comparator import DEFAULT_PARAMS
from memory.models import MergeBar, RegistryAttempt
from taxonomy.packs import pack_import, pack_read
from tests.memory.conftest import MEMORY_PACK

pytestmark = pytest.mark.django_db

# a MATCH at the default bar whose wordings leave one content word unexplained ("day")
FACT = "Invoices are emailed to the billing contact on the 1st of every month."
PARAPHRASE = "On the first day of each month the invoice is sent by email to the billing contact."
GREY_A = "The customer wants maintenance windows on Sunday nights."
GREY_B = "Schedule this customer's maintenance for Sunday night."
COMMON = {"scope": "USER", "user_id": "u-1", "label_ids": ["L00001"]}
URL = "/p/mem/memory/staging/merge-bar/"


@pytest.fixture
def other(mem: Any) -> Any:
    """A second project with the same memory pack (slug "mem-b")."""
    return pack_import(pack_read(MEMORY_PACK), project_slug="mem-b").project


def merge_bar_audits(project: Any) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(project=project, object_type="merge_bar").order_by("id"))


def test_no_setting_is_the_code_default_and_a_setting_changes_only_the_bar(mem, other, make_user):
    assert selectors.registry_params(project=mem) == DEFAULT_PARAMS
    assert DEFAULT_PARAMS.identity_slack == 2

    services.merge_bar_set(project=mem, identity_slack=0, actor=make_user("ada", "admin", mem))

    assert selectors.registry_params(project=mem) == replace(DEFAULT_PARAMS, identity_slack=0)
    assert selectors.registry_params(project=other) == DEFAULT_PARAMS  # never crosses projects


def test_a_project_at_bar_0_stages_what_a_project_at_the_default_bar_merges(mem, other, make_user):
    services.merge_bar_set(project=mem, identity_slack=0, actor=make_user("ada", "admin", mem))

    outcomes = {}
    for project in (mem, other):
        first = services.memory_write(project=project, text=FACT, session_id="s-1", **COMMON)
        second = services.memory_write(project=project, text=PARAPHRASE, session_id="s-2", **COMMON)
        outcomes[project.slug] = (first.decision, second.registry.attempt)

    strict_first, strict = outcomes["mem"]
    default_first, merged = outcomes["mem-b"]
    assert strict_first == default_first == "NEW"
    assert merged.decision == "MATCH" and merged.review_status != RegistryAttempt.Review.PENDING
    assert strict.decision == "UNSURE" and strict.review_status == RegistryAttempt.Review.PENDING
    assert strict.reasons[-1] == "not_identical: -day"
    assert [a.pk for a in selectors.registry_unsure_list(project=mem)] == [strict.pk]
    assert not selectors.registry_unsure_list(project=other).exists()


def test_an_explicit_params_argument_still_wins_over_the_project_bar(mem, make_user):
    # benchmarks (bench_registry --identity-slack) pass their own parameters
    services.merge_bar_set(project=mem, identity_slack=0, actor=make_user("ada", "admin", mem))

    services.memory_write(project=mem, text=FACT, session_id="s-1", **COMMON)
    second = services.memory_write(
        project=mem, text=PARAPHRASE, session_id="s-2", params=DEFAULT_PARAMS, **COMMON
    )

    assert second.decision == "MATCH"


def _consolidation_writes(project: Any) -> None:
    """Three users state one incident over two days; the third one in other words (one word more)."""
    for user, text in (("u-1", FACT), ("u-2", FACT), ("u-3", PARAPHRASE)):
        for session, days_ago in (("s1", 2.0), ("s2", 0.1)):
            services.memory_write(
                project=project,
                text=text,
                scope="USER",
                user_id=user,
                session_id=f"{user}-{session}",
                label_ids=["L00001"],
                labels_trusted=True,
                info_type="Incident",
                signal="strong",
                source="pipeline",
                occurred_at=timezone.now() - timedelta(days=days_ago),
            )


def test_the_nightly_consolidation_groups_with_the_project_bar(mem, other, make_user):
    services.merge_bar_set(project=mem, identity_slack=0, actor=make_user("ada", "admin", mem))
    _consolidation_writes(mem)
    _consolidation_writes(other)

    strict = services.memory_consolidate(project=mem)
    default = services.memory_consolidate(project=other)

    # at the default bar the paraphrase joins the pattern: three users, one semantic unit
    assert (default["unsure_pairs"], default["promoted"]) == (0, 1)
    # at bar 0 it stays apart: two users are too few sources, nothing is promoted
    assert strict["unsure_pairs"] >= 1 and strict["promoted"] == 0 and strict["skipped_sources"] >= 1


# --- the staging page's form ---------------------------------------------------------------------------


def _reviewed_pair(project: Any, reviewer: Any) -> None:
    preference = {**COMMON, "info_type": "UserPreference"}
    services.memory_write(project=project, text=GREY_A, session_id="s-1", **preference)
    staged = services.memory_write(project=project, text=GREY_B, session_id="s-2", **preference)
    staged = staged.registry.attempt
    assert staged.decision == "UNSURE"
    services.registry_unsure_resolve(attempt=staged, decision="SAME", actor=reviewer, reason="")


def test_a_project_admin_sets_the_bar_and_the_page_marks_it(client, mem, make_user):
    admin = make_user("ada", "admin", mem)
    _reviewed_pair(mem, admin)
    client.force_login(admin)
    page = client.get("/p/mem/memory/staging/").content.decode()
    assert 'data-slack="2"' in page and 'id="merge-bar-form"' in page

    response = client.post(URL, {"identity_slack": "5"})

    assert response.status_code == 302 and response["Location"].endswith("/p/mem/memory/staging/#merge-bar")
    assert MergeBar.objects.get(project=mem).identity_slack == 5
    assert MergeBar.objects.get(project=mem).updated_by == admin
    [event] = merge_bar_audits(mem)
    assert (event.actor, event.action, event.object_key) == (admin, "update", "mem")
    assert (event.before, event.after) == ({"identity_slack": 2}, {"identity_slack": 5})
    page = client.get("/p/mem/memory/staging/").content.decode()
    assert 'data-slack="5"' in page and 'id="merge-bar-slack">5<' in page
    assert "the gate at a bar of 5 lets" in page

    client.post(URL, {"identity_slack": "1"})

    assert [(e.before, e.after) for e in merge_bar_audits(mem)][-1] == (
        {"identity_slack": 5},
        {"identity_slack": 1},
    )


@pytest.mark.parametrize("role", ["reviewer", "expert"])
def test_a_lower_role_may_not_change_the_bar(client, mem, make_user, role):
    client.force_login(make_user("bob", role, mem))

    page = client.get("/p/mem/memory/staging/").content.decode()
    response = client.post(URL, {"identity_slack": "0"})

    assert 'id="merge-bar-form"' not in page and 'id="merge-bar-owner"' in page
    assert response.status_code == 403
    assert not MergeBar.objects.exists() and merge_bar_audits(mem) == []
    assert selectors.registry_params(project=mem).identity_slack == 2


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("abc", "Enter a whole number of words from 0 to 8."),
        ("-1", "greater than or equal to 0"),
        ("9", "less than or equal to 8"),
        ("", "This field is required."),
    ],
)
def test_bad_input_is_refused_with_a_field_message_and_nothing_saved(client, mem, make_user, value, message):
    admin = make_user("ada", "admin", mem)
    services.merge_bar_set(project=mem, identity_slack=3, actor=admin)
    client.force_login(admin)

    response = client.post(URL, {"identity_slack": value})

    assert response.status_code == 422
    body = response.content.decode()
    assert 'id="merge-bar-errors"' in body and message in body
    assert MergeBar.objects.get(project=mem).identity_slack == 3
    assert len(merge_bar_audits(mem)) == 1  # the setup's only


def test_the_service_refuses_an_out_of_range_bar(mem):
    from arg_platform.errors import RuleViolation

    for bad in (-1, 9, "2", True):
        with pytest.raises(RuleViolation) as refused:
            services.merge_bar_set(project=mem, identity_slack=bad, actor=None)
        assert refused.value.violations[0].field == "identity_slack"
    assert not MergeBar.objects.exists() and merge_bar_audits(mem) == []


def test_an_admin_of_another_project_cannot_set_this_one(client, mem, other, make_user):
    client.force_login(make_user("mallory", "admin", other))

    response = client.post(URL, {"identity_slack": "0"})

    assert response.status_code == 404
    assert not MergeBar.objects.exists()


# --- the API ---------------------------------------------------------------------------------------


def test_the_api_reads_the_project_bar(mem, other, make_user, token_client):
    services.merge_bar_set(project=mem, identity_slack=4, actor=make_user("ada", "admin", mem))

    mine = token_client(mem).get("/api/v1/memory/merge-bar")
    theirs = token_client(other).get("/api/v1/memory/merge-bar")

    assert mine.status_code == 200 and mine.json() == {"identity_slack": 4, "default": 2}
    assert theirs.status_code == 200 and theirs.json() == {"identity_slack": 2, "default": 2}
    assert token_client(mem, name="another").post("/api/v1/memory/merge-bar", {}).status_code == 405
