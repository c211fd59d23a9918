"""The prompt-set benchmark: its judging, and the command end to end on a tiny set over the small pack."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from bench.prompts import Expected, Observed, PromptCase, PromptSetError, judged, prompt_set_read, report

SMALL_PACK = Path(__file__).resolve().parents[1] / "taxonomy" / "fixtures" / "small_pack.yaml"
DEMO_SET = Path(__file__).resolve().parents[2] / "bench" / "data" / "demo_prompts.yaml"
DEMO_PACK = Path(__file__).resolve().parents[2] / "packs" / "demo" / "pack.yaml"

# the small pack's customer policy blocks the term "idiot": that request is refused before routing
TINY_SET = """\
format: arg-prompt-set/1
pack: {pack}
prompts:
- id: refused-ok
  category: abuse
  text: you idiot, where is my invoice
  accept: [{{kind: REFUSE}}]
- id: refused-but-node-expected
  category: abuse
  text: you idiot, where is my invoice
  accept: [{{node: N-invoice-download}}]
- id: routed-but-refusal-expected
  category: billing
  text: get invoice pdf
  accept: [{{kind: REFUSE}}]
"""


def _case(*accept: Expected) -> PromptCase:
    return PromptCase(id="p", category="c", text="t", accept=accept)


def test_any_one_acceptable_outcome_is_enough_and_all_keys_of_one_must_hold():
    seen = Observed(kind="INFO", node="N-a")
    assert judged(_case(Expected(node="N-b"), Expected(node="N-a")), seen).acceptable
    assert not judged(_case(Expected(node="N-a", kind="ACTION")), seen).acceptable
    assert not judged(_case(Expected(node="N-b"), Expected(kind="CLARIFY")), seen).acceptable


def test_node_none_means_no_node_answered_and_options_need_an_offering_clarify():
    fallback = Observed(kind="CLARIFY", options=("L00001", "L00002"))
    assert judged(_case(Expected(kind="CLARIFY", node="none")), fallback).acceptable
    assert not judged(
        _case(Expected(kind="CLARIFY", node="none")), Observed("CLARIFY", node="N-q")
    ).acceptable
    assert judged(_case(Expected(options=("L00002", "L00009"))), fallback).acceptable
    assert not judged(_case(Expected(options=("L00009",))), fallback).acceptable
    assert not judged(_case(Expected(options=("L00001",))), Observed("INFO", node="N-a")).acceptable


def test_flag_matches_by_prefix():
    seen = Observed(kind="REFOCUS", flags=("language:fr", "LOW_MARGIN"))
    assert judged(_case(Expected(flag="language")), seen).acceptable
    assert not judged(_case(Expected(flag="ood")), seen).acceptable


def test_the_goal_needs_85_percent_overall_and_70_percent_in_every_category():
    good, bad = Observed("INFO", node="N-a"), Observed("INFO", node="N-b")
    ok = _case(Expected(node="N-a"))
    rows = [judged(PromptCase(f"a{i}", "a", "t", ok.accept), good) for i in range(9)]
    rows += [
        judged(PromptCase("b1", "b", "t", ok.accept), good),
        judged(PromptCase("b2", "b", "t", ok.accept), bad),
    ]
    figures = report(rows)
    assert figures["overall"]["rate"] == pytest.approx(10 / 11)
    assert figures["worst_category"]["name"] == "b" and figures["worst_category"]["rate"] == 0.5
    assert figures["goal"]["met"] is False and figures["misses"] == ["b2"]


def test_the_set_is_checked_against_the_pack(tmp_path):
    path = tmp_path / "set.yaml"
    path.write_text(
        "format: arg-prompt-set/1\nprompts:\n"
        "- {id: x, category: c, text: t, accept: [{node: N-nope}, {kind: MAYBE}, {colour: red}]}\n"
        "- {id: x, category: c, text: t, role: pirate, accept: [{kind: INFO}]}\n"
    )
    with pytest.raises(PromptSetError) as caught:
        prompt_set_read(path, known_nodes=["N-a"], known_roles=["customer"])
    message = str(caught.value)
    for expected in (
        "'N-nope' is not a node",
        "'MAYBE' is not one of",
        "unknown outcome key 'colour'",
        "duplicate id",
        "role 'pirate'",
    ):
        assert expected in message


def test_the_demo_set_names_only_nodes_and_roles_of_the_demo_pack():
    import yaml

    pack = yaml.safe_load(DEMO_PACK.read_text())
    demo = prompt_set_read(
        DEMO_SET, known_nodes=[n["id"] for n in pack["nodes"]], known_roles=[r["key"] for r in pack["roles"]]
    )
    assert len(demo.prompts) >= 80
    assert {"vague", "multi_intent", "non_english", "pii", "out_of_scope", "staff", "visitor"} <= {
        p.category for p in demo.prompts
    }


@pytest.mark.django_db(transaction=True)
def test_the_command_routes_a_tiny_set_and_counts_a_wrong_outcome_as_a_miss(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY_SET.format(pack=SMALL_PACK))
    results = tmp_path / "out.json"
    out = StringIO()
    call_command("bench_prompts", set=str(path), json=str(results), stdout=out, stderr=StringIO())
    text = out.getvalue()

    assert text.strip().splitlines()[-1] == (
        "SUMMARY prompts=3 acceptable=1 rate=33.3 worst_category=billing:0.0 goal_met=no"
    )
    assert "- refused-but-node-expected [abuse, customer] 'you idiot, where is my invoice'" in text
    assert "    got      REFUSE (no node)" in text
    data = json.loads(results.read_text())
    got = {p["id"]: p for p in data["prompts"]}
    assert got["refused-ok"]["acceptable"] is True and got["refused-ok"]["got"]["kind"] == "REFUSE"
    assert got["routed-but-refusal-expected"]["acceptable"] is False
    assert got["routed-but-refusal-expected"]["got"]["kind"] != "REFUSE"
    assert data["by_category"]["abuse"] == {"prompts": 2, "acceptable": 1, "rate": 0.5}
    assert data["misses"] == ["refused-but-node-expected", "routed-but-refusal-expected"]

    with pytest.raises(CommandError, match="exists already"):  # the data folder already holds the project
        call_command("bench_prompts", set=str(path), stdout=StringIO(), stderr=StringIO())
