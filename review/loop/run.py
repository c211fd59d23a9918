"""One night of the offline loop (ARG §3 steps A–E, §4.2) for one project, step by step.

``offline_run_open`` creates the night's ``OfflineRun`` (idempotent by key: the nightly beat entry and a
retried task find the same run); then each step reads the run by id and is idempotent on its own, so
the Celery tasks of ``review.loop.tasks`` can run them one after the other, retry any of them, or the
``run_offline_loop`` command can run them in one process:

1. ``step_consolidate`` — episodic → semantic consolidation (``memory.services.memory_consolidate``);
2. ``step_collect`` — step A: logs, feedback and episodes of the window → ``Collection`` + metrics;
3. ``step_generate`` — step B: every enabled generator; candidates stored as NEW proposals
   (deduplicated by fingerprint: a rejected or applied change is not proposed again, a pending one is
   left to its reviewer, a backlog one is re-evaluated with the new evidence);
4. ``step_replay`` — step C: each NEW proposal of the run is replayed on its shadow release → SCORED;
5. ``step_bin`` — step D: bins (HIGH_CONF → AUTO_COMMITTED, MID_CONF → PENDING_REVIEW, LOW_CONF →
   BACKLOG; two overlapping auto-commits never go together: the lower-scored one goes to review),
   silent-success samples for reviewers, confidence-boost zones;
6. ``step_apply`` — step E: the AUTO_COMMITTED proposals are applied and published as one release.

The per-night state (collection, base release, prompt vectors, baseline replays) is kept in a small
per-process cache keyed by run id, so consecutive steps in one worker process do not read the logs
again; a step that finds no cached state rebuilds it from the run's window (same window, same seed:
the same state).
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from django.db import IntegrityError, transaction
from django.dispatch import Signal
from django.utils import timezone

from arg_platform.errors import DomainError
from arg_platform.models import Job
from inference.models import Feedback
from memory.services import memory_consolidate
from ontology.models import Release
from projects.models import Project
from review.changeset import changeset_dump, changeset_fingerprint, changeset_load, changeset_targets
from review.loop.bins import bin_for, boost_zones, silent_success_sample
from review.loop.collection import Collection, collect
from review.loop.gedig_gate import calibrate as gedig_calibrate
from review.loop.gedig_gate import decide as gedig_decide
from review.loop.gedig_gate import gauge_history as gedig_history
from review.loop.generators import GENERATORS
from review.loop.generators.base import Candidate, GeneratorContext
from review.loop.params import LoopParams, loop_params
from review.loop.replay import Replayer
from review.loop.shadow import BaseRelease
from review.models import OfflineRun, Proposal, ProposalDecision, ProposalStatus

logger = logging.getLogger(__name__)
# Sent after binning with ``project`` and ``proposals`` (the run's proposals now PENDING_REVIEW).
proposals_sent_to_review = Signal()
SYSTEM = "system"
STEPS = ("consolidate", "collect", "generate", "replay", "bin", "apply")
Progress = Callable[[str, float, str], None]  # (step, fraction of the step, message)
PENDING = (ProposalStatus.PENDING_REVIEW, ProposalStatus.DEFERRED, ProposalStatus.CHANGES_REQUESTED)
FINAL = (
    ProposalStatus.REJECTED,
    ProposalStatus.APPLIED,
    ProposalStatus.AUTO_COMMITTED,
    ProposalStatus.APPROVED,
)
REFRESHABLE = (ProposalStatus.NEW, ProposalStatus.SCORED, ProposalStatus.BACKLOG, ProposalStatus.FAILED)
MAX_ZONE_REFS = 2000


class NoActiveRelease(DomainError):
    status_code = 409


@dataclass
class Night:
    """The per-night state shared by the steps of one run."""

    run_id: int
    params: LoopParams
    base: BaseRelease
    collection: Collection
    context: GeneratorContext
    replayer: Replayer | None = None


_nights: OrderedDict[int, Night] = OrderedDict()


def _remember(night: Night) -> Night:
    _nights[night.run_id] = night
    _nights.move_to_end(night.run_id)
    while len(_nights) > 2:
        _nights.popitem(last=False)
    return night


def night_forget(run_id: int | None = None) -> None:
    if run_id is None:
        _nights.clear()
    else:
        _nights.pop(run_id, None)


# --- job progress ------------------------------------------------------------------------------------


def job_progress(job_id: int | None, *, step: str, fraction: float, message: str, log: bool = True) -> None:
    """Write a step's progress to the run's Job row (what the UI polls)."""
    if not job_id:
        return
    index = STEPS.index(step) if step in STEPS else 0
    overall = (index + max(0.0, min(1.0, fraction))) / len(STEPS)
    job = Job.objects.filter(pk=job_id).only("log").first()
    if job is None:
        return
    line = f"{timezone.now():%H:%M:%S} [{step}] {message}"
    updates: dict[str, Any] = {"progress": round(overall, 4), "message": f"{step}: {message}"[:500]}
    if log:
        updates["log"] = (job.log + "\n" + line).strip()[-100_000:]
    Job.objects.filter(pk=job_id).update(**updates)


# --- opening a run ---------------------------------------------------------------------------------


def offline_run_open(
    *,
    project: Project,
    idempotency_key: str = "",
    window_end: datetime | None = None,
    overrides: dict[str, Any] | None = None,
    actor: Any = None,
) -> OfflineRun:
    """Create the night's run (and its Job row), or return the run that already has this key."""
    return offline_run_get_or_open(
        project=project,
        idempotency_key=idempotency_key,
        window_end=window_end,
        overrides=overrides,
        actor=actor,
    )[0]


