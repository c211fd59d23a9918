"""The offline loop on a real-utterance world, night after night (issue 25, item 1).

``run`` imports the world's pack (``bench.loop_real.world``) through the platform's own import path,
publishes it, and then, for each night:

1. **traffic** — ``requests`` turns sent as a client app would: ``POST /api/v1/infer`` with an API token
   (Django's test client in this process: the whole request path, middleware, authentication, the log
   row), each utterance drawn from the traffic pool of its intent, with a user id, a channel and a
   session id. Most sessions are one turn; the planted follow-up pair (P then Q) and a few random
   same-domain pairs make two-turn sessions. A share of the users (``feedback_share``) then say whether
   an Info answer helped (``POST /api/v1/feedback``, helpful true/false drawn from the oracle: a node that
   serves the intent satisfies 90 % of them, one that carries its fact among others 30 %, any other 10 %);
   the rest stay silent. An Action's result is reported for ``action_feedback_share`` of them (the
   client app's system knows whether the right thing was done: success 95 % on a node that serves the
   intent, 5 % otherwise);
2. **the loop** — ``review.loop.run.offline_loop_run``: the whole night, steps A–E, auto-commits
   published;
3. **judging** — every proposal the night produced or refreshed is matched against the ground truth
   (``judge``): true when it targets a planted defect with the kind that fixes it;
4. **review** — a reviewer (a person with the reviewer role, signed in) reads the visible queue through
   the review API (``GET /api/v1/projects/<slug>/proposals/``: the open view, best score first) and,
   with ``reviewer="all"``, approves all of it (a trusting reviewer), with ``"true"`` approves the true
   ones and rejects the others, with ``"none"`` decides nothing; approvals are batch approvals, then
   ``POST …/proposals/apply-approved/`` publishes them (the job runs in this process, Celery eager);
5. **accuracy** — the held-out utterances are routed through the pipeline (rolled back, nothing logged)
   before the night's review and after it; and, from the same release, on a shadow release that carries
   only the *true* proposals of the visible queue (what a reviewer approving only true ones would get).

Everything the judge needs is the world's ground truth; nothing of it reaches the platform.
"""

from __future__ import annotations

import logging
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from rest_framework.test import APIClient

import bench.loop_real.handlers  # noqa: F401  (registers the worlds' Action handler)
from arg_platform.celery import app
from arg_platform.models import Job
from bench.loop_real.world import World
from inference.contracts import RequestContext
from inference.learning.encoder_finetune import encoder_for_documents
from inference.models import Feedback, InferenceLog
from inference.pipeline import InferenceRequest, run_inference
from ontology.models import Release
from ontology.releases import release_publish
from ontology.snapshot_registry import pin_snapshot, registry
from projects.models import Project
from projects.services import api_token_create, membership_set
from review.changeset import changeset_load
from review.loop.collection import collect
from review.loop.generators import lifecycle, merge, split
from review.loop.generators.base import GeneratorContext, sentences, unit, wilson_upper
from review.loop.params import loop_params
from review.loop.run import offline_loop_run
from review.loop.shadow import BaseRelease, ChangesetConflict, shadow_build
from review.models import OfflineRun, Proposal
from taxonomy.packs import pack_import
from taxonomy.packs.reader import PackDocument

logger = logging.getLogger(__name__)
CHANNELS = ("chat", "web", "email", "app")
API = "/api/v1"
HELPFUL_IF_SERVED, HELPFUL_IF_PARTIAL, HELPFUL_OTHERWISE = 0.9, 0.3, 0.1
ACTION_SUCCESS_IF_SERVED, ACTION_SUCCESS_OTHERWISE = 0.95, 0.05


@dataclass
class Sighting:
    """One proposal as one night left it."""

    night: int
    proposal: int
    kind: str
    bin: str
    status: str
    score: float | None
    defect: str | None
    title: str
    reason: str
    silence_dominated: bool
    confirmed_gain: float

    def as_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class NightReport:
    night: int
    requests: int = 0
    feedback: int = 0
    sessions_two_turns: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    served: float = 0.0  # share of the night's traffic routed to a node serving its intent
    new_intent_flags: int = 0
    run_id: int = 0
    run_status: str = ""
    proposals: dict[str, int] = field(default_factory=dict)
    false_proposals: int = 0
    new_false: int = 0
    bins: dict[str, int] = field(default_factory=dict)
    autocommitted: list[str] = field(default_factory=list)
    visible: list[str] = field(default_factory=list)
    approved: list[int] = field(default_factory=list)
    rejected: list[int] = field(default_factory=list)
    applied: dict[str, Any] = field(default_factory=dict)
    accuracy_before_review: float = 0.0
    accuracy_after_review: float = 0.0
    accuracy_true_only: float | None = None
    seconds: dict[str, float] = field(default_factory=dict)


