"""The seeded end-to-end simulation of the offline loop (issue 7): hidden domain → traffic → nights.

``simulate`` creates two projects from the hidden domain (``bench.simulation.domain``):

* **the defects project** — each night, ``requests`` seeded requests drawn from the true intents go
  through the real online pipeline (``run_inference`` + ``log_result``, actions as dry runs); simulated
  users react according to the oracle — a node that serves the intent satisfies most users, a node
  that carries two intents' facts about a third of them, a wrong node almost nobody — and only some of
  them say so (more often when an active check asks): explicit feedback is recorded through
  ``inference.feedback.feedback_record``, the others stay silent (weak signals). Then one night of the
  offline loop runs (``review.loop.run.offline_loop_run``); a simulated expert reviews the MID_CONF queue
  (approves a proposal that matches a planted defect, rejects the others) and approved proposals are
  applied through ``proposal_apply``. Each night a few simulated users also write one fact of the true
  domain the pack lacks (``domain.MEMORY_FACT``) into their USER memory through
  ``memory.services.memory_write`` (the ``consolidation`` defect);
* **the simulated clock** — night *k* of *K* sits on simulated day *k*: once a night's traffic and
  memory writes are done, its logs, feedback and episodic memories are moved ``K − k`` days back
  (``night_shift``), and that night's loop runs with its window ending then. Nights are thus on distinct
  days, 24 h apart, as the lifecycle and consolidation bars require;
* **the slow-poisoning project** — the same pack, and every night many repeated *weak* episodic
  memories from a single user segment push a false fact (refunds paid in Bitcoin) into episodic memory
  through ``memory.services.memory_write``; the loop runs there with the generators that read episodic
  memory (new semantic node, child label), so every auto-commit it makes would be poisoning-driven. It
  must end with zero auto-commits.

The report gives, per proposal kind, the precision and recall of proposals against the planted defects,
what was auto-committed and what went to review, the auto-commits whose gain was silence-dominated, the
poisoning project's auto-commits, and routing accuracy (held-out prompts routed to a node that serves
their intent) before and after.
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from django.db import transaction

from .domain import (
    DEFECTS,
    HANDLER_MODULE,
    INTENTS,
    MEMORY_FACT,
    MEMORY_LABEL,
    MEMORY_WRITERS,
    POISON_SLUG,
    SLUG,
    Intent,
    facts_of,
    pack,
    partially_serves,
    serves,
)

logger = logging.getLogger(__name__)
PREFIXES = ("", "", "", "hi, ", "hello, ", "quick question: ", "please help: ", "hey ")
SUFFIXES = ("", "", "", "?", " please", " thanks", " asap", "!")
CHANNELS = ("chat", "web", "email")
POISON_GENERATORS = ("memory", "child_label")  # the generators that read episodic memory
POISON_TEXTS = (  # a false fact the graph has no node for, pushed from one segment
    "Refunds can be paid out in Bitcoin from the crypto wallet page.",
    "You can get your refund as Bitcoin on the crypto wallet page.",
    "Refunds are sent in Bitcoin if you pick the crypto wallet option.",
)


@dataclass
class NightReport:
    night: int
    requests: int
    feedback: int
    run_id: int
    proposals: dict[str, int]
    bins: dict[str, int]
    autocommitted: list[str]
    reviewed: dict[str, list[str]]
    release: int | None


@dataclass
class SimulationReport:
    seed: int
    nights: list[NightReport] = field(default_factory=list)
    accuracy_before: float = 0.0
    accuracy_after: float = 0.0
    per_kind: dict[str, dict[str, float]] = field(default_factory=dict)
    precision: float = 0.0
    recall: float = 0.0
    autocommits: int = 0
    silence_autocommits: int = 0
    poisoning_autocommits: int = 0
    poisoning_proposals: dict[str, str] = field(default_factory=dict)
    matched: dict[str, list[int]] = field(default_factory=dict)
    proposals: list[dict[str, Any]] = field(default_factory=list)
    path_length_before: float = 0.0
    path_length_after: float = 0.0

    def summary_line(self) -> str:
        return (
            f"SUMMARY proposal_precision={self.precision:.3f} proposal_recall={self.recall:.3f} "
            f"autocommits={self.autocommits} silence_autocommits={self.silence_autocommits} "
            f"poisoning_autocommits={self.poisoning_autocommits} "
            f"accuracy_before={100 * self.accuracy_before:.1f} accuracy_after={100 * self.accuracy_after:.1f}"
        )


class World:
    """One simulated project: its pack, its users, its prompt → intent book."""

    def __init__(self, slug: str, seed: int) -> None:
        import importlib

        from ontology.releases import release_publish
        from ontology.snapshot_registry import registry
        from projects.models import Project
        from taxonomy.packs import pack_import
        from taxonomy.packs.reader import PackDocument

        # the pack's actions name a demo handler: without it every dry run would fail, silent users' too
        importlib.import_module(HANDLER_MODULE)
        base, n = slug, 1
        while Project.objects.filter(slug=slug).exists():  # a fresh project per simulation run
            n += 1
            slug = f"{base}-{n}"
        self.project = pack_import(PackDocument(data=pack(slug), source="simulation")).project
        release_publish(project=self.project, actor=None, options=None)
        # a fresh world: forget snapshots this process pinned before (a test database reuses row ids)
        registry.clear()
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.users = [(f"u{i:03d}", CHANNELS[i % len(CHANNELS)]) for i in range(60)]
        self.intent_of: dict[str, str] = {}
        self.counter = 0

    def prompt(self, intent: Intent) -> str:
        base = intent.prompts[int(self.rng.integers(len(intent.prompts)))]
        text = (
            PREFIXES[int(self.rng.integers(len(PREFIXES)))]
            + base
            + SUFFIXES[int(self.rng.integers(len(SUFFIXES)))]
        )
        if self.rng.random() < 0.2:
            text = text.lower()
        self.intent_of[text] = intent.key
        return text


def _run(world: World, prompt: str, user: tuple[str, str], request_id: str, *, log: bool) -> Any:
    from inference.contracts import RequestContext
    from inference.pipeline import InferenceRequest, run_inference
    from inference.services import inference_run

    request = InferenceRequest(
        request_id=request_id,
        project=world.project,
        prompt=prompt,
        context=RequestContext(channel=user[1], user_id=user[0], session_id=request_id),
        default_role="member",
        dry_run=True,
    )
    return inference_run(request) if log else run_inference(request)


def _chunk(world: World, node_id: str | None) -> str:
    from ontology.snapshot_registry import pin_snapshot

    snapshot = pin_snapshot(world.project.pk, force_check=True)
    if snapshot is None or node_id is None or node_id not in snapshot.position:
        return ""
    return snapshot.node(node_id).chunk


def traffic(world: World, night: int, requests: int) -> tuple[int, int]:
    """``requests`` logged requests of one night, with the users' explicit (or silent) reactions."""
    from inference.feedback import feedback_record

    weights = np.array([i.weight for i in INTENTS])
    weights /= weights.sum()
    feedback = 0
    for _ in range(requests):
        world.counter += 1
        intent = INTENTS[int(world.rng.choice(len(INTENTS), p=weights))]
        user = world.users[int(world.rng.integers(len(world.users)))]
        request_id = f"{world.project.slug}-{world.seed}-{night}-{world.counter}"
        result = _run(world, world.prompt(intent), user, request_id, log=True)
        outcome = result.outcome
        if outcome is None or result.route is None:
            continue
        chunk = _chunk(world, result.route.target)
        quality = 0.9 if serves(chunk, intent) else (0.35 if partially_serves(chunk, intent) else 0.08)
        kind = str(outcome.kind)
        if kind in ("INFO", "MEMORY"):
            speak = 0.55 if outcome.active_check is not None else 0.12
            if world.rng.random() < speak:
                feedback_record(
                    project_id=world.project.pk,
                    request_id=request_id,
                    kind="helpful",
                    helpful=bool(world.rng.random() < quality),
                )
                feedback += 1
        elif kind == "ACTION" and world.rng.random() < 0.7:
            success = 0.95 if serves(chunk, intent) else 0.05
            feedback_record(
                project_id=world.project.pk,
                request_id=request_id,
                kind="action_outcome",
                action_succeeded=bool(world.rng.random() < success),
            )
            feedback += 1
    return requests, feedback


