"""bench_load end to end: a real gunicorn on loopback fed an open-loop infer + feedback mix; every
answer is counted, every row it must leave is in the database, and the infer prompts are unseen
(so the embedder really runs)."""

from __future__ import annotations

import re
import sqlite3
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

SUMMARY = re.compile(
    r"SUMMARY rate=8 duration_s=4 requests=32 errors=(\d+) infer_p50_ms=[\d.]+ infer_p95_ms=[\d.]+ "
    r"feedback_p95_ms=[\d.]+ achieved_rps=[\d.]+ rss_start_mb=\d+ rss_end_mb=\d+ rss_growth_pct=-?[\d.]+ "
    r"max_lag_ms=[\d.]+"
)


@pytest.mark.server
def test_short_load_run_answers_everything_and_leaves_every_row(tmp_path):
    out, err = StringIO(), StringIO()
    data_dir = tmp_path / "load"
    call_command(
        "bench_load",
        rate=8,
        duration=4,
        workers=1,
        threads=2,
        data_dir=str(data_dir),
        stdout=out,
        stderr=err,
    )
    lines = out.getvalue().strip().splitlines()
    match = SUMMARY.fullmatch(lines[-1])
    assert match, lines[-1]
    assert match.group(1) == "0"
    report = out.getvalue() + err.getvalue()
    assert "(nothing lost)" in report
    with sqlite3.connect(data_dir / "arg.sqlite3") as db:
        query = "SELECT prompt FROM inference_inferencelog WHERE prompt LIKE '%(ticket 7-%'"
        measured = [row[0] for row in db.execute(query)]
        feedback = db.execute("SELECT COUNT(*) FROM inference_feedback").fetchone()[0]
    assert measured and len(set(measured)) == len(measured)  # unique: no embedding cache hit
    assert len(measured) + feedback == 32


def test_bad_shares_are_refused():
    with pytest.raises(CommandError, match="--repeat-share"):
        call_command("bench_load", rate=5, duration=1, repeat_share=1.5)