@dataclass
class Report:
    world: dict[str, Any]
    reviewer: str
    nights: list[NightReport] = field(default_factory=list)
    sightings: list[Sighting] = field(default_factory=list)
    accuracy_start: dict[str, Any] = field(default_factory=dict)
    accuracy_end: dict[str, Any] = field(default_factory=dict)
    defect_live: dict[str, Any] = field(default_factory=dict)
    per_kind: dict[str, dict[str, Any]] = field(default_factory=dict)
    per_defect: dict[str, dict[str, Any]] = field(default_factory=dict)
    precision: float = 0.0
    recall: float = 0.0
    surfaced: float = 0.0
    autocommits: list[dict[str, Any]] = field(default_factory=list)
    proposals: list[dict[str, Any]] = field(default_factory=list)
    intent_drops: list[dict[str, Any]] = field(default_factory=list)
    merge_gates: dict[str, dict[str, Any]] = field(default_factory=dict)
    split_gates: dict[str, dict[str, Any]] = field(default_factory=dict)
    reattach_gates: dict[str, dict[str, Any]] = field(default_factory=dict)
    seconds: float = 0.0

    def summary_line(self) -> str:
        silence = sum(1 for a in self.autocommits if a["silence_dominated"])
        false_auto = sum(1 for a in self.autocommits if not a["defect"])
        true_only = [n for n in self.nights if n.accuracy_true_only is not None]
        gain_queue = sum(n.accuracy_after_review - n.accuracy_before_review for n in self.nights)
        gain_true = sum((n.accuracy_true_only or 0.0) - n.accuracy_before_review for n in true_only)
        return (
            f"SUMMARY seed={self.world['seed']} domains={','.join(self.world['domains'])} "
            f"nights={len(self.nights)} requests={sum(n.requests for n in self.nights)} "
            f"proposals={len(self.proposals)} precision={self.precision:.3f} recall={self.recall:.3f} "
            f"surfaced={self.surfaced:.3f} autocommits={len(self.autocommits)} "
            f"silence_autocommits={silence} false_autocommits={false_auto} "
            f"accuracy_before={100 * self.accuracy_start.get('all', 0):.1f} "
            f"accuracy_after={100 * self.accuracy_end.get('all', 0):.1f} "
            f"review_gain={100 * gain_queue:+.1f} true_only_gain="
            + (f"{100 * gain_true:+.1f}" if true_only else "n/a")
            + " false_per_night="
            + ",".join(str(n.false_proposals) for n in self.nights)
        )


# --- judging ------------------------------------------------------------------------------------------


def merged_pair(evidence: dict[str, Any], ops: list[dict[str, Any]]) -> set[str]:
    """The two nodes a MERGE folds into its new node AB: named by its evidence (``survivor`` and
    ``duplicate``), else the nodes its changeset deprecates and redirects (A → AB, B → AB)."""
    if evidence.get("survivor") and evidence.get("duplicate"):
        return {str(evidence["survivor"]), str(evidence["duplicate"])}
    named = [
        op.get("node_id") for op in ops if op.get("op") == "node_status" and op.get("status") == "DEPRECATED"
    ]
    named += [op.get("source") for op in ops if op.get("op") == "alias_set"]
    return {str(n) for n in named if n}