def offline_run_get_or_open(
    *,
    project: Project,
    idempotency_key: str = "",
    window_end: datetime | None = None,
    overrides: dict[str, Any] | None = None,
    actor: Any = None,
) -> tuple[OfflineRun, bool]:
    """``(run, created)``: the run with this key, or a new one over the last ``window_days``."""
    if idempotency_key:
        existing = OfflineRun.objects.filter(project=project, idempotency_key=idempotency_key).first()
        if existing is not None:
            return existing, False
    base = Release.objects.filter(project=project, is_active=True).first()
    if base is None:
        raise NoActiveRelease(f"project {project.slug} has no active release: nothing to refine")
    params = loop_params(overrides)
    end = window_end or timezone.now()
    start = end - timedelta(days=params.window_days)
    try:
        with transaction.atomic():
            job = Job.objects.create(
                project=project,
                kind="offline_loop",
                status=Job.Status.QUEUED,
                params={"idempotency_key": idempotency_key, "overrides": overrides or {}},
                idempotency_key=f"{project.pk}:{idempotency_key}" if idempotency_key else "",
                created_by=actor if getattr(actor, "pk", None) else None,
            )
            run = OfflineRun.objects.create(
                project=project,
                job=job,
                base_release=base,
                window_start=start,
                window_end=end,
                params={"overrides": overrides or {}, "resolved": params.as_json()},
                stats={"steps": {}},
                idempotency_key=idempotency_key,
            )
            return run, True
    except IntegrityError:  # the same key was opened concurrently: return that run
        return OfflineRun.objects.get(project=project, idempotency_key=idempotency_key), False


def _night(run: OfflineRun, progress: Progress | None = None) -> Night:
    night = _nights.get(run.pk)
    if night is not None:
        return night
    params = loop_params(run.params.get("overrides") or {})
    assert run.base_release is not None
    base = BaseRelease.load(run.base_release)

    def tick(n: int) -> None:
        if progress is not None:
            progress("collect", 0.5, f"{n} interactions read")

    collection = collect(
        project=run.project,
        window_start=run.window_start,
        window_end=run.window_end,
        node_ids=base.arrays.node_ids,
        max_logs=params.max_logs,
        reuse_proxy_s=params.reuse_proxy_s,
        progress=tick,
    )
    context = GeneratorContext(
        project=run.project, base=base, collection=collection, params=params, seed=params.seed + run.pk
    )
    return _remember(Night(run_id=run.pk, params=params, base=base, collection=collection, context=context))


def _done(run: OfflineRun, step: str) -> bool:
    return bool(run.stats.get("steps", {}).get(step, {}).get("done"))


def _mark(run: OfflineRun, step: str, **stats: Any) -> None:
    with transaction.atomic():
        locked = OfflineRun.objects.select_for_update().get(pk=run.pk)
        data = dict(locked.stats or {})
        steps = dict(data.get("steps", {}))
        steps[step] = {"done": True, **stats}
        data["steps"] = steps
        locked.stats = data
        locked.save(update_fields=["stats"])
        run.stats = data


def _stat(run: OfflineRun, key: str, value: Any) -> None:
    with transaction.atomic():
        locked = OfflineRun.objects.select_for_update().get(pk=run.pk)
        data = dict(locked.stats or {})
        data[key] = value
        locked.stats = data
        locked.save(update_fields=["stats"])
        run.stats = data


