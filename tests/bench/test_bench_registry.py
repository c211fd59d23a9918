"""``manage.py bench_registry``: the pairs mode counts decisions through the real write path and ends
with the SUMMARY line; the latency mode pre-fills InfoUnits and ends with the LATENCY line; the
checked-in pair files are well formed and split without overlap."""

from __future__ import annotations

import hashlib
import io
import json
import re

import pytest
from django.core.management import CommandError, call_command

from bench.registry.pair_files import SOURCES_DIR, pair_file_sources, pair_files_check, pair_path, pairs_json
from memory.models import InfoUnit
from memory.pairs import pairs_load
from projects.models import Project

pytestmark = pytest.mark.django_db


def test_pairs_mode_prints_the_summary_and_leaves_nothing_behind(tmp_path):
    pairs = [
        {
            "a": "Max connections is set to 200.",
            "b": "Max connections is set to 500.",
            "same": False,
            "kind": "numbers",
        },
        {
            "a": "Invoices are emailed to the billing contact on the 1st of every month.",
            "b": "On the first day of each month the invoice is sent by email to the billing contact.",
            "same": True,
            "info_type": "ProductConfig",
            "label": "invoices",
        },
        {"a": "Refunds take 5 business days.", "b": "The deploy failed at noon.", "same": False},
    ]
    path = tmp_path / "pairs.json"
    path.write_text(json.dumps(pairs))
    out = io.StringIO()

    call_command("bench_registry", "--pairs", str(path), stdout=out)

    lines = out.getvalue().strip().splitlines()
    assert lines[-1] == "SUMMARY fmr=0.00 dup_recall=100.00 unsure=0.00 pairs=3"
    assert "MATCH 1 (false 0), same pairs 1, UNSURE 0" in lines
    assert Project.objects.count() == 0 and InfoUnit.objects.count() == 0


def test_the_identity_slack_flag_moves_the_gate_for_the_run(tmp_path):
    pairs = [
        {
            "a": "Support tickets from enterprise customers are answered within four hours.",
            "b": "Enterprise customers' support tickets, which arrive mostly by email from their admins, are "
            "answered within four hours.",
            "same": True,
            "info_type": "ProductConfig",
        }
    ]
    path = tmp_path / "pairs.json"
    path.write_text(json.dumps(pairs))

    def run(*flags: str) -> list[str]:
        out = io.StringIO()
        call_command("bench_registry", "--pairs", str(path), *flags, stdout=out)
        return out.getvalue().strip().splitlines()

    gated, wider, off = run(), run("--identity-slack", "5"), run("--identity-slack", "-1")

    assert "identity gate: at most 2 unexplained words" in gated
    assert gated[-1] == "SUMMARY fmr=0.00 dup_recall=0.00 unsure=100.00 pairs=1"  # five words it adds
    assert "identity gate: at most 5 unexplained words" in wider
    assert wider[-1] == "SUMMARY fmr=0.00 dup_recall=100.00 unsure=0.00 pairs=1"
    assert "identity gate: off" in off and off[-1] == wider[-1]


def test_latency_mode_prefills_and_times_real_writes():
    out = io.StringIO()

    call_command("bench_registry", "--units", "120", "--writes", "3", "--units-per-key", "40", stdout=out)

    last = out.getvalue().strip().splitlines()[-1]
    assert re.fullmatch(
        r"LATENCY units=120 keys=3 writes=3 write_p50_ms=[\d.]+ write_p95_ms=[\d.]+ "
        r"registry_p50_ms=[\d.]+ registry_p95_ms=[\d.]+ prefill_s=[\d.]+",
        last,
    ), last
    assert InfoUnit.objects.count() == 0


def test_latency_mode_can_prefill_term_distinctions():
    from memory.models import TermDistinction

    out = io.StringIO()

    call_command(
        "bench_registry",
        "--units",
        "80",
        "--writes",
        "2",
        "--units-per-key",
        "40",
        "--distinctions",
        "30",
        stdout=out,
    )

    text = out.getvalue()
    assert "pre-filled 30 term distinctions" in text
    assert text.strip().splitlines()[-1].endswith(" distinctions=30")
    assert not TermDistinction.objects.exists()  # deleted with the benchmark project