class Judge:
    """Matches proposals to the world's planted defects (the ground truth)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.by_key = {d.key: d for d in world.defects}
        self.label_origin: dict[str, str] = {}  # LabelIDs issued by applied true LABEL_ADDs → defect

    def intent_of(self, text: str) -> str:
        return self.world.text_intent.get(" ".join(text.lower().split()), "?")

    def __call__(self, proposal: Any) -> str | None:
        for d in self.world.defects:
            if self.matches(d, proposal):
                return d.key
        return None

    def matches(self, d: Any, proposal: Any) -> bool:
        """``proposal`` targets defect ``d`` with a kind that fixes it."""
        evidence, kind = proposal.evidence or {}, proposal.kind
        ops = [op for op in (proposal.changeset or []) if isinstance(op, dict)]
        edges_added = {(op.get("source"), op.get("target")) for op in ops if op.get("op") == "edge_add"}
        if d.kind == "SPLIT":
            return kind == "SPLIT" and evidence.get("node") == d.details["node"]
        if d.kind == "MERGE":
            return kind == "MERGE" and merged_pair(evidence, ops) == set(d.details["nodes"])
        if d.key == "misfiled":
            return kind == "LABEL_REATTACH" and any(
                op.get("op") == "label_move"
                and op.get("label_id") == d.details["label"]
                and op.get("cluster") == d.details["cluster"]
                for op in ops
            )
        if d.key == "retired-action":
            return kind == "OBSOLESCENCE" and any(
                op.get("op") == "node_status"
                and op.get("node_id") == d.details["node"]
                and op.get("status") in ("DEPRECATED", "REMOVED")
                for op in ops
            )
        if d.key == "detour":
            return kind == "EDGE_ADD" and (d.details["source"], d.details["target"]) in edges_added
        if d.key == "followup":
            pair = (d.details["source"], d.details["target"])
            return kind == "EDGE_ADD" and (pair in edges_added or pair[::-1] in edges_added)
        if d.key == "obsolete":
            edge = (d.details["source"], d.details["target"])
            inhibited = any(
                op.get("op") == "edge_weight"
                and (op.get("source"), op.get("target")) == edge
                and float(op.get("weight", 1.0)) <= -0.01
                for op in ops
            )
            retired = kind == "OBSOLESCENCE" and d.details["target"] in (proposal.target_keys or [])
            return (kind in ("EDGE_INHIBIT", "EDGE_WEIGHT") and inhibited) or retired
        if d.key == "new-intent":
            if kind == "LABEL_PROMOTE":
                return self.label_origin.get(evidence.get("label", "")) == d.key
            examples = evidence.get("examples") or []
            hits = sum(1 for e in examples if self.intent_of(e) == d.intents[0])
            return kind == "LABEL_ADD" and bool(examples) and hits >= 0.6 * len(examples)
        return False

    def learn_labels(self, proposals: list[Any]) -> None:
        """Remember the LabelIDs applied true LABEL_ADD proposals issued (their promotions are true too)."""
        for p in proposals:
            if p.kind != "LABEL_ADD" or p.status != "APPLIED":
                continue
            defect = self(p)
            if not defect:
                continue
            decision = p.decisions.filter(action="APPLY", status_after="APPLIED").last()
            for label_id in ((decision.changes or {}).get("label_map") or {}).values() if decision else ():
                self.label_origin[label_id] = defect


# --- the harness --------------------------------------------------------------------------------------


class Harness:
    """The world imported as a project, its client app, its reviewer, and the oracle's reads."""

    def __init__(self, world: World, *, seed: int) -> None:
        app.conf.task_always_eager = True  # "apply approved" jobs run here, as a worker would run them
        slug, n = world.slug, 1
        while Project.objects.filter(slug=slug).exists():
            n += 1
            slug = f"{world.slug}-{n}"
        self.world = world
        self.project = pack_import(
            PackDocument(data=world.pack, source="bench-loop-real"), project_slug=slug
        ).project
        release_publish(project=self.project, actor=None, options=None)
        registry.clear()
        _, key = api_token_create(project=self.project, name="bench client app")
        self.client = APIClient()
        self.client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
        user_model = get_user_model()
        reviewer = user_model.objects.create_user(f"bench-reviewer-{self.project.pk}", password=None)
        membership_set(project=self.project, user=reviewer, role="reviewer")
        self.reviewer = APIClient()
        self.reviewer.force_login(reviewer)
        self.rng = np.random.default_rng([seed, 7])
        self.users = [(f"user{i:03d}", CHANNELS[i % len(CHANNELS)]) for i in range(150)]
        self.counter = 0

    @property
    def slug(self) -> str:
        return self.project.slug

    def snapshot(self) -> Any:
        return pin_snapshot(self.project.pk, force_check=True)

    @staticmethod
    def chunk(snapshot: Any, node_id: str | None) -> str:
        if snapshot is None or not node_id or node_id not in snapshot.position:
            return ""
        return snapshot.node(node_id).chunk

    def _post(self, client: Any, url: str, body: dict[str, Any]) -> Any:
        for _ in range(20):
            response = client.post(url, body, format="json")
            if response.status_code != 429:
                return response
            time.sleep(float(response.headers.get("Retry-After", 1) or 1))
        return response

    # --- one night's traffic ------------------------------------------------------------------------

    def turns(self, night: int, requests: int, followup_share: float, pair_share: float) -> list[tuple]:
        """(intent, utterance, user, session) for ``requests`` turns of ``night``."""
        world, rng = self.world, self.rng
        intents = world.intents_on(night)
        p, q = world.followup
        out: list[tuple] = []
        while len(out) < requests:
            intent = intents[int(rng.integers(len(intents)))]
            user = self.users[int(rng.integers(len(self.users)))]
            self.counter += 1
            session = f"{self.slug}-n{night}-s{self.counter}"
            sequence = [intent]
            if intent == p and rng.random() < followup_share:
                sequence.append(q)
            elif rng.random() < pair_share:
                same = [i for i in intents if world.domain_of[i] == world.domain_of[intent] and i != intent]
                sequence.append(same[int(rng.integers(len(same)))])
            for i in sequence:
                pool = world.traffic[i]
                out.append((i, pool[int(rng.integers(len(pool)))], user, session))
        return out[:requests]

    def traffic(
        self,
        night: int,
        requests: int,
        *,
        feedback_share: float,
        action_feedback_share: float,
        followup_share: float,
        pair_share: float,
    ) -> NightReport:
        report = NightReport(night=night)
        snapshot = self.snapshot()
        served = 0
        sessions: Counter = Counter()
        for intent, text, (user, channel), session in self.turns(night, requests, followup_share, pair_share):
            sessions[session] += 1
            response = self._post(
                self.client,
                f"{API}/infer",
                {"prompt": text, "context": {"user_id": user, "session_id": session, "channel": channel}},
            )
            report.requests += 1
            if response.status_code != 200:
                report.outcomes[f"http_{response.status_code}"] = (
                    report.outcomes.get(f"http_{response.status_code}", 0) + 1
                )
                continue
            body = response.json()
            kind = str(body["outcome"]["kind"])
            report.outcomes[kind] = report.outcomes.get(kind, 0) + 1
            report.new_intent_flags += "NEW_INTENT_CANDIDATE" in body.get("flags", [])
            log: Mapping[str, Any] = (
                InferenceLog.objects.filter(project=self.project, request_id=body["request_id"])
                .values("target_node", "landing")
                .first()
                or {}
            )
            target = log.get("target_node") or (log.get("landing") or {}).get("node_start")
            chunk = self.chunk(snapshot, target)
            ok = self.world.serves(chunk, intent)
            served += ok
            signal: dict[str, Any] | None = None
            if kind in ("INFO", "MEMORY") and self.rng.random() < feedback_share:
                if ok:
                    p_yes = HELPFUL_IF_SERVED
                elif self.world.partially_serves(chunk, intent):
                    p_yes = HELPFUL_IF_PARTIAL
                else:
                    p_yes = HELPFUL_OTHERWISE
                signal = {"kind": "helpful", "helpful": bool(self.rng.random() < p_yes)}
            elif kind == "ACTION" and self.rng.random() < action_feedback_share:
                p_ok = ACTION_SUCCESS_IF_SERVED if ok else ACTION_SUCCESS_OTHERWISE
                action = body["outcome"].get("action") or {}
                if action.get("status") in ("FAILED", "TIMEOUT"):
                    p_ok = 0.0  # the client app knows the run failed: it never reports a success
                signal = {"kind": "action_outcome", "action_succeeded": bool(self.rng.random() < p_ok)}
            if signal is not None:
                answer = self._post(
                    self.client, f"{API}/feedback", {"request_id": body["request_id"], **signal}
                )
                report.feedback += answer.status_code == 200
        report.served = served / max(1, report.requests)
        report.sessions_two_turns = sum(1 for c in sessions.values() if c > 1)
        return report

    # --- accuracy on the held-out utterances ----------------------------------------------------------

    def evaluate(self, snapshot: Any = None) -> dict[str, Any]:
        """Held-out accuracy (target node serves the intent), overall, defect vs clean intents, per intent."""

        served_from = snapshot if snapshot is not None else self.snapshot()
        per_intent: dict[str, list[int]] = {}
        k = 0
        for intent in self.world.intents:
            hits = []
            for text in self.world.held_out[intent]:
                k += 1
                with transaction.atomic():
                    result = run_inference(
                        InferenceRequest(
                            request_id=f"eval-{self.slug}-{k}",
                            project=self.project,
                            prompt=text,
                            context=RequestContext(
                                channel="web", user_id="evaluator", session_id=f"eval-{k}"
                            ),
                            dry_run=True,
                            snapshot=snapshot,
                        )
                    )
                    transaction.set_rollback(True)
                route, landing = result.route, result.landing
                target = (route.target if route else None) or (landing.node_start if landing else None)
                hits.append(int(self.world.serves(self.chunk(served_from, target), intent)))
            per_intent[intent] = hits
        defect_intents = {i for d in self.world.defects for i in d.intents}
        defect_intents -= set(self.world.followup)  # the follow-up pair is routed right from the start

        def share(intents: set[str] | list[str]) -> float:
            values = [h for i in intents for h in per_intent[i]]
            return sum(values) / len(values) if values else 0.0

        return {
            "all": share(list(per_intent)),
            "defect_intents": share(defect_intents),
            "clean_intents": share(set(per_intent) - defect_intents),
            "per_intent": {i: round(sum(h) / len(h), 3) if h else 0.0 for i, h in per_intent.items()},
        }

    def counterfactual(self, proposals: list[Any]) -> Any:
        """A shadow of the active release with ``proposals`` applied (those that apply together)."""

        base = BaseRelease.load(Release.objects.get(project=self.project, is_active=True))
        everything: tuple = tuple(op for p in proposals for op in changeset_load(p.changeset))
        try:
            return shadow_build(base, everything, kind="BENCH").snapshot
        except Exception:  # one of them conflicts with the others or with tonight's auto-commits
            logger.info("counterfactual: the true proposals do not apply together; adding them one by one")
        ops: tuple = ()
        for p in proposals:
            trial = ops + changeset_load(p.changeset)
            try:
                shadow_build(base, trial, kind="BENCH")
            except ChangesetConflict:
                continue
            except Exception:  # a proposal the interpreter refuses together with the others
                logger.exception("counterfactual: proposal %s left out", p.pk)
                continue
            ops = trial
        if not ops:
            return None
        return shadow_build(base, ops, kind="BENCH").snapshot

    # --- the reviewer ---------------------------------------------------------------------------------

    def visible_queue(self) -> list[dict[str, Any]]:
        response = self.reviewer.get(f"{API}/projects/{self.slug}/proposals/", {"limit": 500})
        assert response.status_code == 200, response.content[:500]
        return list(response.json()["results"])

    def review(
        self, queue: list[dict[str, Any]], truth: dict[int, str | None], policy: str
    ) -> dict[str, Any]:
        approved, rejected = [], []
        for item in queue:
            pk = int(item["id"])
            if policy == "all" or (policy == "true" and truth.get(pk)):
                response = self._post(
                    self.reviewer,
                    f"{API}/projects/{self.slug}/proposals/{pk}/approve/",
                    {"mode": "batch", "reason": "bench reviewer"},
                )
                if response.status_code == 200:
                    approved.append(pk)
                else:
                    logger.warning("approve %s: %s %s", pk, response.status_code, response.content[:300])
            elif policy == "true":
                response = self._post(
                    self.reviewer,
                    f"{API}/projects/{self.slug}/proposals/{pk}/reject/",
                    {"reason": "bench reviewer: not a planted defect"},
                )
                if response.status_code == 200:
                    rejected.append(pk)
        applied: dict[str, Any] = {}
        if approved:
            response = self._post(self.reviewer, f"{API}/projects/{self.slug}/proposals/apply-approved/", {})
            if response.status_code == 202:
                job = Job.objects.get(pk=response.json()["id"])
                applied = {"status": job.status, **(job.result or {})}
            else:
                applied = {"status": f"http_{response.status_code}", "body": response.content[:300].decode()}
        self.snapshot()
        return {"approved": approved, "rejected": rejected, "applied": applied}


