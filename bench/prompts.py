"""The demo prompt set and its judging: what ``manage.py bench_prompts`` measures.

Terms:
* *prompt set* — a YAML file (``format: arg-prompt-set/1``, ``bench/data/demo_prompts.yaml``): realistic
  prompts, each with its category, the role it is sent as, and its *acceptable outcomes*;
* *acceptable outcome* (``Expected``) — a mapping whose keys must all hold: ``node`` (the node that
  answered, or ``none``: no node did — the policy's or the fallback's own message), ``kind`` (the
  outcome kind), ``options`` (a CLARIFY offering at least one of these labels) and ``flag`` (a flag of
  the result starts with this text). A prompt is *acceptable* when any one of its outcomes holds;
* *observed* (``Observed``) — what a routed request gave the asker: the outcome kind, the node whose
  content answered (none for a policy message, a fallback question or an outcome of another kind than
  the node's), the labels a CLARIFY offered and the result's flags;
* *helpful-answer rate* — acceptable prompts / prompts, overall and per category.

Everything here but ``observe`` is pure: reading the set, judging and reporting take no database.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

FORMAT = "arg-prompt-set/1"
DEFAULT_ROLE = "customer"  # the demo token's role (bootstrap_demo.DEMO_TOKEN_ROLE)
KINDS = frozenset({"ACTION", "INFO", "MEMORY", "CLARIFY", "REFOCUS", "REFUSE", "OUT_OF_SCOPE"})
NO_NODE = "none"
GOAL_OVERALL = 0.85  # issue 27, item 8: ≥ 85 % acceptable …
GOAL_CATEGORY = 0.70  # … with no category under 70 %
OUTCOME_KEYS = frozenset({"node", "kind", "options", "flag"})
PROMPT_KEYS = frozenset({"id", "category", "text", "role", "context", "source", "accept"})


class PromptSetError(ValueError):
    """The prompt set cannot be read: every problem found, one per line."""


@dataclass(frozen=True)
class Expected:
    """One acceptable outcome; ``None`` fields are not checked."""

    node: str | None = None  # a node id, or NO_NODE
    kind: str | None = None
    options: tuple[str, ...] = ()
    flag: str | None = None

    def holds(self, seen: Observed) -> bool:
        if self.node is not None and (seen.node or NO_NODE) != self.node:
            return False
        if self.kind is not None and seen.kind != self.kind:
            return False
        if self.options and not (seen.kind == "CLARIFY" and set(self.options) & set(seen.options)):
            return False
        return self.flag is None or any(f.lower().startswith(self.flag.lower()) for f in seen.flags)

    def text(self) -> str:
        parts = [f"{key}={value}" for key, value in (("kind", self.kind), ("node", self.node)) if value]
        if self.options:
            parts.append("options∋" + "|".join(self.options))
        if self.flag:
            parts.append(f"flag={self.flag}…")
        return " ".join(parts)


@dataclass(frozen=True)
class PromptCase:
    id: str
    category: str
    text: str
    accept: tuple[Expected, ...]
    role: str = DEFAULT_ROLE
    context: dict[str, Any] = field(default_factory=dict)
    source: str = ""


@dataclass(frozen=True)
class Observed:
    kind: str  # an outcome kind, or "ERROR" when the request was refused before routing
    node: str | None = None
    options: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    confidence: float | None = None
    answer: str = ""

    def text(self) -> str:
        parts = [self.kind, self.node or "(no node)"]
        if self.options:
            parts.append("options " + "|".join(self.options))
        if self.confidence is not None:
            parts.append(f"c={self.confidence:.2f}")
        return " ".join(parts)


@dataclass(frozen=True)
class Judged:
    case: PromptCase
    seen: Observed
    acceptable: bool
    ms: float = 0.0


@dataclass(frozen=True)
class PromptSet:
    path: Path
    pack: Path | None
    prompts: tuple[PromptCase, ...]


def judged(case: PromptCase, seen: Observed, ms: float = 0.0) -> Judged:
    """``seen`` judged against ``case``'s acceptable outcomes (any one is enough)."""
    return Judged(case, seen, any(expected.holds(seen) for expected in case.accept), ms)