@pytest.mark.parametrize("content", ["{}", '[{"a": "x", "b": "y"}]', '[{"a": "x", "b": "y", "same": "yes"}]'])
def test_malformed_pair_files_are_refused(tmp_path, content):
    path = tmp_path / "bad.json"
    path.write_text(content)

    with pytest.raises(CommandError):
        call_command("bench_registry", "--pairs", str(path), stdout=io.StringIO())


def test_the_checked_in_pair_files_are_disjoint_and_balanced():
    files = {
        name: pairs_load(pair_path(f"{name}.json"))
        for name in ("pairs_v1_tuning", "pairs_v1_heldout", "pairs_v2_heldout", "pairs_v3_heldout")
    }

    assert {name: len(pairs) for name, pairs in files.items()} == {
        "pairs_v1_tuning": 225,
        "pairs_v1_heldout": 195,
        "pairs_v2_heldout": 180,
        "pairs_v3_heldout": 120,
    }
    facts = {name: {p.a for p in pairs} for name, pairs in files.items()}
    assert not facts["pairs_v3_heldout"] & (
        facts["pairs_v1_tuning"] | facts["pairs_v1_heldout"] | facts["pairs_v2_heldout"]
    )
    assert not facts["pairs_v1_tuning"] & facts["pairs_v1_heldout"]
    kinds = {p.kind for p in files["pairs_v3_heldout"]}
    assert kinds == {"paraphrase", "cross", "numbers", "negation", "swap", "antonym", "entity"}


V5_SHA256 = "cd532e84e619ae4525e5ba3fded9e7f5e1f2b17eeac32803040c93be94001efb"


V6_SHA256 = "0f4ff01742ebcc3482db1e33132e1c346897d02ef5158ec7085757dd0292dba6"


V7_SHA256 = "a05c9f149bf5913f1046f4606ea4bd01f9060b80dd0d4eeeb6b8f3c2203b88ff"
V8_SHA256 = "0c9a2ea3fc516169191e8f6b42d0febe2c0f7473b3b88d65d3d50c5215055745"
V9_SHA256 = "791d9b383043ca4d1bcf7e41c5fdacc726f5a1db8f291be476c95cb3edeafee2"


@pytest.mark.parametrize(
    ("version", "sha256"),
    [("v5", V5_SHA256), ("v6", V6_SHA256), ("v7", V7_SHA256), ("v8", V8_SHA256), ("v9", V9_SHA256)],
)
def test_every_held_out_file_is_the_one_recorded_and_its_json_source_rebuilds_it(version, sha256):
    name = f"pairs_{version}_heldout.json"
    source = next(s for s in pair_file_sources() if s.name == name)
    path = pair_path(name)

    assert hashlib.sha256(path.read_bytes()).hexdigest() == sha256  # recorded in docs/benchmarks.md
    assert pairs_json(source.pairs()) == path.read_text("utf-8")


def test_every_pair_file_with_a_source_is_rebuilt_from_it_byte_for_byte():
    assert pair_files_check() == [
        "pairs_v1_tuning.json: 225 pairs, rebuilt byte for byte",
        "pairs_v1_heldout.json: 195 pairs, rebuilt byte for byte",
        "pairs_v2_heldout.json: 180 pairs, rebuilt byte for byte",
        "pairs_v3_heldout.json: 120 pairs, rebuilt byte for byte",
        "pairs_v5_heldout.json: 216 pairs, rebuilt byte for byte",
        "pairs_v6_heldout.json: 216 pairs, rebuilt byte for byte",
        "pairs_v7_heldout.json: 216 pairs, rebuilt byte for byte",
        "pairs_v8_heldout.json: 216 pairs, rebuilt byte for byte",
        "pairs_v9_heldout.json: 216 pairs, rebuilt byte for byte",
    ]


