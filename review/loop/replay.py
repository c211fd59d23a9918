"""Step C — replay scoring, weak-signal corrected (ARG §3.3).

For each candidate, ``Replayer.score`` builds the candidate's **shadow release** (``review.loop.shadow``),
draws a representative, **seeded** sample of logged requests — the candidate's zone (the interactions
the change is about, up to ``zone_sample``) plus a control sample of the whole window (up to
``control_sample``, the same for every candidate of a night, to catch collateral damage) — and re-runs
them through **the real online pipeline** (``inference.pipeline.run_inference``) twice: on the active
release (the baseline, run once per night and cached) and on the shadow. Replay never writes: actions run
as dry runs and every replay happens inside a rolled-back transaction.

**Outcome of a replayed request.** Replay sees where a request lands, which route it takes and what
the pipeline answers, not what the user would say. The outcome is therefore *estimated*:

1. the same target as logged → the logged outcome (same answer, same reaction);
2. a new node that **keeps all of the logged target's content** (every sentence of its chunk: the
   merged AB of A + B keeps A's and B's) → the logged outcome, whatever it was: the answer the user
   reacted to is still there (``keeps_content``); a node that lives on the logged target otherwise
   (split child) and a logged CONFIRMED outcome → still CONFIRMED (the confirmed content is kept);
3. another existing node → the outcomes of the ``knn_k`` most similar logged prompts (cosine ≥
   ``knn_cosine``) that ended on that node, when at least ``knn_min`` exist;
4. otherwise (e.g. a brand-new node) → the pipeline's own verdict at answer time: INFO_UNCERTAIN or
   INFO_LOW_CONFIDENCE from C_info — a weak signal, **never confirmed**; an action without such
   history (nobody reached it, or no similar request did) is expected to fare as the project's
   actions do: the *action prior*, the mean action-success and action-failure shares of the window's
   logged action requests (silent ones included, at 0), from at
   least ``action_prior_min`` of them (fewer: unknown, 0). Without it, retiring an action whose
   routes fail more often than the project's (the edge veto) could only lose: every success it still
   has would count as lost and nothing as won on the action that takes its place. The prior is an
   estimate, not an observation: its share of the action gain is reported as ``modelled_action`` and
   left out of ``confirmed_gain``, so it can bring a change to a reviewer but is never what
   auto-commits it, nor what sends it to the backlog (``review.loop.bins``).

Rule 2 has a stronger form for an Info request that moves to a **new node made from part of its
logged node's content** (a split child): the *answer-fit model*. The **answer fit** of a request on a node is
the cosine of the prompt with the node's content vector (the release's embedding of title and chunk).
``AnswerFitModel`` learns, from the night's logged Info requests on existing nodes, the mean outcome
channels (silence included) as a function of answer fit — the mean over the ``fit_model_k`` logged
requests of nearest fit. Every request the change moves to such a node, whatever its logged outcome,
is then estimated as ``m(answer fit on the new node)``: what requests answered that well get elsewhere
in the project. Its baseline stays its logged outcome, so the change is credited by how the parent's
observed outcomes compare with that: a node serving two intents, whose users say its mixed answer
did not help, gains; a node that already served its requests well gains nothing from children that
fit them a little more closely. Silence stays silence — the model's uncertain channel is the silent
share at that fit, and the silence penalty applies unchanged — and the part of ΔConfirmed the model
contributes (its confirmed channel minus the logged one, over the moved requests) is reported as
``modelled_confirmed`` and left out of ``confirmed_gain``: auto-commit rests on observed outcomes
only. Without enough logged Info requests (``fit_model_min``) rule 2 applies as stated.

A child label proposed as SHADOW routes nothing by design, so replay evaluates it ACTIVE (what it would
do once promoted); the changeset itself still creates it SHADOW.

**Measurements** (shares of the sampled requests, after − before): Info outcomes split into three
channels (confirmed / uncertain / low-confidence incl. failures), Action success net of failures,
landing-point quality (the landing score of the chosen node: label weight × prompt cosine; a request
moved to a new node that keeps its previous node's whole content keeps its previous landing quality,
``same_answer_fits``), ambiguity (share
flagged VECTOR_AMBIGUITY, LOW_MARGIN, ABSTAIN_RECOMMENDED or NEW_INTENT_CANDIDATE), path length.

**Score** (§3.3.3–3.3.5)::

    Penalty_silent = κ · max(0, ΔUncertain − ΔConfirmed)
    Gain_info      = a·ΔConfirmed + b·ΔUncertain − c·ΔLowConf − Penalty_silent      (a > b, c > 0)
    Gain_action    = w_a · (ΔActionSuccess − ΔActionFailure)
    Gain_routing   = w_f·ΔLandingFit − w_amb·ΔAmbiguity − w_p·ΔPathLength / (1 + PathLength_before)
    Score(C)       = Gain_action + Gain_info + Gain_routing − λ·Complexity − μ·Viol_taxo − ν·Viol_sec

``Complexity`` is the geDIG operational gauge ``b = min(g0, gmin)`` (``review.loop.gauge``); ``Viol_taxo``
counts the graph/taxonomy validator findings on the shadow; ``Viol_sec`` counts integrity findings
(guardrail bypass, policy exposure) plus replayed requests that the baseline refused or kept out of
scope and the shadow now sends to an Action.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import numpy as np
from django.db import transaction

from inference.contracts import RequestContext
from inference.learning.encoder_finetune import encoder_for_documents
from inference.pipeline import InferenceRequest, run_inference
from ontology.store.port import GraphData, NodeData
from review.changeset import LabelAdd, Op
from review.integrity import integrity_violations
from review.loop.collection import AMBIGUITY_FLAGS, Collection, UnifiedOutcome
from review.loop.gauge import gauge
from review.loop.generators.base import Candidate, GeneratorContext, keeps_content
from review.loop.params import LoopParams
from review.loop.shadow import BaseRelease, ChangesetConflict, shadow_build

ROUTING_FLAGS = AMBIGUITY_FLAGS | {"NEW_INTENT_CANDIDATE"}
REROUTED_SHOWN = 8  # logged requests that route differently, kept as reviewer evidence
CHANNELS = ("confirmed", "uncertain", "low_confidence", "action_success", "action_failure")


@dataclass(frozen=True)
class AnswerFitModel:
    """Mean outcome channels of logged Info requests as a function of answer fit (see the module doc).

    ``fits`` is sorted; ``cumulative`` holds the running sums of the outcome vectors in that order, so
    ``m(fit)`` is the mean over the ``k`` logged requests whose fit is nearest (a window of the order).
    """

    fits: np.ndarray
    cumulative: np.ndarray  # (n + 1, channels)
    k: int

    @classmethod
    def fit(cls, fits: np.ndarray, outcomes: np.ndarray, k: int) -> AnswerFitModel:
        order = np.argsort(fits, kind="stable")
        cumulative = np.vstack([np.zeros((1, outcomes.shape[1])), np.cumsum(outcomes[order], axis=0)])
        return cls(fits=fits[order], cumulative=cumulative, k=max(1, min(k, fits.shape[0])))

    def __call__(self, fit: float) -> np.ndarray:
        n = self.fits.shape[0]
        centre = int(np.searchsorted(self.fits, fit))
        lo = min(max(0, centre - self.k // 2), n - self.k)
        return (self.cumulative[lo + self.k] - self.cumulative[lo]) / self.k


def content_kept(
    base_nodes: Mapping[str, NodeData], after: GraphData, lineage: Mapping[str, Sequence[str]]
) -> dict[str, frozenset[str]]:
    """For each node a change creates (``lineage``: new node → origin nodes), the origins whose whole
    content it keeps (``keeps_content``): the merged AB keeps A and B, a split child keeps neither."""
    nodes = {n.node_id: n for n in after.nodes}
    out: dict[str, frozenset[str]] = {}
    for node_id, origins in lineage.items():
        node = nodes.get(node_id)
        if node is None or node_id in base_nodes:
            continue
        out[node_id] = frozenset(
            o for o in origins if o in base_nodes and keeps_content(node.chunk, base_nodes[o].chunk)
        )
    return out


def same_answer_fits(
    rows: Sequence[int],
    before: dict[int, Replayed],
    after: dict[int, Replayed],
    kept: Mapping[str, frozenset[str]],
) -> tuple[dict[int, Replayed], int]:
    """``after`` with each request that moved to a new node keeping its previous node's whole content
    (``kept``) measured at its previous landing quality, and how many moved so. The merged AB gives the
    answer A gave; its longer text lowers its cosine with the prompt without changing what the user gets,
    so that drop is no measured effect."""
    out = dict(after)
    moved = 0
    for r in rows:
        b, a = before[r], after[r]
        if a.target != b.target and b.target in kept.get(a.target or "", ()) and a.landing:
            out[r] = replace(a, landing=((a.landing[0][0], b.fit), *a.landing[1:]))
            moved += 1
    return out, moved


@dataclass(frozen=True)
class Replayed:
    """What the real pipeline did with one logged request on one release."""

    row: int
    target: str | None
    landing: tuple[tuple[str, float], ...]
    flags: frozenset[str]
    path_length: int
    kind: str
    info_status: str
    action_status: str
    error: str = ""
    abstained: bool = (
        False  # the landing step abstained (answered by ``inference.steps.fallback`` or out of scope)
    )
    answer_fit: float | None = None  # cos(prompt, target's content vector) on the replayed release

    @property
    def unrouted(self) -> bool:
        """Refused, refocused, out of scope, or asked to clarify after an abstention: no node served it."""
        return self.abstained or self.kind in ("REFUSE", "REFOCUS", "OUT_OF_SCOPE")

    @property
    def fit(self) -> float:
        """Landing-point quality: the score of the chosen landing node (label weight × prompt cosine)."""
        return float(self.landing[0][1]) if self.landing else 0.0


@dataclass
class ReplayReport:
    """The replay measurements of one candidate (stored in ``Proposal.replay``)."""

    sample: dict[str, int]
    before: dict[str, float]
    after: dict[str, float]
    gains: dict[str, float]
    gauge: dict[str, Any]
    violations: dict[str, list[str]]
    score: float
    silence_dominated: bool
    confirmed_gain: float
    zone_coverage: float
    zone_interactions: int
    changed_targets: int
    seconds: float
    estimates: dict[str, int] = field(default_factory=dict)
    # of ``changed_targets``, the requests moved to a new node that keeps their node's whole content
    # (``content_kept``): the same answer under a new id, measured with their previous landing quality
    same_answer_moves: int = 0
    rerouted: list[dict[str, Any]] = field(default_factory=list)
    modelled_confirmed: float = 0.0
    answer_fit: dict[str, Any] = field(default_factory=dict)  # mean fit of the modelled requests
    modelled_action: float = 0.0  # the action prior's share of the action gain (module doc, rule 4)

    def as_json(self) -> dict[str, Any]:
        return {
            "sample": self.sample,
            "before": {k: round(v, 6) for k, v in self.before.items()},
            "after": {k: round(v, 6) for k, v in self.after.items()},
            "gains": {k: round(v, 6) for k, v in self.gains.items()},
            "gedig": self.gauge,
            "violations": self.violations,
            "score": round(self.score, 6),
            "silence_dominated": self.silence_dominated,
            "confirmed_gain": round(self.confirmed_gain, 6),
            "modelled_confirmed": round(self.modelled_confirmed, 6),
            "modelled_action": round(self.modelled_action, 6),
            "answer_fit": self.answer_fit,
            "zone_coverage": round(self.zone_coverage, 4),
            "zone_interactions": self.zone_interactions,
            "changed_targets": self.changed_targets,
            "same_answer_moves": self.same_answer_moves,
            "estimates": self.estimates,
            "rerouted": self.rerouted,
            "seconds": round(self.seconds, 3),
        }


def _context(data: dict[str, Any]) -> Any:

    known = set(RequestContext.__dataclass_fields__)
    values = {k: v for k, v in data.items() if k in known}
    values["history"] = tuple(values.get("history") or ())
    stamp = values.get("timestamp")
    if isinstance(stamp, str):
        try:
            values["timestamp"] = datetime.fromisoformat(stamp)
        except ValueError:
            values["timestamp"] = None
    return RequestContext(**values)


class Replayer:
    """Replays logged requests of one night through the real pipeline, on the base and on shadows."""

    def __init__(
        self, *, project: Any, base: BaseRelease, context: GeneratorContext, params: LoopParams
    ) -> None:
        self.project = project
        self.base = base
        self.context = context
        self.collection: Collection = context.collection
        self.params = params
        self._baseline: dict[int, Replayed] = {}
        self._control: np.ndarray | None = None
        self._knn_rows: dict[str, np.ndarray] = {}
        self._fit_model: AnswerFitModel | None = None
        self._fit_model_built = False
        self._logged_fits: dict[int, float | None] = {}
        self._action_prior: np.ndarray | None = None

    # --- running the pipeline -------------------------------------------------------------------

    def run(self, snapshot: Any, rows: Sequence[int]) -> dict[int, Replayed]:
        """The pipeline's verdict on ``rows`` served from ``snapshot`` (nothing is written)."""

        collection = self.collection
        # one batch with the release's encoder: the pipeline then finds every prompt in its cache
        vectors = encoder_for_documents(snapshot.documents).embed([collection.prompts[r] for r in rows])
        out: dict[int, Replayed] = {}
        for r, vector in zip(rows, vectors, strict=True):
            # one short rolled-back transaction per request: dry-run records vanish, and the write lock
            # (SQLite) is never held for a whole batch while the web process logs requests
            with transaction.atomic():
                result = run_inference(
                    InferenceRequest(
                        request_id=f"replay-{int(collection.log_ids[r])}",
                        project=self.project,
                        prompt=collection.prompts[r],
                        context=_context(collection.contexts[r] if collection.contexts else {}),
                        default_role=(collection.roles[r] if collection.roles else "") or None,
                        parameters=collection.parameters[r] if collection.parameters else {},
                        dry_run=True,
                        snapshot=snapshot,
                    )
                )
                outcome = result.outcome
                route, landing = result.route, result.landing
                target = (route.target if route else None) or (landing.node_start if landing else None)
                out[r] = Replayed(
                    row=r,
                    target=target,
                    landing=tuple(landing.candidates) if landing else (),
                    flags=frozenset(result.flags),
                    path_length=max(0, len(route.path_nodes) - 1) if route else 0,
                    kind=str(outcome.kind) if outcome else "",
                    info_status=str(outcome.info_status) if outcome and outcome.info_status else "",
                    action_status=str((outcome.action or {}).get("status", "")) if outcome else "",
                    error=result.error.message[:200] if result.error else "",
                    abstained=bool(landing and landing.abstained),
                    answer_fit=answer_fit(snapshot, target, vector),
                )
                transaction.set_rollback(True)
        return out

    def control_rows(self) -> np.ndarray:
        if self._control is None:
            rows = np.flatnonzero(self.collection.target >= 0)
            self._control = self.context.sample(rows, self.params.replay.control_sample, "replay:control")
        return self._control

    def sample_rows(self, candidate: Candidate) -> tuple[np.ndarray, np.ndarray]:
        zone = np.array(candidate.zone_rows, dtype=np.int64)
        zone = self.context.sample(zone, self.params.replay.zone_sample, f"replay:zone:{candidate.title}")
        control = np.setdiff1d(self.control_rows(), zone)
        return zone, control

    def baseline(self, rows: Sequence[int]) -> dict[int, Replayed]:
        missing = [r for r in rows if r not in self._baseline]
        if missing:
            self._baseline.update(self.run(self.base.snapshot, missing))
        return {r: self._baseline[r] for r in rows}

    # --- outcome estimation ---------------------------------------------------------------------

    def _history(self, node_ids: Sequence[str]) -> np.ndarray:
        key = "|".join(sorted(node_ids))
        rows = self._knn_rows.get(key)
        if rows is None:
            parts = [self.collection.rows_at(n, by="target") for n in node_ids]
            rows = np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
            rows = self.context.sample(rows, 400, f"knn:{key}")
            self._knn_rows[key] = rows
        return rows

    def fit_model(self) -> AnswerFitModel | None:
        """The night's answer-fit model (``None`` with fewer than ``fit_model_min`` logged Info requests)."""
        if not self._fit_model_built:
            self._fit_model_built = True
            params = self.params.replay
            collection = self.collection
            rows = np.array(
                [
                    r
                    for r in np.flatnonzero(collection.target >= 0).tolist()
                    if collection.kinds[r] in ("INFO", "MEMORY")
                ],
                dtype=np.int64,
            )
            rows = self.context.sample(rows, params.fit_model_sample, "replay:fit-model").tolist()
            self._logged_fits.update(self._logged_fits_of([r for r in rows if r not in self._logged_fits]))
            known = [(r, self._logged_fits[r]) for r in rows if self._logged_fits[r] is not None]
            if len(known) >= params.fit_model_min:
                self._fit_model = AnswerFitModel.fit(
                    np.array([f for _, f in known]),
                    np.array(
                        [_one_hot(UnifiedOutcome(int(collection.outcome[r])), "INFO") for r, _ in known]
                    ),
                    params.fit_model_k,
                )
        return self._fit_model

    def action_prior(self) -> np.ndarray:
        """The night's action prior (module doc, rule 4): the mean outcome channels of the window's
        logged action requests; zeros with fewer than ``action_prior_min`` of them."""
        if self._action_prior is None:
            collection = self.collection
            rows = [
                r for r in np.flatnonzero(collection.target >= 0).tolist() if collection.kinds[r] == "ACTION"
            ]
            self._action_prior = np.zeros(len(CHANNELS))
            if rows and len(rows) >= self.params.replay.action_prior_min:
                self._action_prior = np.mean(
                    [_one_hot(UnifiedOutcome(int(collection.outcome[r])), "ACTION") for r in rows], axis=0
                )
        return self._action_prior

    def logged_fit(self, row: int) -> float | None:
        """The answer fit of a logged request on the node that served it, on the base release."""
        if row not in self._logged_fits:
            self._logged_fits.update(self._logged_fits_of([row]))
        return self._logged_fits[row]

    def _logged_fits_of(self, rows: Sequence[int]) -> dict[int, float | None]:
        if not rows:
            return {}
        snapshot = self.base.snapshot
        vectors = encoder_for_documents(snapshot.documents).embed([self.collection.prompts[r] for r in rows])
        return {
            r: answer_fit(snapshot, self.collection.target_id(r), v)
            for r, v in zip(rows, vectors, strict=True)
        }

    def estimate(
        self,
        row: int,
        replayed: Replayed,
        candidate: Candidate | None,
        counts: dict[str, int],
        modelled: list[tuple[float, float, float]] | None = None,
        kept: Mapping[str, frozenset[str]] | None = None,
        modelled_action: list[float] | None = None,
    ) -> np.ndarray:
        """(confirmed, uncertain, low-confidence, action success, action failure) for one replayed request.

        ``modelled`` collects, per request the answer-fit model estimated, its contribution to the
        confirmed channel and the answer fit before and after. ``modelled_action`` collects, per request
        the action prior estimated, its action success net of failure. ``kept`` maps each new node of
        the candidate to the origins whose whole content it keeps (``content_kept``).
        """
        collection = self.collection
        vec = np.zeros(len(CHANNELS))
        logged_target = collection.target_id(row)
        logged = UnifiedOutcome(int(collection.outcome[row]))
        kind = replayed.kind
        if kind not in ("INFO", "MEMORY", "ACTION") or replayed.target is None:
            counts["no_outcome"] = counts.get("no_outcome", 0) + 1
            return vec
        lineage = candidate.lineage if candidate is not None else {}
        origins = set(lineage.get(replayed.target, ()))
        if replayed.target == logged_target and kind == collection.kinds[row]:
            counts["logged"] = counts.get("logged", 0) + 1
            return _one_hot(logged, kind)
        is_new = replayed.target not in self.base.nodes
        if (
            is_new
            and logged_target in (kept or {}).get(replayed.target, ())
            and kind == collection.kinds[row]
        ):
            counts["content_kept"] = counts.get("content_kept", 0) + 1
            return _one_hot(logged, kind)
        if (
            is_new
            and logged_target in origins
            and kind in ("INFO", "MEMORY")
            and collection.kinds[row] in ("INFO", "MEMORY")
            and replayed.answer_fit is not None
        ):
            model = self.fit_model()
            before_fit = self.logged_fit(row) if model is not None else None
            if model is not None and before_fit is not None:
                counts["fit_model"] = counts.get("fit_model", 0) + 1
                estimated = model(replayed.answer_fit)
                if modelled is not None:
                    observed = _one_hot(logged, kind)[0]
                    modelled.append((float(estimated[0] - observed), before_fit, replayed.answer_fit))
                return estimated
        if logged_target in origins and logged == UnifiedOutcome.CONFIRMED:
            counts["lineage"] = counts.get("lineage", 0) + 1
            return _one_hot(logged, kind)
        if not is_new:
            history = self._history(sorted(origins | {replayed.target}))
            history = history[history != row]
            if history.shape[0] >= self.params.replay.knn_min:
                prompt = self.context.prompt_vectors([row])[0]
                sims = self.context.prompt_vectors(history.tolist()) @ prompt
                order = np.argsort(-sims, kind="stable")[: self.params.replay.knn_k]
                chosen = [int(history[i]) for i in order if sims[i] >= self.params.replay.knn_cosine]
                if len(chosen) >= self.params.replay.knn_min:
                    counts["knn"] = counts.get("knn", 0) + 1
                    return np.mean(
                        [
                            _one_hot(UnifiedOutcome(int(collection.outcome[c])), collection.kinds[c])
                            for c in chosen
                        ],
                        axis=0,
                    )
        if kind == "ACTION":
            prior = self.action_prior()
            if prior.any():
                counts["action_prior"] = counts.get("action_prior", 0) + 1
                if modelled_action is not None:
                    modelled_action.append(float(prior[3] - prior[4]))
                return prior.copy()
        counts["pipeline"] = counts.get("pipeline", 0) + 1
        if kind in ("INFO", "MEMORY"):
            status = replayed.info_status
            if status == "INFO_LOW_CONFIDENCE":
                vec[2] = 1.0
            else:
                vec[1] = 1.0  # silence: uncertain at best, never confirmed
        return vec

    # --- scoring ------------------------------------------------------------------------------

    def _measure(
        self,
        rows: Sequence[int],
        results: dict[int, Replayed],
        candidate: Candidate | None,
        counts: dict[str, int],
        kept: Mapping[str, frozenset[str]] | None = None,
    ) -> dict[str, float]:
        if not rows:
            return {
                c: 0.0
                for c in (
                    *CHANNELS,
                    "fit",
                    "ambiguity",
                    "path_length",
                    "modelled_confirmed",
                    "modelled_action",
                )
            }
        modelled: list[tuple[float, float, float]] = []
        modelled_action: list[float] = []
        outcomes = np.array(
            [self.estimate(r, results[r], candidate, counts, modelled, kept, modelled_action) for r in rows]
        )
        means = outcomes.mean(axis=0)
        out = {name: float(means[i]) for i, name in enumerate(CHANNELS)}
        out["modelled_confirmed"] = float(sum(m[0] for m in modelled) / len(rows))
        out["modelled_action"] = float(sum(modelled_action) / len(rows))
        if modelled:
            out["modelled_fit_before"] = float(np.mean([m[1] for m in modelled]))
            out["modelled_fit_after"] = float(np.mean([m[2] for m in modelled]))
        out["fit"] = float(np.mean([results[r].fit for r in rows]))
        out["ambiguity"] = float(np.mean([bool(results[r].flags & ROUTING_FLAGS) for r in rows]))
        out["path_length"] = float(np.mean([results[r].path_length for r in rows]))
        return out

    def score(self, candidate: Candidate) -> ReplayReport:
        """Build the shadow, replay the sample on base and shadow, and score the candidate."""
        started = time.perf_counter()
        params = self.params
        violations: dict[str, list[str]] = {"taxonomy": [], "security": []}
        try:
            shadow = shadow_build(self.base, evaluated_ops(candidate.ops), kind=candidate.kind)
        except ChangesetConflict as exc:
            violations["taxonomy"].append(f"review.apply_conflict: {exc}")
            return self._refused(candidate, violations, started)
        violations["taxonomy"] = [f"{v.rule}: {v.message}" for v in shadow.violations]
        violations["security"] = [
            f"{v.rule}: {v.message}"
            for v in integrity_violations(
                self.base.graph, shadow.applied.graph, candidate.ops, documents=shadow.applied.documents
            )
        ]
        zone, control = self.sample_rows(candidate)
        rows = [int(r) for r in np.concatenate([zone, control])]
        before = self.baseline(rows)
        after = self.run(shadow.snapshot, rows)
        for r in rows:
            if before[r].unrouted and after[r].kind == "ACTION":
                violations["security"].append(
                    f"replay: request {int(self.collection.log_ids[r])} now reaches an action"
                )
        counts_before: dict[str, int] = {}
        counts_after: dict[str, int] = {}
        m_before = self._measure(rows, before, None, counts_before)
        kept = content_kept(self.base.nodes, shadow.applied.graph, candidate.lineage)
        after, same_answer = same_answer_fits(rows, before, after, kept)
        m_after = self._measure(rows, after, candidate, counts_after, kept)
        g = gauge(
            before=self.base.graph,
            after=shadow.applied.graph,
            ops=candidate.ops,
            landing_before=[[s for _, s in before[r].landing] for r in zone.tolist()],
            landing_after=[[s for _, s in after[r].landing] for r in zone.tolist()],
            params=params.gedig,
        )
        report = self._report(
            candidate, zone, rows, before, after, m_before, m_after, g, violations, counts_after, started
        )
        report.same_answer_moves = same_answer
        return report

    def _refused(
        self, candidate: Candidate, violations: dict[str, list[str]], started: float
    ) -> ReplayReport:
        zero = {c: 0.0 for c in (*CHANNELS, "fit", "ambiguity", "path_length")}
        return ReplayReport(
            sample={"zone": 0, "control": 0},
            before=zero,
            after=zero,
            gains={},
            gauge={},
            violations=violations,
            score=-self.params.score.mu_taxonomy * len(violations["taxonomy"]),
            silence_dominated=False,
            confirmed_gain=0.0,
            zone_coverage=0.0,
            zone_interactions=len(candidate.zone_rows),
            changed_targets=0,
            seconds=time.perf_counter() - started,
        )

    def _report(
        self, candidate, zone, rows, before, after, m_before, m_after, g, violations, counts, started
    ) -> ReplayReport:  # type: ignore[no-untyped-def]
        sp = self.params.score
        for key in ("modelled_confirmed", "modelled_action"):
            m_before.pop(key, None)  # the baseline is never modelled
        modelled_confirmed = m_after.pop("modelled_confirmed", 0.0)
        modelled_action = m_after.pop("modelled_action", 0.0)
        fits = [m_after.pop(k, None) for k in ("modelled_fit_before", "modelled_fit_after")]
        d = {k: m_after[k] - m_before[k] for k in m_before}
        penalty = sp.kappa_silence * max(0.0, d["uncertain"] - d["confirmed"])
        gain_info = (
            sp.a_confirmed * d["confirmed"]
            + sp.b_uncertain * d["uncertain"]
            - sp.c_lowconf * d["low_confidence"]
            - penalty
        )
        gain_action = sp.action_weight * (d["action_success"] - d["action_failure"])
        gain_routing = (
            sp.fit_weight * d["fit"]
            - sp.ambiguity_weight * d["ambiguity"]
            - sp.path_weight * d["path_length"] / (1.0 + m_before["path_length"])
        )
        complexity = g.b
        viol_taxo, viol_sec = len(violations["taxonomy"]), len(violations["security"])
        score = (
            gain_action
            + gain_info
            + gain_routing
            - sp.lambda_complexity * complexity
            - sp.mu_taxonomy * viol_taxo
            - sp.nu_security * viol_sec
        )
        positive = max(0.0, d["uncertain"]) + max(0.0, d["confirmed"]) + max(0.0, d["action_success"])
        silence_dominated = d["uncertain"] - d["confirmed"] > 1e-9 and (
            positive <= 0 or max(0.0, d["uncertain"]) >= self.params.bins.max_uncertain_share * positive
        )
        zone_rows = np.array(candidate.zone_rows, dtype=np.int64)
        info_zone = [int(r) for r in zone_rows if self.collection.kinds[int(r)] in ("INFO", "MEMORY")]
        coverage = (
            float(np.mean([bool(self.collection.verified[r]) for r in info_zone])) if info_zone else 0.0
        )
        changed_rows = [r for r in rows if before[r].target != after[r].target]
        changed = len(changed_rows)
        return ReplayReport(
            sample={"zone": int(len(zone)), "control": int(len(rows) - len(zone))},
            before=m_before,
            after=m_after,
            gains={
                **{f"delta_{k}": v for k, v in d.items()},
                "penalty_silent": penalty,
                "gain_info": gain_info,
                "gain_action": gain_action,
                # the part of gain_action that rests on the action prior (rule 4), not on outcomes
                "modelled_action_gain": sp.action_weight * modelled_action,
                "gain_routing": gain_routing,
                # the score's ambiguity term (w_amb·ΔAmbiguity): what placement changes are not judged on
                "ambiguity_cost": sp.ambiguity_weight * d["ambiguity"],
                "complexity": complexity,
                "violations_taxonomy": float(viol_taxo),
                "violations_security": float(viol_sec),
            },
            gauge=g.as_json(),
            violations=violations,
            score=float(score),
            silence_dominated=bool(silence_dominated),
            confirmed_gain=float(
                d["confirmed"]
                - modelled_confirmed
                + max(0.0, d["action_success"] - d["action_failure"] - modelled_action)
            ),
            zone_coverage=coverage,
            zone_interactions=int(zone_rows.shape[0]),
            changed_targets=int(changed),
            seconds=time.perf_counter() - started,
            estimates=counts,
            rerouted=[self._rerouted(r, before[r], after[r]) for r in changed_rows[:REROUTED_SHOWN]],
            modelled_confirmed=float(modelled_confirmed),
            modelled_action=float(modelled_action),
            answer_fit=(
                {
                    "before": round(fits[0], 4),
                    "after": round(fits[1], 4),
                    "requests": counts.get("fit_model", 0),
                }
                if fits[0] is not None and fits[1] is not None
                else {}
            ),
        )

    def _rerouted(self, row: int, before: Replayed, after: Replayed) -> dict[str, Any]:
        """One logged request that routes differently on the shadow release (shown to reviewers)."""
        return {
            "log_id": int(self.collection.log_ids[row]),
            "prompt": self.collection.prompts[row][:300],
            "before": before.target or "",
            "after": after.target or "",
            "estimated": after.kind,  # the outcome kind the shadow release would produce
            "outcome": UnifiedOutcome(int(self.collection.outcome[row])).name,
        }