# --- the steps -------------------------------------------------------------------------------------


def step_consolidate(run: OfflineRun, progress: Progress | None = None) -> dict[str, Any]:
    """§4.2 episodic → semantic consolidation (``memory.services.memory_consolidate``); its counts are
    recorded as the step's ``result``. A retry after a crash writes nothing twice (the service skips the
    patterns it already wrote)."""
    if _done(run, "consolidate"):
        return run.stats["steps"]["consolidate"]
    started = time.perf_counter()
    try:
        result: dict[str, Any] = {"result": memory_consolidate(project=run.project)}
    except Exception as exc:  # consolidation failing must not stop the structural refinement
        logger.warning("memory consolidation failed", exc_info=True)
        result = {"error": str(exc)[:300]}
    result["seconds"] = round(time.perf_counter() - started, 3)
    _mark(run, "consolidate", **result)
    return result


def step_collect(run: OfflineRun, progress: Progress | None = None) -> Collection:
    """Step A: read the window (or take the cached night) and record the summary and metrics."""
    started = time.perf_counter()
    night = _night(run, progress)
    collection = night.collection
    if not _done(run, "collect"):
        metrics = sorted(collection.node_metrics.values(), key=lambda m: -m.interactions)
        _stat(
            run,
            "metrics",
            {"nodes": [m.as_json() for m in metrics[:500]], "edges": _edge_metrics(collection)},
        )
        _mark(
            run,
            "collect",
            **collection.summary(),
            timings=collection.timings,
            seconds=round(time.perf_counter() - started, 3),
        )
    return collection


def _edge_metrics(collection: Collection) -> list[dict[str, Any]]:
    edges = sorted(collection.edge_metrics.values(), key=lambda e: -e.traversals)
    return [e.as_json() for e in edges[:500]]


def _cluster_key(base: BaseRelease, keys: list[str]) -> str:
    for key in keys:
        node = base.nodes.get(key)
        if node is not None and node.clusters:
            return node.clusters[0][:63]
    labels = {label["id"]: label for label in base.documents.get("labels", [])}
    for key in keys:
        if key in labels:
            return str(labels[key]["cluster"])[:63]
    return ""


def _plan(night: Night, candidate: Candidate) -> dict[str, Any]:
    collection = night.collection
    zone = np.array(candidate.zone_rows, dtype=np.int64)
    zone = night.context.sample(zone, MAX_ZONE_REFS, f"plan:{candidate.title}")
    return {
        "zone_log_ids": [int(collection.log_ids[r]) for r in zone.tolist()],
        "zone_size": len(candidate.zone_rows),
        "lineage": {k: list(v) for k, v in candidate.lineage.items()},
        "guard": candidate.guard,
    }


def _store(run: OfflineRun, night: Night, candidate: Candidate) -> tuple[Proposal | None, str]:
    fingerprint = changeset_fingerprint(candidate.kind, candidate.ops)
    latest = (
        Proposal.objects.filter(project=run.project, fingerprint=fingerprint)
        .exclude(status=ProposalStatus.SUPERSEDED)
        .order_by("-created_at", "-id")
        .first()
    )
    targets = changeset_targets(candidate.ops)
    fields = {
        "kind": candidate.kind,
        "title": candidate.title[:200],
        "summary": candidate.summary,
        "base_release": run.base_release,
        "changeset": changeset_dump(candidate.ops),
        "target_keys": targets,
        "cluster_key": _cluster_key(night.base, targets),
        "evidence": candidate.evidence,
        "generator": candidate.generator,
        "replay": {"plan": _plan(night, candidate)},
        "score": None,
        "confidence_bin": "",
    }
    if latest is not None:
        if latest.run_id == run.pk:
            return None, "already"
        if latest.status in FINAL:
            return None, f"known:{latest.status}"
        if latest.status in PENDING:
            return None, "pending"
        if latest.status in REFRESHABLE:
            before = latest.status
            for name, value in fields.items():
                setattr(latest, name, value)
            latest.run = run
            latest.status = ProposalStatus.NEW
            latest.save()
            ProposalDecision.objects.create(
                proposal=latest,
                action=ProposalDecision.Action.EDIT,
                actor_name=SYSTEM,
                reason=f"re-evaluated with the evidence of offline run #{run.pk}",
                status_before=before,
                status_after=latest.status,
                changes={"run": run.pk},
            )
            return latest, "refreshed"
    proposal = Proposal.objects.create(project=run.project, run=run, fingerprint=fingerprint, **fields)
    return proposal, "new"