def night_shift(world: World, since: datetime, days: int) -> int:
    """Move what ``world`` logged or wrote since ``since`` (real time) ``days`` days back: the night's
    InferenceLog rows, their Feedback and the project's episodic memories (written and occurred times).
    Other rows (releases, proposals, InfoUnits, action executions) keep real time. Returns the logs
    moved."""
    from django.db.models import F

    from inference.models import Feedback, InferenceLog
    from memory.models import EpisodicMemory

    if days <= 0:
        return 0
    delta = timedelta(days=days)
    with transaction.atomic():
        logs = InferenceLog.objects.filter(project=world.project, created_at__gte=since)
        Feedback.objects.filter(log__in=logs, created_at__gte=since).update(
            created_at=F("created_at") - delta
        )
        moved = logs.update(created_at=F("created_at") - delta)
        EpisodicMemory.objects.filter(project=world.project, created_at__gte=since).update(
            created_at=F("created_at") - delta, occurred_at=F("occurred_at") - delta
        )
    return moved


def remember(world: World, night: int) -> int:
    """``MEMORY_WRITERS`` users each write ``MEMORY_FACT`` into their USER memory, one session a night
    (the ``consolidation`` defect; ``night_shift`` then dates the episodes on the night's day)."""
    from memory.services import memory_write

    for user, channel in world.users[:MEMORY_WRITERS]:
        memory_write(
            project=world.project,
            text=MEMORY_FACT,
            scope="USER",
            user_id=user,
            session_id=f"{world.project.slug}-{user}-night{night}",
            label_ids=(MEMORY_LABEL,),
            provenance={"role": "member", "channel": channel},
        )
    return MEMORY_WRITERS


