"""Knowledge packs: all-or-nothing import with located errors, exact export → import round trip."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError

from arg_platform.errors import RuleViolation
from arg_platform.models import AuditEvent
from projects.models import Project
from taxonomy.models import Cluster, ContextTypology, Label, LabelIncompatibility, Policy, Role
from taxonomy.packs import pack_dump, pack_export, pack_import, pack_read
from taxonomy.packs.reader import pack_parse

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).parent / "fixtures"
SMALL = FIXTURES / "small_pack.yaml"
ROOT = Path(__file__).resolve().parents[2]


def _counts() -> dict[str, int]:
    from ontology.models import OntologyEdge, OntologyNode

    return {
        m.__name__: m.objects.count()
        for m in (
            Project,
            Cluster,
            Label,
            LabelIncompatibility,
            ContextTypology,
            Policy,
            Role,
            OntologyNode,
            OntologyEdge,
            AuditEvent,
        )
    }


def _small() -> dict:
    return yaml.safe_load(SMALL.read_text())


def _import_text(data: dict, source: str = "bad.yaml"):
    return pack_import(pack_parse(yaml.safe_dump(data, sort_keys=False), source=source))


def test_import_small_pack_creates_everything():
    result = pack_import(pack_read(SMALL))
    assert result.project.slug == "tiny"
    assert result.created == {
        "clusters": 2,
        "labels": 4,
        "incompatibilities": 1,
        "typologies": 1,
        "policies": 1,
        "roles": 1,
        "nodes": 3,
        "edges": 1,
    }
    download = Label.objects.get(label_id="L00002")
    assert download.path == "Billing › Invoices › Download invoice"
    assert download.depth == 1
    assert Project.objects.get(slug="tiny").label_seq == 4


def test_export_import_round_trips_exactly():
    pack_import(pack_read(SMALL))
    first = pack_export(project=Project.objects.get(slug="tiny"))
    text = pack_dump(first)
    assert yaml.safe_load(text) == first
    pack_import(pack_parse(text, source="export.yaml"), project_slug="tiny-copy")
    second = pack_export(project=Project.objects.get(slug="tiny-copy"))
    second["project"] = first["project"]
    assert second == first
    original = _small()
    assert [x["id"] for x in first["labels"]] == [x["id"] for x in original["labels"]]
    exported = {n["id"]: n for n in first["nodes"]}
    assert exported["N-resend-invoice"]["parameters"] == original["nodes"][1]["parameters"]
    assert exported["N-resend-invoice"]["handler"] == "python:billing.resend_invoice"


def test_reimport_of_the_same_pack_changes_nothing_but_counts_updates():
    pack_import(pack_read(SMALL))
    before = pack_export(project=Project.objects.get(slug="tiny"))
    result = pack_import(pack_read(SMALL))
    assert result.created.get("labels", 0) == 0
    assert result.updated["labels"] == 4
    assert pack_export(project=Project.objects.get(slug="tiny")) == before


BAD_PACKS = {
    "cycle": (lambda d: d["labels"][0].update(parent="L00002"), "taxonomy.no_cycles"),
    "orphan": (lambda d: d["labels"][1].update(parent="L00099"), "taxonomy.parent_exists"),
    "cross_cluster_parent": (lambda d: d["labels"][2].update(parent="L00001"), "taxonomy.cluster_compat"),
    "duplicate_sibling": (
        lambda d: d["labels"][2].update(name="Invoices", cluster="billing"),
        "taxonomy.sibling_unique",
    ),
    "incompatible_lineage": (
        lambda d: d["incompatibilities"][0].update(labels=["L00001", "L00002"]),
        "taxonomy.incompatible_lineage",
    ),
    "policy_unknown_label": (
        lambda d: d["policies"][0].update(forbidden_labels=["L00077"]),
        "policy.label_refs",
    ),
    "bad_regex": (lambda d: d["policies"][0].update(blocked_patterns=["(oops"]), "policy.pattern"),
    "role_unknown_policy": (lambda d: d["roles"][0].update(policy="nope"), "role.policy_exists"),
    "duplicate_label_id": (
        lambda d: d["labels"].append(dict(d["labels"][0], name="Other")),
        "pack.duplicate_key",
    ),
    "oversize_name": (lambda d: d["labels"][0].update(name="x" * 200), "taxonomy.field_size"),
    "edge_to_unknown_node": (
        lambda d: d["edges"][0].update(target="N-missing"),
        "graph.edge_endpoint_exists",
    ),
    "attach_deprecated_label": (
        lambda d: d["nodes"][0].update(labels=["L00004"]),
        "graph.attach_label_deprecated",
    ),
    "self_loop": (lambda d: d["edges"][0].update(target="N-invoice-download"), "graph.self_loop"),
    "missing_field": (lambda d: d["labels"][0].pop("cluster"), "pack.shape"),
    "two_default_typologies": (
        lambda d: d["typologies"].append(dict(d["typologies"][0], key="other")),
        "pack.typology_default",
    ),
    "one_distinct_term": (
        lambda d: d.update(distinct_terms=[{"terms": ["wool", "Wool"]}]),
        "pack.distinct_terms",
    ),
    "sentence_as_distinct_term": (
        lambda d: d.update(distinct_terms=[{"terms": ["wool", "the customer wants linen sweaters"]}]),
        "pack.distinct_terms",
    ),
    "distinct_terms_not_a_list": (
        lambda d: d.update(distinct_terms=[{"terms": "wool, linen"}]),
        "pack.shape",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_PACKS))
def test_bad_pack_is_refused_with_rule_and_location_and_changes_nothing(case):
    pack_import(pack_read(SMALL))
    data = _small()
    mutate, rule = BAD_PACKS[case]
    mutate(data)
    before = _counts()
    snapshot = pack_export(project=Project.objects.get(slug="tiny"))
    with pytest.raises(RuleViolation) as info:
        _import_text(data)
    rules = [v.rule for v in info.value.violations]
    assert rule in rules, rules
    located = [v for v in info.value.violations if v.rule == rule]
    assert any(v.location.startswith("bad.yaml") for v in located), located
    assert _counts() == before
    assert pack_export(project=Project.objects.get(slug="tiny")) == snapshot


def test_error_location_names_the_yaml_line():
    data = _small()
    data["labels"][1]["parent"] = "L00099"
    text = yaml.safe_dump(data, sort_keys=False)
    with pytest.raises(RuleViolation) as info:
        pack_import(pack_parse(text, source="bad.yaml"))
    location = info.value.violations[0].location
    line = int(re.match(r"bad\.yaml:(\d+)", location).group(1))
    assert "id: L00002" in text.splitlines()[line - 1]


def test_reusing_a_deprecated_label_id_is_refused():
    pack_import(pack_read(SMALL))
    data = _small()
    data["labels"][3].update(name="Brand new meaning", status="ACTIVE")
    with pytest.raises(RuleViolation) as info:
        _import_text(data)
    assert [v.rule for v in info.value.violations] == ["taxonomy.label_id_reuse"]
    assert Label.objects.get(label_id="L00004").name == "Old billing portal"


def test_a_pack_may_not_drop_existing_labels():
    pack_import(pack_read(SMALL))
    data = _small()
    data["labels"].pop(2)
    data["incompatibilities"] = []
    data["policies"][0]["forbidden_labels"] = []
    with pytest.raises(RuleViolation) as info:
        _import_text(data)
    assert [v.rule for v in info.value.violations] == ["pack.label_missing"]


@pytest.mark.parametrize(
    "text,rule",
    [
        ("format: arg-pack/1\nlabels: [unclosed", "pack.parse"),
        ("format: other/9\n", "pack.format"),
        ("- just\n- a list\n", "pack.shape"),
        ("format: arg-pack/1\nlabels: {a: 1}\n", "pack.shape"),
    ],
)
def test_malformed_packs(text, rule):
    with pytest.raises(RuleViolation) as info:
        pack_import(pack_parse(text, source="m.yaml"))
    assert info.value.violations[0].rule == rule
    assert Project.objects.count() == 0


def test_characters_no_database_stores_are_refused_where_they_are():
    """A NUL (PostgreSQL's text type refuses it: the import failed there with a 500) or a lone
    surrogate, which JSON can spell, is refused with the place of each; nothing is written."""
    data = _small()
    data["labels"][0]["name"] = "Bil\x00ling"
    data["labels"][1]["examples"] = ["fine", "broken \ud800 text"]
    text = json.dumps(data)  # escaped as \u0000 / \ud800, as a client's JSON would send them
    assert "\\u0000" in text and "\\ud800" in text
    with pytest.raises(RuleViolation) as info:
        pack_import(pack_parse(text, source="bad.json"))
    assert [v.rule for v in info.value.violations] == ["pack.characters", "pack.characters"]
    assert [v.location for v in info.value.violations] == [
        "bad.json (labels[0].name)",
        "bad.json (labels[1].examples[1])",
    ]
    assert Project.objects.count() == 0
    data["labels"][0]["name"] = "Billing"
    data["labels"][1]["examples"] = ["fine", "mended text"]
    assert pack_import(pack_parse(json.dumps(data), source="good.json")).project.slug == "tiny"


def test_cli_import_and_export(tmp_path):
    call_command("import_pack", str(SMALL), "--no-progress")
    out = tmp_path / "out.yaml"
    call_command("export_pack", "tiny", "--out", str(out))
    assert yaml.safe_load(out.read_text())["labels"][0]["id"] == "L00001"
    bad = tmp_path / "bad.yaml"
    data = _small()
    data["labels"][0]["parent"] = "L00002"
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(CommandError, match=r"taxonomy\.no_cycles.*bad\.yaml:\d+"):
        call_command("import_pack", str(bad), "--no-progress")


def test_cli_shows_a_progress_bar(tmp_path):
    env_db = tmp_path / "cli.sqlite3"
    env = {
        "ARG_DATA_DIR": str(tmp_path),
        "DATABASE_URL": f"sqlite:///{env_db}",
        "PATH": "/usr/bin:/bin",
        "HF_HUB_OFFLINE": "1",
    }
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
    )
    proc = subprocess.run(
        [sys.executable, "manage.py", "import_pack", str(SMALL)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "labels: 100%" in proc.stderr.replace("  ", " ").replace("   ", " ") or "100%" in proc.stderr
    assert "project tiny" in proc.stdout


def test_distinct_terms_round_trip_and_an_absent_section_keeps_them():
    from memory.models import TermDistinction

    data = _small()
    data["distinct_terms"] = [{"terms": ["Wool", "linen", "cotton"], "reason": "fabrics"}]
    result = _import_text(data, source="fabrics.yaml")
    assert result.created["distinct_terms"] == 3
    first = pack_export(project=Project.objects.get(slug="tiny"))
    assert first["distinct_terms"] == [
        {"terms": ["cotton", "linen"], "reason": "fabrics"},
        {"terms": ["cotton", "wool"], "reason": "fabrics"},
        {"terms": ["linen", "wool"], "reason": "fabrics"},
    ]
    pack_import(pack_parse(pack_dump(first), source="export.yaml"), project_slug="tiny-copy")
    second = pack_export(project=Project.objects.get(slug="tiny-copy"))
    assert second["distinct_terms"] == first["distinct_terms"]

    pack_import(pack_read(SMALL))  # the small pack has no distinct_terms section: kept as they are
    assert TermDistinction.objects.filter(project__slug="tiny").count() == 3
    data["distinct_terms"] = []  # written empty: none
    _import_text(data)
    assert not TermDistinction.objects.filter(project__slug="tiny").exists()