def step_generate(run: OfflineRun, progress: Progress | None = None) -> list[int]:
    """Step B: run the enabled generators and store their candidates as NEW proposals."""
    if _done(run, "generate"):
        return list(run.proposals.values_list("pk", flat=True))
    started = time.perf_counter()
    night = _night(run, progress)
    counts: dict[str, Any] = {}
    outcomes: dict[str, int] = {}
    ids: list[int] = []
    enabled = [g for g in night.params.generators if g in GENERATORS]
    for i, name in enumerate(enabled):
        t = time.perf_counter()
        if progress is not None:
            progress("generate", i / max(1, len(enabled)), f"generator {name}")
        try:
            candidates = GENERATORS[name](night.context)
        except Exception:
            logger.exception("generator %s failed", name)
            counts[name] = {"error": True}
            continue
        counts[name] = {"candidates": len(candidates), "seconds": round(time.perf_counter() - t, 3)}
        for candidate in candidates:
            with transaction.atomic():
                proposal, outcome = _store(run, night, candidate)
            outcomes[outcome.split(":")[0]] = outcomes.get(outcome.split(":")[0], 0) + 1
            if proposal is not None:
                ids.append(proposal.pk)
    _mark(
        run, "generate", generators=counts, stored=outcomes, seconds=round(time.perf_counter() - started, 3)
    )
    return ids


def candidate_from_proposal(proposal: Proposal, collection: Collection) -> Candidate:
    """The replay's view of a stored proposal (its zone mapped back onto the night's collection)."""
    plan = (proposal.replay or {}).get("plan", {})
    index = {int(log_id): i for i, log_id in enumerate(collection.log_ids.tolist())}
    zone = tuple(index[i] for i in plan.get("zone_log_ids", []) if i in index)
    return Candidate(
        kind=proposal.kind,
        title=proposal.title,
        summary=proposal.summary,
        ops=changeset_load(proposal.changeset),
        evidence=proposal.evidence,
        generator=proposal.generator,
        zone_rows=zone,
        lineage={k: tuple(v) for k, v in plan.get("lineage", {}).items()},
        guard=plan.get("guard", {}),
    )


def _recalibration(run: OfflineRun, night: Night) -> dict[str, Any]:
    """§3.4.2: reviewers' labels of sampled silent successes → the hidden error rate of silence.

    With at least 10 labels in the window, the weight of uncertain gains is scaled by (1 − error rate)
    and the silence penalty by (1 + error rate) for this night.
    """
    labels = list(
        Feedback.objects.filter(
            log__project=run.project,
            log__created_at__gte=run.window_start,
            log__created_at__lt=run.window_end,
            source=Feedback.Source.REVIEWER,
            kind=Feedback.Kind.HELPFUL,
        ).values_list("helpful", flat=True)
    )
    if len(labels) < 10:
        return {"reviewer_labels": len(labels), "applied": False}
    error = sum(1 for h in labels if h is False) / len(labels)
    return {"reviewer_labels": len(labels), "hidden_error_rate": round(error, 4), "applied": True}


def step_replay(run: OfflineRun, progress: Progress | None = None) -> int:
    """Step C: replay and score every NEW proposal of the run (SCORED afterwards)."""
    from dataclasses import replace

    started = time.perf_counter()
    night = _night(run, progress)
    recal = _recalibration(run, night)
    params = night.params
    if recal.get("applied"):
        error = recal["hidden_error_rate"]
        params = replace(
            params,
            score=replace(
                params.score,
                b_uncertain=params.score.b_uncertain * (1.0 - error),
                kappa_silence=params.score.kappa_silence * (1.0 + error),
            ),
        )
    if night.replayer is None:
        night.replayer = Replayer(project=run.project, base=night.base, context=night.context, params=params)
    pending = list(run.proposals.filter(status=ProposalStatus.NEW).order_by("pk"))
    for i, proposal in enumerate(pending):
        if progress is not None:
            progress("replay", i / max(1, len(pending)), f"replaying #{proposal.pk} {proposal.kind}")
        candidate = candidate_from_proposal(proposal, night.collection)
        try:
            report = night.replayer.score(candidate)
        except DomainError as exc:
            logger.warning("replay of proposal %s refused: %s", proposal.pk, exc.message)
            report = None
        with transaction.atomic():
            locked = Proposal.objects.select_for_update().get(pk=proposal.pk)
            if locked.status != ProposalStatus.NEW:
                continue
            plan = (locked.replay or {}).get("plan", {})
            if report is None:
                locked.replay = {"plan": plan, "error": "replay refused"}
                locked.score = -1.0
            else:
                locked.replay = {"plan": plan, **report.as_json()}
                locked.score = report.score
            locked.status = ProposalStatus.SCORED
            locked.save(update_fields=["replay", "score", "status", "updated_at"])
    _mark(
        run,
        "replay",
        scored=len(pending),
        recalibration=recal,
        seconds=round(time.perf_counter() - started, 3),
    )
    return len(pending)