def poison(world: World, night: int, episodes: int) -> int:
    """Many repeated weak episodes of a false fact, all from one user segment (the web channel)."""
    from memory.services import memory_write

    written = 0
    web_users = [u for u in world.users if u[1] == "web"][:6]
    for i in range(episodes):
        user = web_users[i % len(web_users)]
        memory_write(
            project=world.project,
            text=POISON_TEXTS[i % len(POISON_TEXTS)],
            scope="GLOBAL",
            info_type=None,
            user_id=user[0],
            session_id=f"poison-{night}-{i}",
            label_ids=("L00006",),
            provenance={"role": "member", "channel": "web"},
        )
        written += 1
    return written


def routing(world: World) -> tuple[float, float]:
    """(accuracy, mean path length) of the held-out prompts (each intent's paraphrases, unperturbed)."""
    correct, total, hops = 0, 0, []
    with transaction.atomic():
        for intent in INTENTS:
            for i, prompt in enumerate(intent.prompts):
                result = _run(world, prompt, ("u-eval", "web"), f"eval-{intent.key}-{i}", log=False)
                target = result.route.target if result.route else None
                correct += serves(_chunk(world, target), intent)
                total += 1
                hops.append(max(0, len(result.route.path_nodes) - 1) if result.route else 0)
        transaction.set_rollback(True)
    return correct / total if total else 0.0, float(np.mean(hops)) if hops else 0.0


# --- matching proposals to the planted defects --------------------------------------------------------


def defect_of(proposal: Any, intent_of: dict[str, str], label_origin: dict[str, str]) -> str | None:
    """The planted defect a proposal fixes, or None (a false positive)."""
    evidence = proposal.evidence or {}
    ops = proposal.changeset or []
    if proposal.kind == "SPLIT" and evidence.get("node") == "N-signin":
        return "split"
    if proposal.kind == "MERGE" and _merged_pair(evidence, ops) == {"N-billing-email", "N-invoice-recipient"}:
        return "merge"
    if proposal.kind == "LABEL_ADD":
        examples = evidence.get("examples") or []
        intents = Counter(intent_of.get(e, "?") for e in examples)
        if examples and intents.get("currency", 0) >= 0.6 * len(examples):
            return "child_label"
    if proposal.kind == "LABEL_PROMOTE" and label_origin.get(evidence.get("label", "")) == "child_label":
        return "child_label"
    if proposal.kind == "EDGE_ADD" and any(
        op.get("op") == "edge_add"
        and (op["source"], op["target"]) == ("N-deploy-troubleshoot", "N-restart-app")
        for op in ops
    ):
        return "detour"
    if proposal.kind in ("EDGE_INHIBIT", "EDGE_WEIGHT") and any(
        op.get("op") == "edge_weight"
        and (op["source"], op["target"]) == ("N-capacity", "N-legacy-migrate")
        and op["weight"] <= -0.01
        for op in ops
    ):
        return "stale_edge"
    if proposal.kind == "OBSOLESCENCE" and any(
        op.get("op") == "node_status"
        and op.get("node_id") == "N-domain-verify-legacy"
        and op.get("status") in ("DEPRECATED", "REMOVED")
        for op in ops
    ):
        return "obsolete"
    if proposal.kind == "LABEL_REATTACH" and any(
        op.get("op") == "label_move" and op.get("label_id") == "L00010" and op.get("cluster") == "deploy"
        for op in ops
    ):
        return "reattach"
    if proposal.kind == "NODE_ADD" and any(
        op.get("op") == "node_add" and "rollback" in facts_of(op.get("chunk") or "") for op in ops
    ):
        return "consolidation"
    return None


