"""Demo traffic: a seeded night of customer requests and reactions, so a new platform has a review queue.

A traffic file (``arg-demo-traffic/1``, e.g. ``packs/demo/traffic.yaml``) lists a project's customer
*intents* — prompts customers send, the nodes that serve each intent (``served_by``) and the nodes that
serve it only in part (``partly``) — and how often customers speak up and are satisfied. ``traffic_seed``
sends ``requests`` of them through the real online pipeline (dry-run actions, logged like client
requests), then lets a simulated customer react to the node each request landed on: explicit feedback
(``inference.feedback.feedback_record``) for some, silence for the rest. Everything is drawn from one
seeded generator, so the same file gives the same night. The offline loop then turns that night into
proposals, as it would a real one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from arg_platform.errors import RuleViolation, Violation
from inference.contracts import RequestContext
from inference.feedback import feedback_record
from inference.models import InferenceLog
from inference.pipeline import InferenceRequest
from inference.services import inference_run
from ontology.snapshot_registry import pin_snapshot
from projects.models import Project

FORMAT = "arg-demo-traffic/1"
OPENINGS = ("", "", "", "hi, ", "hello, ", "quick question: ", "please help: ", "hey ")  # drawn per request
ENDINGS = ("", "", "", "?", " please", " thanks", "!")
CHANNELS = ("chat", "web", "email")


@dataclass(frozen=True)
class Intent:
    key: str
    weight: float
    prompts: tuple[str, ...]
    served_by: frozenset[str] = frozenset()
    partly: frozenset[str] = frozenset()


@dataclass(frozen=True)
class TrafficPlan:
    """What a traffic file says: the intents, how many requests, and how customers react."""

    intents: tuple[Intent, ...]
    seed: int
    requests: int
    customers: int
    speak: dict[str, float]
    satisfied: dict[str, float]
    action_succeeds: dict[str, float]


@dataclass
class Night:
    """What ``traffic_seed`` did: requests sent, explicit feedback given, where each intent landed."""

    requests: int = 0
    feedback: int = 0
    landed: dict[str, dict[str, int]] = field(default_factory=dict)


def traffic_read(path: Path) -> TrafficPlan:
    """Read and check a traffic file; ``RuleViolation`` (rule ``traffic.*``) names what is wrong."""
    data: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise RuleViolation(Violation("traffic.format", f"{path} is not an {FORMAT} file", "format"))
    intents = []
    for i, item in enumerate(data.get("intents") or []):
        prompts = tuple(str(p) for p in item.get("prompts") or [])
        if not item.get("key") or not prompts:
            raise RuleViolation(
                Violation("traffic.intent", f"intent #{i + 1} needs a key and prompts", f"intents[{i}]")
            )
        intents.append(
            Intent(
                key=str(item["key"]),
                weight=float(item.get("weight", 1.0)),
                prompts=prompts,
                served_by=frozenset(item.get("served_by") or ()),
                partly=frozenset(item.get("partly") or ()),
            )
        )
    if not intents:
        raise RuleViolation(Violation("traffic.intents", f"{path} lists no intent", "intents"))
    return TrafficPlan(
        intents=tuple(intents),
        seed=int(data.get("seed", 0)),
        requests=int(data.get("requests", 500)),
        customers=int(data.get("customers", 50)),
        speak={"info_checked": 0.55, "info": 0.15, "action": 0.7, **(data.get("speak") or {})},
        satisfied={"served": 0.9, "partly": 0.35, "other": 0.08, **(data.get("satisfied") or {})},
        action_succeeds={"served": 0.95, "other": 0.05, **(data.get("action_succeeds") or {})},
    )


def _unknown_nodes(project: Project, plan: TrafficPlan) -> list[str]:
    snapshot = pin_snapshot(project.pk, force_check=True)
    if snapshot is None:
        raise RuleViolation(
            Violation(
                "traffic.no_release", f"project {project.slug} has no active release to send traffic to"
            )
        )
    named = {node for intent in plan.intents for node in intent.served_by | intent.partly}
    return sorted(node for node in named if node not in snapshot.position)


def traffic_seed(*, project: Project, plan: TrafficPlan, night: str = "1", role: str = "customer") -> Night:
    """Send the plan's requests to ``project``'s active release and record the customers' reactions.

    Request ids are ``demo-<project>-<seed>-<night>-<n>``: sending the same night twice is refused
    (``traffic.seeded``) before any request; another ``night`` with the same seed repeats the traffic.
    """
    unknown = _unknown_nodes(project, plan)
    if unknown:
        raise RuleViolation(
            Violation("traffic.node", f"the traffic names nodes the release does not have: {unknown}")
        )
    prefix = f"demo-{project.slug}-{plan.seed}-{night}-"
    if InferenceLog.objects.filter(request_id=f"{prefix}0").exists():
        raise RuleViolation(
            Violation("traffic.seeded", f"night {night!r} of this traffic was already sent to {project.slug}")
        )
    rng = np.random.default_rng(plan.seed)
    weights = np.array([intent.weight for intent in plan.intents], dtype=float)
    weights /= weights.sum()
    customers = [(f"c{i:03d}", CHANNELS[i % len(CHANNELS)]) for i in range(plan.customers)]
    sent = Night()
    for k in range(plan.requests):
        intent = plan.intents[int(rng.choice(len(plan.intents), p=weights))]
        opening = OPENINGS[int(rng.integers(len(OPENINGS)))]
        prompt = intent.prompts[int(rng.integers(len(intent.prompts)))]
        text = opening + prompt + ENDINGS[int(rng.integers(len(ENDINGS)))]
        user, channel = customers[int(rng.integers(len(customers)))]
        request_id = f"{prefix}{k}"
        result = inference_run(
            InferenceRequest(
                request_id=request_id,
                project=project,
                prompt=text,
                context=RequestContext(channel=channel, user_id=user, session_id=request_id),
                default_role=role,
                dry_run=True,
            )
        )
        sent.requests += 1
        landed = sent.landed.setdefault(intent.key, {})
        target = result.route.target if result.route is not None else None
        landed[target or "-"] = landed.get(target or "-", 0) + 1
        if result.outcome is None or target is None:
            continue
        sent.feedback += _react(project, plan, intent, str(result.outcome.kind), result, target, rng)
    return sent


def _react(
    project: Project, plan: TrafficPlan, intent: Intent, kind: str, result: Any, target: str, rng: Any
) -> int:
    """The simulated customer's explicit reaction (1) or silence (0)."""
    if kind in ("INFO", "MEMORY"):
        checked = result.outcome.active_check is not None
        if rng.random() >= plan.speak["info_checked" if checked else "info"]:
            return 0
        fit = "served" if target in intent.served_by else ("partly" if target in intent.partly else "other")
        helpful = bool(rng.random() < plan.satisfied[fit])
        feedback_record(
            project_id=project.pk, request_id=result.request.request_id, kind="helpful", helpful=helpful
        )
        return 1
    if kind == "ACTION" and rng.random() < plan.speak["action"]:
        succeeded = rng.random() < plan.action_succeeds["served" if target in intent.served_by else "other"]
        feedback_record(
            project_id=project.pk,
            request_id=result.request.request_id,
            kind="action_outcome",
            action_succeeded=bool(succeeded),
        )
        return 1
    return 0