# --- the whole run ------------------------------------------------------------------------------------


def night_shift(project: Project, since: datetime, days: int) -> int:
    """The simulated clock: move ``project``'s request logs written since ``since`` (real time), and their
    feedback, ``days`` days back. Other rows (releases, proposals, action executions) keep real time.
    Returns the logs moved."""
    if days <= 0:
        return 0
    delta = timedelta(days=days)
    with transaction.atomic():
        logs = InferenceLog.objects.filter(project=project, created_at__gte=since)
        Feedback.objects.filter(log__in=logs, created_at__gte=since).update(
            created_at=F("created_at") - delta
        )
        return logs.update(created_at=F("created_at") - delta)


def _sighting(night: int, p: Any, defect: str | None) -> Sighting:
    replay = p.replay or {}
    return Sighting(
        night=night,
        proposal=p.pk,
        kind=p.kind,
        bin=p.confidence_bin,
        status=p.status,
        score=p.score,
        defect=defect,
        title=p.title,
        reason=str(replay.get("bin_reason", ""))[:300],
        silence_dominated=bool(replay.get("silence_dominated")),
        confirmed_gain=float(replay.get("confirmed_gain", 0.0) or 0.0),
    )


def defect_live(world: World, harness: Harness) -> dict[str, Any]:
    """Is each planted defect visible in routing at the start? (where its held-out utterances end)."""

    out: dict[str, Any] = {}
    for d in world.defects:
        ends: Counter = Counter()
        for intent in d.intents:
            for k, text in enumerate(world.held_out[intent]):
                with transaction.atomic():
                    result = run_inference(
                        InferenceRequest(
                            request_id=f"live-{d.key}-{intent}-{k}",
                            project=harness.project,
                            prompt=text,
                            context=RequestContext(
                                channel="web", user_id="evaluator", session_id=f"live-{k}"
                            ),
                            dry_run=True,
                        )
                    )
                    transaction.set_rollback(True)
                route = result.route
                ends[" → ".join(route.path_nodes) if route and route.path_nodes else "(no route)"] += 1
        out[d.key] = dict(ends.most_common(4))
    return out


