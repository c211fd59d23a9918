"""Domain errors raised by services; the API and the UI turn them into 4xx answers.

``RuleViolation`` names the rule that refused a write (e.g. ``taxonomy.no_cycles``), the field it
concerns and a message a person can act on. Services raise; nothing is written (they run inside a
transaction that the exception rolls back).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Violation:
    rule: str
    message: str
    field: str = "non_field_errors"
    location: str = ""


class DomainError(Exception):
    """Base of the errors a service raises for bad input; maps to HTTP 400."""

    status_code = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def as_dict(self) -> dict[str, object]:
        return {"detail": self.message}


class RuleViolation(DomainError):
    """One or more validator rules refused the change."""

    def __init__(self, violations: list[Violation] | Violation) -> None:
        self.violations = violations if isinstance(violations, list) else [violations]
        super().__init__("; ".join(f"[{v.rule}] {v.message}" for v in self.violations))

    def as_dict(self) -> dict[str, object]:
        errors: dict[str, list[str]] = {}
        for v in self.violations:
            errors.setdefault(v.field, []).append(v.message)
        return {
            "detail": self.message,
            "rules": [v.rule for v in self.violations],
            "errors": errors,
            "violations": [
                {
                    "rule": v.rule,
                    "field": v.field,
                    "message": v.message,
                    **({"location": v.location} if v.location else {}),
                }
                for v in self.violations
            ],
        }


class ContentTooLarge(RuleViolation):
    """A file or request body above its size limit, refused before it is read; maps to HTTP 413."""

    status_code = 413


class NotFound(DomainError):
    status_code = 404


class Conflict(DomainError):
    status_code = 409


class Forbidden(DomainError):
    status_code = 403


@dataclass
class ViolationCollector:
    """Gathers violations so a validator reports every broken rule at once."""

    violations: list[Violation] = field(default_factory=list)

    def add(self, rule: str, message: str, field: str = "non_field_errors", location: str = "") -> None:
        self.violations.append(Violation(rule=rule, message=message, field=field, location=location))

    def raise_if_any(self) -> None:
        if self.violations:
            raise RuleViolation(list(self.violations))
