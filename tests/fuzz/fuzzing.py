"""Schemathesis against the platform's own OpenAPI schema, in process (WSGI) on the real database.

``fuzz_api`` loads ``/api/v1/schema/``, and for every operation generates ``examples`` positive
(schema-valid) and ``examples`` negative (schema-violating) requests with Hypothesis, sends them with
the given credentials and the real project slug in the path, and records every answer of 500 or more.
It never stops at the first failure: the report lists each 5xx once (method, path template, status,
a reproducing request), so one run shows everything to fix.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable

SUPPRESSED = list(HealthCheck)


@dataclass
class FuzzReport:
    operations: int = 0
    cases: int = 0
    by_status: Counter[int] = field(default_factory=Counter)
    server_errors: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"SUMMARY operations={self.operations} cases={self.cases} "
            f"server_errors={len(self.server_errors)} "
            f"statuses={','.join(f'{k}:{v}' for k, v in sorted(self.by_status.items()))}"
        )

    def as_json(self) -> str:
        return json.dumps(
            {
                "operations": self.operations,
                "cases": self.cases,
                "by_status": dict(sorted(self.by_status.items())),
                "server_errors": self.server_errors,
                "skipped": self.skipped,
            },
            indent=2,
            default=str,
        )


def _bound(record: Any, mode: Any) -> Any:
    def run_case(case: Any) -> None:
        record(case, mode)

    return run_case


def fuzz_api(
    *, app: Any, headers: dict[str, str], path_values: dict[str, str], examples: int, derandomize: bool
) -> FuzzReport:
    import schemathesis
    from schemathesis import GenerationMode

    schema = schemathesis.openapi.from_wsgi("/api/v1/schema/", app)
    report = FuzzReport()
    seen: set[tuple[str, str, int]] = set()

    def record(case: Any, mode: Any) -> None:
        for name, value in path_values.items():
            if case.path_parameters and name in case.path_parameters:
                case.path_parameters[name] = value
        response = case.call(headers=headers)
        report.cases += 1
        report.by_status[response.status_code] += 1
        key = (case.method, case.path, response.status_code)
        if response.status_code >= 500 and key not in seen:
            seen.add(key)
            report.server_errors.append(
                {
                    "method": case.method,
                    "path": case.path,
                    "status": response.status_code,
                    "mode": mode.value,
                    "path_parameters": case.path_parameters,
                    "query": case.query,
                    "body": case.body if not isinstance(case.body, bytes) else repr(case.body[:200]),
                    "response": response.text[:400],
                }
            )

    for result in schema.get_all_operations():
        operation = result.ok()
        report.operations += 1
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            strategy = operation.as_strategy(generation_mode=mode)
            run = settings(
                max_examples=examples,
                deadline=None,
                derandomize=derandomize,
                suppress_health_check=SUPPRESSED,
                database=None,
                phases=[Phase.generate],
            )(given(case=strategy)(_bound(record, mode)))
            try:
                run()
            except Unsatisfiable:
                report.skipped.append(f"{operation.method.upper()} {operation.path} ({mode.value})")
    return report