def merge_gates(world: World, harness: Harness) -> dict[str, dict[str, Any]]:
    """Why a planted duplicate pair was or was not proposed: the merge generator's own gates, computed
    with its own functions on the last night's base release and window (read only)."""

    context = _last_context(harness)
    if context is None:
        return {}
    base, collection, params = context.base, context.collection, context.params
    snapshot = base.snapshot
    embeddings = snapshot.embeddings
    if embeddings is None:
        return {}
    vectors = {snapshot.node_ids[i]: embeddings[i] for i in range(snapshot.node_count)}
    competitions = merge._competitions(collection)
    gates = params.merge
    out: dict[str, dict[str, Any]] = {}
    for d in world.defects:
        if d.kind != "MERGE":
            continue
        a, b = d.details["nodes"]
        if any(n not in base.nodes or base.nodes[n].status != "ACTIVE" for n in (a, b)):
            out[d.key] = {"state": "merged (or deprecated) before the last night"}
            continue
        similar, usage = merge._usage(context, base.nodes[a], base.nodes[b], competitions)
        fgw, size, structure = merge.fgw_distance(base.graph, vectors, a, b, alpha=gates.fgw_alpha)
        content = float(vectors[a] @ vectors[b])
        out[d.key] = {
            "content_cosine": round(content, 3),
            "content_gate": content >= gates.min_content_cosine,
            **usage,
            "usage_gate": bool(similar),
            "fgw": round(fgw, 3),
            "fgw_nodes": size,
            "fgw_alpha_applied": round(structure, 3),
            "fgw_gate": fgw <= gates.fgw_epsilon,
            "taxonomy": [
                v.rule for v in merge.taxonomy_violations(base.nodes[a], base.nodes[b], base.documents)
            ],
        }
    return out


def _last_context(harness: Harness) -> GeneratorContext | None:
    """The generators' context of the last night (its base release and window), rebuilt read only."""
    run = OfflineRun.objects.filter(project=harness.project).order_by("-pk").first()
    if run is None or run.base_release is None:
        return None
    params = loop_params(run.params.get("overrides") or {})
    base = BaseRelease.load(run.base_release)
    collection = collect(
        project=harness.project,
        window_start=run.window_start,
        window_end=run.window_end,
        node_ids=base.arrays.node_ids,
        max_logs=params.max_logs,
        reuse_proxy_s=params.reuse_proxy_s,
    )
    return GeneratorContext(
        project=harness.project, base=base, collection=collection, params=params, seed=params.seed + run.pk
    )