def _gauge_history(run: OfflineRun, params: LoopParams) -> dict[str, list[tuple[float, float]]]:
    """The geDIG gauges of the project's proposals from earlier nights, newest first (the gate's history)."""
    rows = (
        Proposal.objects.filter(project_id=run.project_id, run__started_at__lt=run.started_at)
        .exclude(run=run)
        .order_by("-created_at", "-pk")
        .values_list("kind", "replay")[: params.gedig.history_window]
    )
    return gedig_history(rows)


def step_bin(run: OfflineRun, progress: Progress | None = None) -> dict[str, int]:
    """Step D: bins, silent-success sampling and confidence-boost zones."""
    if _done(run, "bin"):
        return run.stats["steps"]["bin"]["bins"]
    started = time.perf_counter()
    night = _night(run, progress)
    params = night.params.bins
    boosts = boost_zones(night.collection, night.base, params)
    history = _gauge_history(run, night.params)
    scored = list(run.proposals.filter(status=ProposalStatus.SCORED).order_by("-score", "pk"))
    counts = {"HIGH_CONF": 0, "MID_CONF": 0, "LOW_CONF": 0}
    claimed: dict[str, int] = {}
    thresholds_used: dict[str, dict[str, Any]] = {}
    for proposal in scored:
        plan = (proposal.replay or {}).get("plan", {})
        thresholds = gedig_calibrate(history, proposal.kind, night.params.gedig)
        thresholds_used[proposal.kind] = asdict(thresholds)
        gate = gedig_decide((proposal.replay or {}).get("gedig"), thresholds)
        decision = bin_for(
            kind=proposal.kind,
            replay=proposal.replay or {},
            guard=plan.get("guard", {}),
            target_keys=list(proposal.target_keys),
            boosted=set(boosts),
            params=params,
            gate=gate,
        )
        chosen_bin, reason, auto = decision.confidence_bin, decision.reason, decision.autocommit
        overlap = sorted({claimed[k] for k in proposal.target_keys if k in claimed})
        if auto and overlap:
            chosen_bin, auto = "MID_CONF", False
            reason = f"HIGH score but overlaps auto-committed proposal #{overlap[0]}"
        if auto:
            claimed.update({k: proposal.pk for k in proposal.target_keys})
        status = {
            "HIGH_CONF": ProposalStatus.AUTO_COMMITTED,
            "MID_CONF": ProposalStatus.PENDING_REVIEW,
            "LOW_CONF": ProposalStatus.BACKLOG,
        }[chosen_bin]
        with transaction.atomic():
            locked = Proposal.objects.select_for_update().get(pk=proposal.pk)
            if locked.status != ProposalStatus.SCORED:
                continue
            locked.confidence_bin = chosen_bin
            locked.status = status
            locked.replay = {
                **(locked.replay or {}),
                "bin_reason": reason,
                "gedig_gate": gate.as_json(decided=decision.gate),
            }
            if auto:
                locked.decided_at = timezone.now()
                locked.decision_reason = reason[:1000]
            locked.save()
            if auto:
                ProposalDecision.objects.create(
                    proposal=locked,
                    action=ProposalDecision.Action.AUTO_COMMIT,
                    actor_name=SYSTEM,
                    reason=reason[:1000],
                    status_before=ProposalStatus.SCORED,
                    status_after=status,
                )
        counts[chosen_bin] += 1
    _notify_reviewers(run)
    _stat(run, "gedig_thresholds", thresholds_used)
    samples = silent_success_sample(night.collection, night.base, params, rng=night.context.rng("silent"))
    _stat(run, "silent_samples", samples)
    _stat(run, "confidence_boost", boosts)
    _mark(
        run,
        "bin",
        bins=counts,
        boosted=len(boosts),
        samples=len(samples),
        seconds=round(time.perf_counter() - started, 3),
    )
    return counts


