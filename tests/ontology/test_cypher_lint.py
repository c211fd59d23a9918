"""Every Cypher statement of the neo4j backend passes Neo4j's own parser (ARCHITECTURE decision 1).

No Neo4j server can run where CI runs, so this is what keeps the neo4j backend's Cypher honest:
``tools/cypher-lint`` (npm ``@neo4j-cypher/language-support``, ``lintCypherQuery``) checks syntax,
undefined variables, undeclared and unused parameters, and labels / relationship types. Needs
``node``; runs ``npm ci`` in tools/cypher-lint when its node_modules is missing.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from ontology.store import cypher

RUNNER = Path(__file__).resolve().parents[2] / "tools" / "cypher-lint" / "run.py"


@pytest.fixture(scope="module")
def lint_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cypher_lint_run", RUNNER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def statement(query: str, params: list[str]) -> dict[str, object]:
    return {
        "labels": [cypher.NODE_LABEL, cypher.ALIAS_LABEL],
        "relationshipTypes": [cypher.EDGE_REL_TYPE],
        "statements": [{"name": "PROBE", "query": query, "params": params}],
    }


def test_every_statement_passes_neo4j_s_parser(lint_tool: ModuleType) -> None:
    payload = lint_tool.statements_payload()

    result = lint_tool.lint(payload)

    assert result.returncode == 0, result.stdout + result.stderr
    from ontology.analytics.gds_backend import GDS_STATEMENTS

    summary = f"cypher-lint: {len(cypher.STATEMENTS) + len(GDS_STATEMENTS)} statement(s), 0 with errors"
    assert result.stdout.strip().splitlines()[-1] == summary
    assert [s["name"] for s in payload["statements"]] == sorted({**cypher.STATEMENTS, **GDS_STATEMENTS})


@pytest.mark.parametrize(
    ("query", "params", "message"),
    [
        (
            "MATCH (n:OntologyNode {project_id: $project_id}) RETURN m",
            ["project_id"],
            "PROBE:1:57: error: Variable `m` not defined",
        ),
        (
            "MATCH (n:OntologyNode {project_id: $project_id} RETURN n",
            ["project_id"],
            "PROBE:1:49: error: Invalid input 'RETURN'",
        ),
        (
            "MATCH (n:OntologyNode {project_id: $pid}) RETURN n",
            ["project_id"],
            "PROBE:1:36: error: Parameter $pid is not defined.",
        ),
        (
            "MATCH (n:OntologyNode {project_id: $project_id}) RETURN n",
            ["project_id", "node_id"],
            "PROBE:1:1: error: Parameter $node_id is declared but not used.",
        ),
        (
            "MATCH (n:OntologyNod {project_id: $project_id}) RETURN n",
            ["project_id"],
            "PROBE:1:10: warning: Label OntologyNod is not present in the database.",
        ),
    ],
    ids=["undefined variable", "syntax", "undeclared parameter", "unused parameter", "misspelt label"],
)
def test_the_linter_catches_a_broken_statement(
    lint_tool: ModuleType, query: str, params: list[str], message: str
) -> None:
    result = lint_tool.lint(statement(query, params))

    assert result.returncode == 1
    assert any(line.startswith(message) for line in result.stdout.splitlines()), result.stdout
    assert result.stdout.strip().splitlines()[-1] == "cypher-lint: 1 statement(s), 1 with errors"


def test_declared_parameters_match_the_dollar_names_of_each_statement() -> None:
    for name, (query, params) in cypher.STATEMENTS.items():
        assert sorted(set(re.findall(r"\$([A-Za-z_]\w*)", query))) == sorted(params), name
        assert getattr(cypher, name) == query