def prompt_set_read(
    path: Path, *, known_nodes: Iterable[str] = (), known_roles: Iterable[str] = ()
) -> PromptSet:
    """The prompt set at ``path``, checked: unique ids, known outcome keys and kinds, and — when given —
    node ids and roles the pack has. Raises ``PromptSetError`` listing every problem."""
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    problems: list[str] = []
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise PromptSetError(f"{path}: not an {FORMAT} file (format: {FORMAT} expected)")
    nodes, roles = set(known_nodes), set(known_roles)
    cases: list[PromptCase] = []
    seen_ids: set[str] = set()
    for n, raw in enumerate(data.get("prompts") or ()):
        where = f"prompts[{n}]"
        if not isinstance(raw, dict):
            problems.append(f"{where}: a mapping expected")
            continue
        where = f"prompt {raw.get('id', n)!s}"
        problems += [f"{where}: unknown key {k!r}" for k in sorted(set(raw) - PROMPT_KEYS)]
        missing = [k for k in ("id", "category", "text", "accept") if not raw.get(k)]
        if missing:
            problems.append(f"{where}: {', '.join(missing)} required")
            continue
        if raw["id"] in seen_ids:
            problems.append(f"{where}: duplicate id")
        seen_ids.add(str(raw["id"]))
        role = str(raw.get("role") or DEFAULT_ROLE)
        if roles and role not in roles:
            problems.append(f"{where}: role {role!r} is not a role of the pack")
        accept = []
        for entry in raw["accept"]:
            outcome, errors = _expected(entry, nodes)
            problems += [f"{where}: {e}" for e in errors]
            if outcome is not None:
                accept.append(outcome)
        cases.append(
            PromptCase(
                id=str(raw["id"]),
                category=str(raw["category"]),
                text=str(raw["text"]),
                accept=tuple(accept),
                role=role,
                context=dict(raw.get("context") or {}),
                source=str(raw.get("source") or ""),
            )
        )
    if not cases and not problems:
        problems.append(f"{path}: no prompts")
    if problems:
        raise PromptSetError("\n".join(problems))
    pack = data.get("pack")
    return PromptSet(path=Path(path), pack=Path(pack) if pack else None, prompts=tuple(cases))


def _expected(entry: Any, nodes: set[str]) -> tuple[Expected | None, list[str]]:
    if not isinstance(entry, dict) or not entry:
        return None, [f"acceptable outcome {entry!r}: a mapping of {sorted(OUTCOME_KEYS)} expected"]
    errors = [f"unknown outcome key {k!r}" for k in sorted(set(entry) - OUTCOME_KEYS)]
    node = entry.get("node")
    node = None if node is None else str(node)
    if node is not None and node != NO_NODE and nodes and node not in nodes:
        errors.append(f"node {node!r} is not a node of the pack")
    kind = entry.get("kind")
    if kind is not None and kind not in KINDS:
        errors.append(f"kind {kind!r} is not one of {sorted(KINDS)}")
    options = tuple(str(o) for o in entry.get("options") or ())
    flag = entry.get("flag")
    return Expected(node=node, kind=kind, options=options, flag=str(flag) if flag else None), errors


def observe(result: Any) -> Observed:
    """What the asker got from a routed ``InferenceResult`` (see the module's *observed*)."""
    from ontology.snapshot_registry import pin_snapshot

    if getattr(result, "error", None) is not None or result.outcome is None:
        return Observed(kind="ERROR", answer=str(getattr(result, "error", "") or ""))
    outcome = result.outcome
    kind = str(getattr(outcome.kind, "value", outcome.kind))
    landing = getattr(result, "landing", None)
    start = getattr(landing, "node_start", None) if landing is not None else None
    node: str | None = None
    if result.route is not None:
        node = result.route.target or start
    elif kind == "OUT_OF_SCOPE":
        node = start  # answered with the OutOfScope node it landed on, if the text is that node's
    view = None
    if node is not None:
        snapshot = pin_snapshot(result.request.project.pk)
        view = snapshot.node(node) if snapshot is not None and node in snapshot.position else None
    node_type = getattr(view, "type", None)
    consistent = {
        "CLARIFY": node_type == "Clarify",
        "OUT_OF_SCOPE": node_type == "OutOfScope"
        and (result.route is not None or outcome.answer == getattr(view, "chunk", None)),
        "REFOCUS": False,
        "REFUSE": False,
    }.get(kind, True)
    weaver = getattr(result, "weaver", None)
    return Observed(
        kind=kind,
        node=node if consistent else None,
        options=tuple(_offered(outcome.details)) if kind == "CLARIFY" else (),
        flags=tuple(str(f) for f in getattr(result, "flags", ()) or ()),
        confidence=getattr(weaver, "confidence", None),
        answer=outcome.answer or "",
    )