def split_gates(world: World, harness: Harness) -> dict[str, dict[str, Any]]:
    """Why a planted shared node was or was not proposed for a split: the split generator's gates, with
    its own functions, on the last night's base release and window (read only): the landings, the
    problem users report (helpful share, its Wilson upper bound, the project's share), and for each
    grouping the generator would try (``split._readings``) its silhouette, group sizes, centroid cosine
    against the limit, each group's taxonomy region label and whether the content divides."""
    context = _last_context(harness)
    if context is None:
        return {}
    base, collection, params = context.base, context.collection, context.params.split
    label_docs = {label["id"]: label for label in base.documents.get("labels", [])}
    metrics = collection.node_metrics
    project_helpful = split.helpful_share(
        sum(m.confirmed for m in metrics.values()), sum(m.failures for m in metrics.values())
    )
    separation = split.intent_separation(label_docs)
    limit = params.max_centroid_cosine if separation is None else min(params.max_centroid_cosine, separation)
    out: dict[str, dict[str, Any]] = {}
    for d in world.defects:
        if d.kind != "SPLIT":
            continue
        node = base.nodes.get(d.details["node"])
        if node is None or node.status != "ACTIVE":
            out[d.key] = {"state": "split (or deprecated) before the last night"}
            continue
        m = metrics.get(node.node_id)
        if m is None:
            out[d.key] = {"state": "no landing in the window"}
            continue
        signals = m.confirmed + m.failures
        upper = wilson_upper(m.confirmed, signals, params.satisfaction_z)
        gates: dict[str, Any] = {
            "landings": m.landings,
            "landings_gate": m.landings >= params.min_landings,
            "helpful": round(m.confirmed / signals, 3) if signals else None,
            "signals": signals,
            "helpful_upper": round(upper, 3),
            "project_helpful": None if project_helpful is None else round(project_helpful, 3),
            "problem_gate": project_helpful is not None and upper < project_helpful,
            "separation": None if separation is None else round(separation, 3),
        }
        rows = context.sample(
            collection.rows_at(node.node_id, by="landing"), params.max_prompts, f"split:{node.node_id}"
        )
        x, features, tops = split._features(context, rows)
        readings = []
        for score, k, assign, intents in split._readings(context, node, rows, x, features, label_docs):
            bound = limit if intents is None else params.max_centroid_cosine
            centroids = np.array([unit(x[assign == j].mean(axis=0)) for j in range(k)])
            pair_cos = max(float(centroids[i] @ centroids[j]) for i in range(k) for j in range(i + 1, k))
            regions = [
                split.group_region_label(
                    [t for t, a in zip(tops, assign, strict=True) if a == j], node, label_docs
                )
                for j in range(k)
            ]
            found = split._candidate(
                context,
                node,
                rows,
                x,
                tops,
                score,
                k,
                assign,
                label_docs,
                {},
                {},
                bound,
                separation,
                intents=intents,
            )
            readings.append(
                {
                    "grouping": "requests" if intents is None else "labels",
                    "k": k,
                    "silhouette": round(score, 3),
                    "sizes": np.bincount(assign, minlength=k).tolist(),
                    "centroid_cosine": round(pair_cos, 3),
                    "limit": round(bound, 3),
                    "regions": regions,
                    "sentences": len(sentences(node.chunk)),
                    "proposed": found is not None,
                    "content_cosine": found.evidence["children_content_cosine"] if found else None,
                }
            )
        gates["readings"] = readings
        out[d.key] = gates
    return out


def reattach_gates(world: World, harness: Harness) -> dict[str, dict[str, Any]]:
    """Why a misfiled label was or was not proposed for re-attachment: the LABEL_REATTACH generator's
    gates for it on the last night's base release and window (its support and sources, and the lower
    bound of the mean gap to its own domain's cluster, in each affinity view and the weaker of them, and to
    the best other one), read only."""
    wanted = [d for d in world.defects if d.kind == "LABEL_REATTACH"]
    context = _last_context(harness) if wanted else None
    if context is None:
        return {}
    params = context.params.lifecycle
    labels = {label["id"]: label for label in context.base.documents.get("labels", [])}
    out: dict[str, dict[str, Any]] = {}
    for d in wanted:
        label = labels.get(d.details["label"])
        rows = [r for r, chosen in enumerate(context.collection.labels) if d.details["label"] in chosen]
        if label is None or not rows:
            out[d.key] = {"state": "no such label" if label is None else "no traffic in the window"}
            continue
        sources = {int(context.collection.sources[r]) for r in rows}
        carriers = {n.node_id for n in context.base.graph.nodes if label["id"] in n.labels}
        picked = context.sample(np.array(rows, dtype=np.int64), params.reattach_max_prompts, "gates")
        encoder = encoder_for_documents(context.base.documents)
        x = np.asarray(
            encoder.embed([context.collection.prompts[r] for r in picked.tolist()]), dtype=np.float32
        )
        members = lifecycle.cluster_members(context, carriers)
        views = [lifecycle.cluster_affinities(members, x, 0)]
        if params.reattach_neighbours > 0:
            views.append(lifecycle.cluster_affinities(members, x, params.reattach_neighbours))
        home, own = d.details["cluster"], label["cluster"]
        home_lowers = [
            lifecycle.lower_bound(view[home] - view[own], params.z) if home in view and own in view else None
            for view in views
        ]
        known = [v for v in home_lowers if v is not None]
        best = lifecycle.reattach_target(views, own, params.z)
        out[d.key] = {
            "cluster_now": own,
            "support": len(rows),
            "sources": len(sources),
            "support_gate": len(rows) >= params.reattach_min_support
            and len(sources) >= params.reattach_min_sources,
            "gap_home_mean": round(float((views[0][home] - views[0][own]).mean()), 4)
            if home in views[0] and own in views[0]
            else None,
            "gap_home_lower": round(min(known), 4) if len(known) == len(home_lowers) else None,
            "gap_home_lower_per_view": [None if v is None else round(v, 4) for v in home_lowers],
            "best_other": best[1] if best else None,
            "gap_best_lower": round(best[0], 4) if best else None,
            "margin": params.margin,
        }
    return out


