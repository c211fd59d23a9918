"""bench_latency end to end: its own data folder, a real gunicorn on loopback, real HTTP, then nothing
left behind — and every request it sent left exactly one InferenceLog row."""

from __future__ import annotations

import json
import re
import socket
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

SUMMARY = re.compile(
    r"SUMMARY p50_ms_10k=(\d+\.\d) p95_ms_10k=(\d+\.\d) embed_p50_ms=(\d+\.\d) rps=(\d+) growth_p95=(\d+\.\d\d)"
)


@pytest.mark.server
def test_small_run_prints_table_and_summary_and_logs_every_request(tmp_path):
    out, err = StringIO(), StringIO()
    call_command(
        "bench_latency",
        nodes="300",
        requests=40,
        floor=20,
        json=str(tmp_path / "results" / "latency.json"),
        stdout=out,
        stderr=err,
    )
    lines = out.getvalue().strip().splitlines()
    match = SUMMARY.fullmatch(lines[-1])
    assert match, lines[-1]
    assert float(match.group(5)) == 1.0  # one size: P95 over itself
    assert lines[0].split()[:3] == ["nodes", "edges", "labels"]
    assert lines[1].split()[0] == "300"
    assert "tight floor" in lines[0] and "P50/tight" in lines[0]

    results = json.loads((tmp_path / "results" / "latency.json").read_text())
    row = results["sizes"][0]
    assert (row["nodes"], row["edges"]) == (300, 1500)
    assert (row["latency"]["requests"], row["latency"]["ok"]) == (40, 40)
    assert (row["paired"]["requests"], row["paired"]["ok"]) == (40, 40)
    assert (row["throughput"]["requests"], row["throughput"]["ok"]) == (40, 40)
    assert (
        row["latency"]["concurrency"],
        row["paired"]["concurrency"],
        row["throughput"]["concurrency"],
    ) == (
        1,
        2,
        8,
    )
    assert row["failures"] == [] and row["timed_out"] is False
    assert row["requests_sent"] == row["warm_up_requests"] + 120
    assert row["log_rows"] == row["requests_sent"]
    assert sum(row["outcomes"].values()) == 120
    assert match.group(1) == f"{row['latency']['p50_ms']:.1f}"
    # the goal's floor is the paced one: embedded at the latency phase's request cycle
    paced, tight = row["embed_floor_paced_ms"], row["embed_floor_tight_ms"]
    assert match.group(3) == f"{paced['p50']:.1f}"
    # both floors are measured between the latency phase's blocks, every floor prompt once
    assert paced["samples"] == 20 and paced["p50"] > 0
    assert tight["samples"] == 20 and tight["p50"] > 0
    # the pacing period is one client's wall time per request, so never shorter than a request
    assert paced["period_p50_ms"] >= row["latency"]["p50_ms"] * 0.9
    assert row["embed_floor_prepare_ms"]["p50"] > 0
    assert row["latency"]["server_steps_p50_ms"]["embed"] > 0

    progress = err.getvalue()
    folder = Path(re.search(r"data folder (\S+): migrating", progress).group(1))
    port = int(re.search(r"gunicorn answers on port (\d+)", progress).group(1))
    assert "stopping gunicorn" in progress
    assert "embed-only floor probe ready" in progress
    assert not folder.exists()  # the temporary database and logs are removed
    with socket.socket() as probe, pytest.raises(ConnectionRefusedError):
        probe.connect(("127.0.0.1", port))  # and the server is gone