def _offered(details: Any) -> Iterator[str]:
    """The label ids a CLARIFY's details name as options, wherever its version of the pipeline keeps them."""
    if isinstance(details, dict):
        if isinstance(details.get("label_id"), str):
            yield details["label_id"]
        for value in details.values():
            yield from _offered(value)
    elif isinstance(details, list | tuple):
        for value in details:
            yield from _offered(value)


def rate(rows: list[Judged]) -> float:
    return sum(r.acceptable for r in rows) / len(rows) if rows else 0.0


def report(rows: list[Judged]) -> dict[str, Any]:
    """The figures: overall and per-category (and per-source) rates, the goal check and the misses."""
    by_category: dict[str, list[Judged]] = {}
    by_source: dict[str, list[Judged]] = {}
    for row in rows:
        by_category.setdefault(row.case.category, []).append(row)
        if row.case.source:
            by_source.setdefault(row.case.source, []).append(row)

    def figures(group: list[Judged]) -> dict[str, Any]:
        return {"prompts": len(group), "acceptable": sum(r.acceptable for r in group), "rate": rate(group)}

    categories = {name: figures(group) for name, group in sorted(by_category.items())}
    worst = min(categories.items(), key=lambda item: (item[1]["rate"], item[0])) if categories else None
    overall = figures(rows)
    return {
        "overall": overall,
        "by_category": categories,
        "by_source": {name: figures(group) for name, group in sorted(by_source.items())},
        "worst_category": {"name": worst[0], **worst[1]} if worst else None,
        "goal": {
            "overall": GOAL_OVERALL,
            "category": GOAL_CATEGORY,
            "met": bool(rows)
            and overall["rate"] >= GOAL_OVERALL
            and all(c["rate"] >= GOAL_CATEGORY for c in categories.values()),
        },
        "misses": [r.case.id for r in rows if not r.acceptable],
    }


def table(rows: list[Judged], figures: dict[str, Any]) -> list[str]:
    """The printed report: the rate per category, then every miss (prompt, got, expected)."""
    lines = [f"{'category':<14} {'prompts':>7} {'ok':>4} {'rate %':>7}"]
    for name, f in figures["by_category"].items():
        mark = "" if f["rate"] >= GOAL_CATEGORY else "  < 70 %"
        lines.append(f"{name:<14} {f['prompts']:>7} {f['acceptable']:>4} {100 * f['rate']:>7.1f}{mark}")
    o = figures["overall"]
    lines.append(f"{'overall':<14} {o['prompts']:>7} {o['acceptable']:>4} {100 * o['rate']:>7.1f}")
    for name, f in figures["by_source"].items():
        lines.append(f"{'source ' + name:<14} {f['prompts']:>7} {f['acceptable']:>4} {100 * f['rate']:>7.1f}")
    misses = [r for r in rows if not r.acceptable]
    lines.append("")
    lines.append(f"misses ({len(misses)}):")
    for r in misses:
        lines.append(f"- {r.case.id} [{r.case.category}, {r.case.role}] {r.case.text!r}")
        lines.append(f"    got      {r.seen.text()}")
        lines.append("    expected " + " / ".join(e.text() for e in r.case.accept))
    return lines


def summary_line(figures: dict[str, Any]) -> str:
    o, worst = figures["overall"], figures["worst_category"] or {"name": "-", "rate": 0.0}
    return (
        f"SUMMARY prompts={o['prompts']} acceptable={o['acceptable']} rate={100 * o['rate']:.1f} "
        f"worst_category={worst['name']}:{100 * worst['rate']:.1f} "
        f"goal_met={'yes' if figures['goal']['met'] else 'no'}"
    )


def row_json(row: Judged) -> dict[str, Any]:
    seen = row.seen
    return {
        "id": row.case.id,
        "category": row.case.category,
        "role": row.case.role,
        "source": row.case.source,
        "text": row.case.text,
        "acceptable": row.acceptable,
        "got": {
            "kind": seen.kind,
            "node": seen.node,
            "options": list(seen.options),
            "flags": list(seen.flags),
            "confidence": seen.confidence,
            "answer": seen.answer[:300],
        },
        "expected": [e.text() for e in row.case.accept],
        "ms": round(row.ms, 1),
    }