def test_write_creates_a_missing_pair_file_and_never_overwrites_a_frozen_one(tmp_path, monkeypatch):
    heldout, sources = tmp_path / "pairs", tmp_path / "sources"
    heldout.mkdir()
    sources.mkdir()
    monkeypatch.setattr("bench.registry.pair_files.HELDOUT_DIR", heldout)
    source = json.loads((SOURCES_DIR / "pairs_v9.json").read_text("utf-8"))
    (sources / "pairs_v9.json").write_text(json.dumps(source), "utf-8")
    written = heldout / "pairs_v9_heldout.json"

    with pytest.raises(SystemExit, match="pairs_v9_heldout.json: missing"):
        pair_files_check(sources_dir=sources)
    assert not written.exists()
    assert pair_files_check(write=True, sources_dir=sources) == ["pairs_v9_heldout.json: 216 pairs, written"]
    assert hashlib.sha256(written.read_bytes()).hexdigest() == V9_SHA256

    source["files"]["pairs_v9_heldout.json"]["triples"][0]["negative"] = "Hive inspections are never done."
    (sources / "pairs_v9.json").write_text(json.dumps(source), "utf-8")
    with pytest.raises(
        SystemExit, match="pairs_v9_heldout.json: differs from its source; the file is frozen"
    ):
        pair_files_check(write=True, sources_dir=sources)
    assert hashlib.sha256(written.read_bytes()).hexdigest() == V9_SHA256


TRIPLE = {
    "label": "x",
    "info_type": "Incident",
    "fact": "f",
    "paraphrase": "p",
    "negative": "n",
    "kind": "swap",
}


@pytest.mark.parametrize(
    "triple",
    [
        {field: value for field, value in TRIPLE.items() if field != "kind"},
        dict(reversed(TRIPLE.items())),
        {**TRIPLE, "paraphrase": ""},
        list(TRIPLE.values()),
    ],
)
def test_a_malformed_triple_in_a_source_is_refused(tmp_path, triple):
    source = {
        "note": [],
        "files": {"pairs_v1_x.json": {"seed": "s", "cross_pairs": False, "triples": [triple]}},
    }
    (tmp_path / "pairs_v1.json").write_text(json.dumps(source), "utf-8")

    with pytest.raises(ValueError, match="pairs_v1.json: pairs_v1_x.json: triple 0"):
        pair_file_sources(tmp_path)


PAIR_FILES = (
    "v1_tuning", "v1_heldout", "v2_heldout", "v3_heldout", "v4_heldout", "v5_heldout", "v6_heldout",
    "v7_heldout", "v8_heldout", "v9_heldout",
)  # fmt: skip


@pytest.mark.parametrize("version", ["v5", "v6", "v7", "v8", "v9"])
def test_every_held_out_file_is_balanced_and_shares_no_domain_or_fact_with_earlier_files(version):
    name = f"{version}_heldout"
    pairs = pairs_load(pair_path(f"pairs_{name}.json"))
    earlier = [
        p for n in PAIR_FILES[: PAIR_FILES.index(name)] for p in pairs_load(pair_path(f"pairs_{n}.json"))
    ]

    assert (len(pairs), sum(p.same for p in pairs)) == (216, 108)
    assert len({p.label for p in pairs}) == 18 and not {p.label for p in pairs} & {p.label for p in earlier}
    assert not {p.a for p in pairs} & {p.a for p in earlier}


def test_a_promoted_paraphrase_merges_through_the_real_write_path_and_a_month_edit_does_not(tmp_path):
    path = tmp_path / "pairs.json"
    path.write_text(
        json.dumps(
            [
                {  # a minimal-pair edit of generic verbs: staged before session 3, promoted now
                    "a": "The developer wants API changelog emails, not release notes.",
                    "b": "Send this developer the API changelog emails instead of the release notes.",
                    "same": True,
                    "info_type": "UserPreference",
                },
                {  # "may" the month, not the verb: a different fact
                    "a": "Early-bird tickets are sold until 31 March.",
                    "b": "Early-bird tickets are sold until 31 May.",
                    "same": False,
                    "info_type": "ProductConfig",
                },
            ]
        )
    )
    out = io.StringIO()

    call_command("bench_registry", "--pairs", str(path), "--promote", stdout=out)

    assert "promotions: on" in out.getvalue()
    assert out.getvalue().strip().splitlines()[-1] == "SUMMARY fmr=0.00 dup_recall=100.00 unsure=0.00 pairs=2"
    assert InfoUnit.objects.count() == 0  # the throw-away project is gone

    default = io.StringIO()
    call_command("bench_registry", "--pairs", str(path), stdout=default)
    assert "promotions: off" in default.getvalue()
    assert default.getvalue().strip().splitlines()[-1] == (
        "SUMMARY fmr=0.00 dup_recall=0.00 unsure=50.00 pairs=2"  # by default the paraphrase is staged
    )