def run(
    world: World,
    *,
    nights: int = 5,
    requests: int = 500,
    feedback_share: float = 0.4,
    action_feedback_share: float = 0.7,
    followup_share: float = 0.7,
    pair_share: float = 0.1,
    reviewer: str = "all",
    counterfactual: bool = True,
    clock: bool | None = None,
    say: Callable[[str], None] | None = None,
) -> Report:
    """The nights of ``world`` (module doc). With ``clock`` (default: the world's ``lifecycle``) night *k*
    of *K* sits on day *k*: its logs and feedback are moved *K − k* days back (``night_shift``) and its
    loop's window ends then, so nights are on distinct days as the lifecycle generators require."""
    say = say or (lambda message: None)
    clock = world.lifecycle if clock is None else clock
    started = time.perf_counter()
    harness = Harness(world, seed=world.seed)
    judge = Judge(world)
    report = Report(world=world.summary(), reviewer=reviewer)
    report.world["project"] = harness.slug
    report.accuracy_start = harness.evaluate()
    report.defect_live = defect_live(world, harness)
    say(
        f"world {harness.slug}: {len(world.intents)} intents in {', '.join(world.domains)}; held-out accuracy "
        f"{report.accuracy_start['all']:.1%} (defect intents {report.accuracy_start['defect_intents']:.1%}, "
        f"clean {report.accuracy_start['clean_intents']:.1%})"
    )
    for key, ends in report.defect_live.items():
        say(f"  {key}: {ends}")
    seen_false: set[int] = set()
    for night in range(1, nights + 1):
        t0 = time.perf_counter()
        night_started = timezone.now()
        nr = harness.traffic(
            night,
            requests,
            feedback_share=feedback_share,
            action_feedback_share=action_feedback_share,
            followup_share=followup_share,
            pair_share=pair_share,
        )
        t1 = time.perf_counter()
        say(
            f"night {night}: {nr.requests} requests ({nr.sessions_two_turns} two-turn sessions), {nr.feedback} "
            f"explicit signals, {nr.served:.1%} served, outcomes {nr.outcomes}, NEW_INTENT flags {nr.new_intent_flags}"
        )
        window_end = None
        if clock:
            night_shift(harness.project, night_started, nights - night)
            window_end = timezone.now() - timedelta(days=nights - night)
        loop = offline_loop_run(
            project=harness.project,
            idempotency_key=f"loop-real-{harness.slug}-{night}",
            window_end=window_end,
        )
        harness.snapshot()
        t2 = time.perf_counter()
        nr.run_id, nr.run_status = loop.pk, loop.status
        proposals = list(Proposal.objects.filter(project=harness.project).order_by("pk"))
        judge.learn_labels(proposals)
        truth = {p.pk: judge(p) for p in proposals}
        tonight = [p for p in proposals if p.run_id == loop.pk]
        for p in tonight:
            report.sightings.append(_sighting(night, p, truth[p.pk]))
        nr.proposals = dict(Counter(p.kind for p in tonight))
        nr.false_proposals = sum(1 for p in tonight if not truth[p.pk])
        nr.new_false = sum(1 for p in tonight if not truth[p.pk] and p.pk not in seen_false)
        seen_false |= {p.pk for p in tonight if not truth[p.pk]}
        nr.bins = (loop.stats.get("steps", {}).get("bin", {}) or {}).get("bins", {})
        nr.autocommitted = [
            f"{p.kind}#{p.pk}{'(true)' if truth[p.pk] else '(false)'}"
            for p in tonight
            if p.confidence_bin == "HIGH_CONF"
        ]
        nr.accuracy_before_review = harness.evaluate()["all"]
        queue = harness.visible_queue()
        nr.visible = [
            f"{q['kind']}#{q['id']}{'(true)' if truth.get(int(q['id'])) else '(false)'}" for q in queue
        ]
        if counterfactual and reviewer != "none":
            visible = {int(q["id"]) for q in queue}
            true_ones = [p for p in proposals if p.pk in visible and truth[p.pk]]
            snapshot = harness.counterfactual(true_ones) if true_ones else None
            nr.accuracy_true_only = (
                harness.evaluate(snapshot)["all"] if snapshot is not None else nr.accuracy_before_review
            )
        t3 = time.perf_counter()
        decided = harness.review(queue, truth, reviewer) if reviewer != "none" else {}
        nr.approved, nr.rejected = decided.get("approved", []), decided.get("rejected", [])
        nr.applied = decided.get("applied", {})
        report.accuracy_end = harness.evaluate()
        nr.accuracy_after_review = report.accuracy_end["all"]
        nr.seconds = {
            "traffic": round(t1 - t0, 1),
            "loop": round(t2 - t1, 1),
            "judge_eval": round(t3 - t2, 1),
            "review_eval": round(time.perf_counter() - t3, 1),
        }
        report.nights.append(nr)
        say(
            f"night {night}: run #{loop.pk} {loop.status}, proposals {nr.proposals} ({nr.false_proposals} false), "
            f"bins {nr.bins}, auto {nr.autocommitted}, queue {nr.visible}, approved {len(nr.approved)}, "
            f"applied {nr.applied.get('applied')}, accuracy {nr.accuracy_before_review:.1%} → "
            f"{nr.accuracy_after_review:.1%}"
            + (f" (true only: {nr.accuracy_true_only:.1%})" if nr.accuracy_true_only is not None else "")
            + f", seconds {nr.seconds}"
        )
    if not report.nights:
        report.accuracy_end = report.accuracy_start
    _score(report, world, judge, harness)
    report.merge_gates = merge_gates(world, harness)
    report.split_gates = split_gates(world, harness)
    report.reattach_gates = reattach_gates(world, harness)
    report.seconds = round(time.perf_counter() - started, 1)
    return report


