"""The merge bar's trade-off on a project's reviewed pairs: the curve (false-merge rate and recall per
bar), its picture, and the UNSURE staging page that draws it with the bar in force marked."""

from __future__ import annotations

from typing import Any

import pytest

from memory import selectors, services
from memory.comparator import DEFAULT_PARAMS
from memory.merge_bar import MAX_SLACK, ReviewedPair, merge_bar_chart, merge_bar_curve
from memory.models import RegistryAttempt


def test_the_curve_counts_what_each_bar_would_have_merged():
    pairs = [ReviewedPair(0, True), ReviewedPair(1, True), ReviewedPair(2, False), ReviewedPair(5, True)]

    curve = merge_bar_curve(pairs)

    assert [p["slack"] for p in curve] == list(range(MAX_SLACK + 1))
    at = {p["slack"]: p for p in curve}
    assert (at[0]["merged"], at[0]["false"], at[0]["fmr"], at[0]["recall"]) == (1, 0, 0.0, 1 / 3)
    assert (at[2]["merged"], at[2]["false"], at[2]["fmr"], at[2]["recall"]) == (3, 1, 1 / 3, 2 / 3)
    assert (at[5]["merged"], at[5]["fmr"], at[5]["recall"]) == (4, 1 / 4, 1.0)
    assert at[MAX_SLACK] == {**at[5], "slack": MAX_SLACK}


def test_no_reviewed_pair_draws_nothing_and_only_different_facts_give_no_recall():
    assert merge_bar_chart(merge_bar_curve([]), 2) is None

    curve = merge_bar_curve([ReviewedPair(1, False)])
    chart = merge_bar_chart(curve, 2)

    assert all(p["recall"] is None for p in curve)
    assert chart is not None and [s["key"] for s in chart["series"]] == ["fmr"]
    assert chart["operating"]["at"]["fmr"] == 1.0 and len(chart["operating"]["dots"]) == 1


def test_the_bar_in_force_is_marked_where_the_curve_puts_it():
    curve = merge_bar_curve([ReviewedPair(0, True), ReviewedPair(3, False)])
    chart = merge_bar_chart(curve, 2)

    assert chart is not None
    x = {t["value"]: t["x"] for t in chart["x_ticks"]}
    assert chart["operating"]["x"] == x[2] and chart["operating"]["at"]["slack"] == 2
    recall_dot, fmr_dot = chart["operating"]["dots"]
    assert recall_dot["cy"] == chart["plot"]["y0"]  # recall 1.0 at the top
    assert fmr_dot["cy"] == chart["plot"]["y1"]  # no false merge at bar 2: at the bottom


GREY_A = "The customer wants maintenance windows on Sunday nights."
GREY_B = "Schedule this customer's maintenance for Sunday night."
COMMON = {"scope": "USER", "user_id": "u-1", "label_ids": ["L00001"], "info_type": "UserPreference"}


@pytest.mark.django_db
def test_the_staging_page_draws_the_curve_of_the_reviewed_pairs(client, mem: Any, make_user):
    reviewer = make_user("viv", "reviewer", mem)
    client.force_login(reviewer)
    services.memory_write(project=mem, text=GREY_A, session_id="s-1", **COMMON)
    staged = services.memory_write(project=mem, text=GREY_B, session_id="s-2", **COMMON).registry.attempt
    assert staged.decision == RegistryAttempt.Decision.UNSURE

    before = client.get("/p/mem/memory/staging/").content.decode()
    services.registry_unsure_resolve(attempt=staged, decision="SAME", actor=reviewer, reason="same window")
    after = client.get("/p/mem/memory/staging/").content.decode()

    assert 'id="merge-curve-empty"' in before and 'id="merge-curve"' not in before
    (pair,) = selectors.reviewed_pairs(project=mem)
    assert pair.same
    merged = int(pair.gap <= DEFAULT_PARAMS.identity_slack)
    assert 'id="merge-curve"' in after and f'data-slack="{DEFAULT_PARAMS.identity_slack}"' in after
    assert f"the gate at a bar of {DEFAULT_PARAMS.identity_slack} lets {merged} through" in after
    assert f"recall {merged * 100} % of the same facts" in after
    assert 'data-series="recall"' in after and 'data-series="fmr"' in after


@pytest.mark.django_db
def test_reviewed_pairs_stay_in_their_project(mem: Any, make_project, make_user):
    reviewer = make_user("viv", "reviewer", mem)
    services.memory_write(project=mem, text=GREY_A, session_id="s-1", **COMMON)
    staged = services.memory_write(project=mem, text=GREY_B, session_id="s-2", **COMMON).registry.attempt
    services.registry_unsure_resolve(attempt=staged, decision="DIFFERENT", actor=reviewer, reason="")

    assert [p.same for p in selectors.reviewed_pairs(project=mem)] == [False]
    assert selectors.reviewed_pairs(project=make_project("globex")) == []