def evaluated_ops(ops: tuple[Op, ...]) -> tuple[Op, ...]:
    """The operations as replay evaluates them: a child label proposed as SHADOW (which by design
    changes no routing) is evaluated ACTIVE — what it would do once promoted."""
    return tuple(
        replace(op, status="ACTIVE") if isinstance(op, LabelAdd) and op.status != "ACTIVE" else op
        for op in ops
    )


def answer_fit(snapshot: Any, node_id: str | None, prompt_vector: np.ndarray) -> float | None:
    """cos(prompt, node's content vector) on ``snapshot`` (``None`` without the node or embeddings)."""
    embeddings = snapshot.embeddings
    position = snapshot.position.get(node_id) if node_id is not None else None
    if embeddings is None or position is None:
        return None
    return float(np.dot(embeddings[position], np.asarray(prompt_vector, dtype=np.float32)))


def _one_hot(outcome: UnifiedOutcome, kind: str) -> np.ndarray:
    vec = np.zeros(len(CHANNELS))
    if kind == "ACTION":
        if outcome == UnifiedOutcome.CONFIRMED:
            vec[3] = 1.0
        elif outcome == UnifiedOutcome.FAILURE:
            vec[4] = 1.0
        return vec
    if kind in ("INFO", "MEMORY"):
        if outcome == UnifiedOutcome.CONFIRMED:
            vec[0] = 1.0
        elif outcome == UnifiedOutcome.UNCERTAIN:
            vec[1] = 1.0
        elif outcome in (UnifiedOutcome.LOW_CONFIDENCE, UnifiedOutcome.FAILURE):
            vec[2] = 1.0
    return vec