def _score(report: Report, world: World, judge: Judge, harness: Harness) -> None:
    proposals = list(Proposal.objects.filter(project=harness.project).order_by("pk"))
    judge.learn_labels(proposals)
    truth = {p.pk: judge(p) for p in proposals}
    bins_seen: dict[int, set[str]] = defaultdict(set)
    for s in report.sightings:
        bins_seen[s.proposal].add(s.bin)
    by_kind: dict[str, list[Any]] = defaultdict(list)
    for p in proposals:
        by_kind[p.kind].append(p)
    kinds = sorted(set(by_kind) | {d.kind for d in world.defects})
    for kind in kinds:
        items = by_kind.get(kind, [])
        planted = [
            d for d in world.defects if d.kind == kind or (kind == "LABEL_PROMOTE" and d.kind == "LABEL_ADD")
        ]
        found = {truth[p.pk] for p in items if truth[p.pk]} & {d.key for d in planted}
        report.per_kind[kind] = {
            "proposals": len(items),
            "true": sum(1 for p in items if truth[p.pk]),
            "precision": (sum(1 for p in items if truth[p.pk]) / len(items)) if items else None,
            "planted": len(planted),
            "found": len(found),
            "recall": (len(found) / len(planted)) if planted else None,
            "auto": sum(1 for p in items if "HIGH_CONF" in bins_seen[p.pk]),
            "queue": sum(1 for p in items if "MID_CONF" in bins_seen[p.pk]),
            "backlog_only": sum(1 for p in items if bins_seen[p.pk] <= {"LOW_CONF"} and bins_seen[p.pk]),
        }
    for d in world.defects:
        mine = [p for p in proposals if truth[p.pk] == d.key]
        seen = set().union(*(bins_seen[p.pk] for p in mine)) if mine else set()
        report.per_defect[d.key] = {
            "kind": d.kind,
            "variant": d.variant,
            "intents": list(d.intents),
            "proposals": [f"{p.kind}#{p.pk}" for p in mine],
            "found": bool(mine),
            "surfaced": "MID_CONF" in seen,
            "autocommitted": "HIGH_CONF" in seen,
            "backlog_only": bool(mine) and seen <= {"LOW_CONF"},
            "applied": any(p.status == "APPLIED" for p in mine),
            "accuracy_before": round(np.mean([report.accuracy_start["per_intent"][i] for i in d.intents]), 3),
            "accuracy_after": round(np.mean([report.accuracy_end["per_intent"][i] for i in d.intents]), 3),
        }
    n_true = sum(1 for p in proposals if truth[p.pk])
    report.precision = n_true / len(proposals) if proposals else 0.0
    report.recall = sum(1 for v in report.per_defect.values() if v["found"]) / len(world.defects)
    report.surfaced = sum(1 for v in report.per_defect.values() if v["surfaced"]) / len(world.defects)
    for p in proposals:
        if "HIGH_CONF" in bins_seen[p.pk]:
            replay = p.replay or {}
            report.autocommits.append(
                {
                    "proposal": p.pk,
                    "kind": p.kind,
                    "title": p.title,
                    "defect": truth[p.pk],
                    "silence_dominated": bool(replay.get("silence_dominated")),
                    "confirmed_gain": replay.get("confirmed_gain"),
                    "reason": str(replay.get("bin_reason", ""))[:300],
                }
            )
    report.proposals = [
        {
            "id": p.pk,
            "kind": p.kind,
            "title": p.title,
            "status": p.status,
            "bins": sorted(bins_seen[p.pk]),
            "score": p.score,
            "defect": truth[p.pk],
            "evidence": {
                k: v
                for k, v in (p.evidence or {}).items()
                if k
                in (
                    "node",
                    "episodes",
                    "edges",
                    "outcomes",
                    "survivor",
                    "duplicate",
                    "silhouette",
                    "centroid_cosine",
                    "intent_separation",
                    "children_content_cosine",
                    "satisfaction",
                    "content_cosine",
                    "usage_cosine",
                    "competitions",
                    "landings",
                    "support",
                    "share",
                    "fgw",
                    "examples",
                    "pattern",
                    "merged_node",
                    "label",
                    "from_cluster",
                    "to_cluster",
                    "gap_lower",
                    "closer_share",
                    "trigger",
                    "failures",
                    "landings_with_outcome",
                    "failure_share_lower",
                    "failure_days",
                    "replacement",
                )
            },
            "reason": str((p.replay or {}).get("bin_reason", ""))[:300],
            "replay": {
                k: v
                for k, v in (p.replay or {}).items()
                if k in ("gains", "estimates", "answer_fit", "modelled_confirmed", "confirmed_gain", "sample")
            },
        }
        for p in proposals
    ]
    start, end = report.accuracy_start["per_intent"], report.accuracy_end["per_intent"]
    report.intent_drops = [
        {"intent": i, "before": start[i], "after": end[i]}
        for i in sorted(start, key=lambda i: end[i] - start[i])
        if end[i] - start[i] <= -0.1
    ]
