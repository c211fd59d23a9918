"""``manage.py bench_backends`` (issue 22) on tiny sizes: every table and the SUMMARY line carry real
numbers, on the sql backend alone (no ``NEO4J_URI``) and with the neo4j column on a real server
(``tests/neo4j_server.py``); the throwaway projects are gone afterwards, from both stores."""

from __future__ import annotations

import math
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

ARGS = ("--nodes", "200", "--lookups", "50", "--alias-share", "0.05", "--demo-embedder", "hash")
TABLES = (
    "demo pack",
    "offline loop apply",
    "replace_graph",
    "release_publish of the synthetic graphs",
    "Louvain + Node Similarity",
    "alias resolution",
    "memory",
)


def _run() -> str:
    out = StringIO()
    call_command("bench_backends", *ARGS, stdout=out, stderr=StringIO())
    return out.getvalue()


def _summary(text: str) -> dict[str, str]:
    line = text.strip().splitlines()[-1]
    assert line.startswith("SUMMARY "), line
    return dict(pair.split("=", 1) for pair in line.split()[1:])


def _table(text: str, title: str) -> list[list[str]]:
    """The rows of the table whose title starts with ``title``: header first, cells split on 2+ spaces."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"## {title}"))
    rows = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        rows.append([cell.strip() for cell in line.strip().split("  ") if cell.strip()])
    return rows


def _number(cell: str) -> float:
    value = float(cell.replace(",", ""))
    assert math.isfinite(value) and value >= 0, cell
    return value


def _check(text: str, backends: list[str]) -> dict[str, str]:
    summary = _summary(text)
    assert summary["backends"] == ",".join(backends)
    assert summary["failures"] == "0", text
    for backend in backends:
        for key in (
            "import_s",
            "publish_s",
            "apply_s",
            "replace_s_200",
            "replace_again_s_200",
            "publish_s_200",
            "louvain_s_200",
            "nodesim_s_200",
        ):
            _number(summary[f"{backend}_{key}"])
        assert _number(summary[f"{backend}_alias_us_p50_200"]) > 0
        assert _number(summary[f"{backend}_alias_us_p95_200"]) >= _number(
            summary[f"{backend}_alias_us_p50_200"]
        )
        assert _number(summary[f"{backend}_publish_s"]) > 0 and _number(summary[f"{backend}_apply_s"]) > 0
    assert _number(summary["python_peak_rss_mb"]) > 50
    for title in TABLES:
        header, *rows = _table(text, title)
        assert rows, title
        for backend in backends:
            assert any(cell.startswith(backend) or cell.endswith(backend) for cell in header) or title in (
                "Louvain + Node Similarity",
                "memory",
            ), (title, header)
    # every backend cell of the per-size tables is a number
    for title in ("replace_graph", "release_publish of the synthetic graphs", "alias resolution"):
        header, row = _table(text, title)
        assert row[0] == "200"
        for cell in row[1:]:
            _number(cell)
    header, row = _table(text, "Louvain + Node Similarity")
    assert [_number(cell) for cell in row]
    assert "networkx louvain s" in header and ("gds louvain s" in header) == ("neo4j" in backends)
    for _, *cells in _table(text, "demo pack")[1:] + _table(text, "offline loop apply")[1:]:
        assert len(cells) == len(backends) and all(_number(cell) >= 0 for cell in cells)
    from projects.models import Project

    assert not Project.objects.filter(slug__startswith="bench-").exists()
    return summary


@pytest.mark.django_db
def test_the_sql_column_alone_without_neo4j(settings: Any) -> None:
    settings.NEO4J_URI = ""
    text = _run()
    assert "# neo4j: not measured" in text
    summary = _check(text, ["sql"])
    assert not any(key.startswith("neo4j") for key in summary)


@pytest.mark.neo4j
@pytest.mark.django_db
def test_both_columns_on_a_real_neo4j(settings: Any) -> None:
    from bench.management.commands.bench_backends import find_neo4j_pid
    from tests.neo4j_server import neo4j_connection, neo4j_store

    connection = neo4j_connection()
    settings.NEO4J_URI = connection.uri
    settings.NEO4J_USER = connection.user
    settings.NEO4J_PASSWORD = connection.password
    settings.NEO4J_DATABASE = connection.database
    store = neo4j_store()
    count = "MATCH (n) WHERE n:OntologyNode OR n:NodeAlias RETURN count(n) AS n"
    try:
        with store.driver.session(database=store.database) as session:
            before = session.run(count).single()["n"]
        text = _run()
        with store.driver.session(database=store.database) as session:
            after = session.run(count).single()["n"]
    finally:
        store.close()
    summary = _check(text, ["sql", "neo4j"])
    assert after == before  # the bench's graphs were deleted from Neo4j too
    header, row = _table(text, "Louvain + Node Similarity")
    assert "gds project s" in header
    if find_neo4j_pid(connection.uri) is not None:  # a throwaway server: its Java process is measured
        assert _number(summary["neo4j_peak_rss_mb"]) > 100