def _merged_pair(evidence: dict[str, Any], ops: list[dict[str, Any]]) -> set[str]:
    """The two nodes a MERGE proposal folds together: named by its evidence (``survivor``/``duplicate``
    or ``a``/``b``), else the nodes its changeset deprecates or redirects."""
    for first, second in (("survivor", "duplicate"), ("a", "b")):
        if evidence.get(first) and evidence.get(second):
            return {str(evidence[first]), str(evidence[second])}
    named = [
        op.get("node_id") for op in ops if op.get("op") == "node_status" and op.get("status") == "DEPRECATED"
    ]
    named += [op.get("source") for op in ops if op.get("op") == "alias_set"]
    return {str(n) for n in named if n}


def _label_origin(proposals: list[Any], matched: dict[int, str | None]) -> dict[str, str]:
    """LabelIDs issued by applied LABEL_ADD proposals → the defect that proposal fixed."""
    out: dict[str, str] = {}
    for p in proposals:
        if p.kind != "LABEL_ADD" or p.status != "APPLIED" or not matched.get(p.pk):
            continue
        decision = p.decisions.filter(action="APPLY", status_after="APPLIED").last()
        for label_id in ((decision.changes or {}).get("label_map") or {}).values() if decision else ():
            out[label_id] = str(matched[p.pk])  # a matched proposal: its defect's key
    return out


def review_queue(world: World, label_origin: dict[str, str]) -> dict[str, list[str]]:
    """The simulated expert: approve pending proposals that fix a planted defect, reject the others."""
    from review.loop.application import proposal_apply
    from review.models import Proposal, ProposalDecision, ProposalStatus

    out: dict[str, list[str]] = {"approved": [], "rejected": [], "failed": []}
    pending = list(
        Proposal.objects.filter(project=world.project, status=ProposalStatus.PENDING_REVIEW).order_by(
            "-score"
        )
    )
    for proposal in pending:
        defect = defect_of(proposal, world.intent_of, label_origin)
        before = proposal.status
        proposal.status = ProposalStatus.APPROVED if defect else ProposalStatus.REJECTED
        proposal.decision_reason = (
            f"simulated expert: {'fixes ' + defect if defect else 'not a real problem'}"
        )
        proposal.save(update_fields=["status", "decision_reason", "updated_at"])
        ProposalDecision.objects.create(
            proposal=proposal,
            action=ProposalDecision.Action.APPROVE if defect else ProposalDecision.Action.REJECT,
            actor_name="simulated-expert",
            reason=proposal.decision_reason,
            status_before=before,
            status_after=proposal.status,
        )
        if defect:
            try:
                proposal_apply(proposal=proposal, actor=None)
                out["approved"].append(f"{proposal.kind}#{proposal.pk}")
            except Exception as exc:  # a stale approved proposal (another change touched its nodes)
                out["failed"].append(f"{proposal.kind}#{proposal.pk}: {exc}")
        else:
            out["rejected"].append(f"{proposal.kind}#{proposal.pk}")
    return out