def _notify_reviewers(run: OfflineRun) -> None:
    """Announce what this night sent to the queue (``proposals_sent_to_review``; the review queue tells
    reviewers: email and/or webhook)."""
    pending = list(run.proposals.filter(status=ProposalStatus.PENDING_REVIEW).order_by("pk"))
    if pending:
        proposals_sent_to_review.send(sender=OfflineRun, project=run.project, proposals=pending)


def step_apply(run: OfflineRun, progress: Progress | None = None) -> dict[str, Any]:
    """Step E: publish the run's AUTO_COMMITTED proposals, together with every proposal reviewers
    approved in *batch* mode since the last publication, as one release."""
    from review.loop.application import proposals_apply

    started = time.perf_counter()
    auto = list(
        run.proposals.filter(status=ProposalStatus.AUTO_COMMITTED)
        .order_by("-score", "pk")
        .values_list("pk", flat=True)
    )
    batched = list(
        Proposal.objects.filter(project=run.project, status=ProposalStatus.APPROVED)
        .order_by("decided_at", "pk")
        .values_list("pk", flat=True)
    )
    ids = auto + [pk for pk in batched if pk not in auto]
    result: dict[str, Any] = {"applied": [], "failed": {}, "blocked": {}, "release": None}
    if ids:
        batch = proposals_apply(
            project=run.project,
            proposal_ids=ids,
            actor=None,
            notes=(
                f"offline loop run #{run.pk}: {len(auto)} auto-committed, "
                f"{len(ids) - len(auto)} approved proposal(s)"
            ),
        )
        result = {
            "applied": batch.applied,
            "failed": {str(k): v for k, v in batch.failed.items()},
            "blocked": {str(k): v for k, v in batch.blocked.items()},
            "release": batch.release.version if batch.release else None,
        }
        if batch.release is not None:
            OfflineRun.objects.filter(pk=run.pk).update(published_release=batch.release)
            run.published_release = batch.release
    _mark(run, "apply", **result, seconds=round(time.perf_counter() - started, 3))
    return result


def offline_run_finish(run: OfflineRun, *, error: str = "") -> OfflineRun:
    """Close the run and its Job (SUCCEEDED, or FAILED with the error)."""
    now = timezone.now()
    status = OfflineRun.Status.FAILED if error else OfflineRun.Status.SUCCEEDED
    OfflineRun.objects.filter(pk=run.pk).update(status=status, finished_at=now)
    if run.job_id:
        Job.objects.filter(pk=run.job_id).update(
            status=Job.Status.FAILED if error else Job.Status.SUCCEEDED,
            progress=1.0 if not error else Job.objects.get(pk=run.job_id).progress,
            finished_at=now,
            message=(error or "offline loop finished")[:500],
            result={"run": run.pk, "steps": {k: v for k, v in (run.stats.get("steps") or {}).items()}},
        )
    run.refresh_from_db()
    night_forget(run.pk)
    return run


STEP_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "consolidate": step_consolidate,
    "collect": step_collect,
    "generate": step_generate,
    "replay": step_replay,
    "bin": step_bin,
    "apply": step_apply,
}


def offline_loop_run(
    *,
    project: Project,
    idempotency_key: str = "",
    window_end: datetime | None = None,
    overrides: dict[str, Any] | None = None,
    progress: Progress | None = None,
    actor: Any = None,
) -> OfflineRun:
    """Run every step of one night in this process (the command and the simulation use it)."""
    run = offline_run_open(
        project=project,
        idempotency_key=idempotency_key,
        window_end=window_end,
        overrides=overrides,
        actor=actor,
    )
    if run.status != OfflineRun.Status.RUNNING:
        return run
    if run.job_id:
        Job.objects.filter(pk=run.job_id).update(status=Job.Status.RUNNING, started_at=timezone.now())

    def report(step: str, fraction: float, message: str) -> None:
        job_progress(run.job_id, step=step, fraction=fraction, message=message, log=fraction == 0)
        if progress is not None:
            progress(step, fraction, message)

    try:
        for step in STEPS:
            report(step, 0.0, "started")
            STEP_FUNCTIONS[step](run, report)
            report(step, 1.0, "done")
    except Exception as exc:
        logger.exception("offline run %s failed", run.pk)
        return offline_run_finish(run, error=f"{type(exc).__name__}: {exc}"[:500])
    return offline_run_finish(run)
