"""Lint every Cypher statement of the neo4j graph backend with Neo4j's own parser.

    python tools/cypher-lint/run.py            # from the repo root; exits non-zero on any error

Dumps ``ontology.store.cypher.STATEMENTS`` and the GDS analytics' ``GDS_STATEMENTS`` (name → query,
declared parameters) to JSON together with
the labels and relationship type the backend uses, and feeds it to ``lint.mjs`` (Node, package
``@neo4j-cypher/language-support``). Runs ``npm ci`` here first when ``node_modules`` is missing.
Warnings count as failures too (``--strict``): a misspelt label is a silent bug at run time.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


def statements_payload() -> dict[str, object]:
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from ontology.analytics.gds_backend import GDS_STATEMENTS
    from ontology.store import cypher

    if set(cypher.STATEMENTS) & set(GDS_STATEMENTS):
        raise SystemExit("cypher-lint: a statement name is used twice")
    every = {**cypher.STATEMENTS, **GDS_STATEMENTS}
    return {
        "labels": list(cypher.LABELS),
        "relationshipTypes": [cypher.EDGE_REL_TYPE],
        "statements": [
            {"name": name, "query": query, "params": list(params)}
            for name, (query, params) in sorted(every.items())
        ],
    }


def ensure_installed() -> None:
    if (HERE / "node_modules" / "@neo4j-cypher" / "language-support").is_dir():
        return
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("cypher-lint: npm is not installed")
    subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--prefix", str(HERE)], check=True)


def lint(payload: object, *, strict: bool = True) -> subprocess.CompletedProcess[str]:
    """Run lint.mjs over ``payload`` (a statement list or the object form); lint errors do not raise."""
    ensure_installed()
    node = shutil.which("node")
    if node is None:
        raise SystemExit("cypher-lint: node is not installed")
    args = [node, str(HERE / "lint.mjs"), *(["--strict"] if strict else [])]
    return subprocess.run(args, input=json.dumps(payload), capture_output=True, text=True, check=False)


def main() -> int:
    result = lint(statements_payload())
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    return result.returncode


if __name__ == "__main__":
    raise SystemExit(main())