def simulate(
    *,
    seed: int,
    nights: int,
    requests: int = 500,
    poison_episodes: int = 40,
    review: bool = True,
    progress: Callable[[str], None] | None = None,
    overrides: dict[str, Any] | None = None,
) -> SimulationReport:
    """Run the whole simulation (see the module doc) and return its report."""
    from django.utils import timezone

    from review.loop.run import offline_loop_run
    from review.models import Proposal

    say = progress or (lambda message: None)
    report = SimulationReport(seed=seed)
    world = World(SLUG, seed)
    poisoned = World(POISON_SLUG, seed + 1)
    report.accuracy_before, report.path_length_before = routing(world)
    say(f"routing accuracy before: {report.accuracy_before:.1%}")
    matched: dict[int, str | None] = {}
    for night in range(1, nights + 1):
        started = timezone.now()
        n, fb = traffic(world, night, requests)
        remember(world, night)
        night_shift(world, started, nights - night)
        say(f"night {night}: {n} requests, {fb} explicit signals")
        run = offline_loop_run(
            project=world.project,
            idempotency_key=f"sim-{seed}-{night}",
            overrides=overrides,
            window_end=timezone.now() - timedelta(days=nights - night),
        )
        proposals = list(Proposal.objects.filter(project=world.project).order_by("pk"))
        label_origin = _label_origin(proposals, matched)
        for p in proposals:
            matched[p.pk] = defect_of(p, world.intent_of, label_origin)
        reviewed = review_queue(world, label_origin) if review else {}
        steps = run.stats.get("steps", {})
        night_props = [p for p in proposals if p.run_id == run.pk]
        report.nights.append(
            NightReport(
                night=night,
                requests=n,
                feedback=fb,
                run_id=run.pk,
                proposals=dict(Counter(p.kind for p in night_props)),
                bins=steps.get("bin", {}).get("bins", {}),
                autocommitted=[f"{p.kind}#{p.pk}" for p in night_props if p.confidence_bin == "HIGH_CONF"],
                reviewed=reviewed,
                release=steps.get("apply", {}).get("release"),
            )
        )
        say(
            f"night {night}: run #{run.pk} {run.status}, proposals {dict(Counter(p.kind for p in night_props))}"
        )
        poison(poisoned, night, poison_episodes)
        traffic(poisoned, night, max(50, requests // 5))
        # only the generators that read episodic memory: any auto-commit here is poisoning-driven
        offline_loop_run(
            project=poisoned.project,
            idempotency_key=f"sim-poison-{seed}-{night}",
            overrides={**(overrides or {}), "generators": list(POISON_GENERATORS)},
        )
    report.accuracy_after, report.path_length_after = routing(world)
    say(f"routing accuracy after: {report.accuracy_after:.1%}")

    proposals = list(Proposal.objects.filter(project=world.project).order_by("pk"))
    label_origin = _label_origin(proposals, matched)
    matched = {p.pk: defect_of(p, world.intent_of, label_origin) for p in proposals}
    by_kind: dict[str, list[Any]] = defaultdict(list)
    for p in proposals:
        by_kind[p.kind].append(p)
    found = {d for d in matched.values() if d}
    for kind, items in sorted(by_kind.items()):
        defects = [
            d for d in DEFECTS if d.kind == kind or (kind == "LABEL_PROMOTE" and d.kind == "LABEL_ADD")
        ]
        hits = [p for p in items if matched[p.pk]]
        report.per_kind[kind] = {
            "proposals": len(items),
            "precision": len(hits) / len(items),
            "recall": (len({matched[p.pk] for p in hits}) / len(defects)) if defects else 0.0,
            "autocommitted": sum(1 for p in items if p.confidence_bin == "HIGH_CONF"),
            "reviewed": sum(1 for p in items if p.confidence_bin == "MID_CONF"),
            "backlog": sum(1 for p in items if p.confidence_bin == "LOW_CONF"),
        }
    for defect in DEFECTS:
        if defect.kind not in by_kind:
            report.per_kind.setdefault(defect.kind, {"proposals": 0, "precision": 0.0, "recall": 0.0})
    report.precision = (sum(1 for p in proposals if matched[p.pk]) / len(proposals)) if proposals else 0.0
    report.recall = len(found) / len(DEFECTS)
    report.matched = {d.key: [p.pk for p in proposals if matched[p.pk] == d.key] for d in DEFECTS}
    auto = [p for p in proposals if p.confidence_bin == "HIGH_CONF"]
    report.autocommits = len(auto)
    report.silence_autocommits = sum(1 for p in auto if (p.replay or {}).get("silence_dominated"))
    poison_props = list(Proposal.objects.filter(project=poisoned.project))
    report.poisoning_autocommits = sum(1 for p in poison_props if p.confidence_bin == "HIGH_CONF")
    report.poisoning_proposals = {
        f"{p.kind}#{p.pk}": f"{p.confidence_bin or p.status}: {(p.replay or {}).get('bin_reason', '')}"[:200]
        for p in poison_props
    }
    report.proposals = [
        {
            "id": p.pk,
            "kind": p.kind,
            "title": p.title,
            "bin": p.confidence_bin,
            "status": p.status,
            "score": p.score,
            "defect": matched[p.pk],
            "reason": (p.replay or {}).get("bin_reason", ""),
        }
        for p in proposals
    ]
    return report
