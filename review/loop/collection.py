"""Step A — collection & preparation, weak-signal aware (ARG §3.1).

``collect`` reads one project's InferenceLogs in a time window (prompt, raw vs final labels, flags,
landing point, path, target node, outcome, active check), the explicit feedback, and the episodic memory
(through ``episodes_for``), and turns them into a ``Collection``: compact per-interaction
columns plus the per node / per edge metrics of §3.1.2. It is the single source the generators and the
replay read.

**Unified outcome definitions** (§3.1.1) — every interaction gets one ``UnifiedOutcome``:

=====================  ========  ===============================================================
outcome                strength  from
=====================  ========  ===============================================================
``CONFIRMED``          strong    Info/MemoryRead: explicit positive feedback (INFO_CONFIRMED_SUCCESS)
                                 — or, when enabled, the short-term proxy "a related action of the same
                                 session succeeded right after"; Action: the system's own success
                                 (API 200 / workflow completed: ACTION_SUCCEEDED) or a confirmed
                                 ACTION_CONFIRMED_SUCCESS
``FAILURE``            strong    explicit negative feedback on an Info answer (INFO_LOW_CONFIDENCE with
                                 a signal), an action that failed or was reported failed
``UNCERTAIN``          weak      INFO_UNCERTAIN_SUCCESS: no complaint, session end, no follow-up —
                                 silence. **A weak signal never counts as confirmed.**
``LOW_CONFIDENCE``     weak      INFO_LOW_CONFIDENCE at answer time (low C_info), no signal
``NONE``               —         refusals, refocus, out of scope, clarifications, dry runs, errors
=====================  ========  ===============================================================

**Metrics** per node (the interactions whose *target* is the node) and per edge (the interactions
whose path took it), over Info / MemoryRead interactions:

* ``ConfirmedSuccessRate_info`` = CONFIRMED / n_info;
* ``UncertainSuccessRate_info`` = UNCERTAIN / n_info;
* ``LowConfidenceRate_info`` = (LOW_CONFIDENCE + FAILURE) / n_info;
* ``ActiveCheckCoverage`` = interactions whose quality was *verified* by an explicit signal (an active
  check answered, or spontaneous feedback) / n_info;

plus Action success / failure rates, landing counts, ambiguity flags and mean path length. These
expose nodes that look successful mainly because of silence (high uncertain, low confirmed, low
coverage), zones whose real quality is unknown, and edges that lead to low-confidence outcomes.
"""

from __future__ import annotations

import enum
import logging
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, cast

import numpy as np
from django.utils import timezone

from inference.models import Feedback, InferenceLog
from memory.models import EpisodicMemory

logger = logging.getLogger(__name__)

AMBIGUITY_FLAGS = frozenset({"VECTOR_AMBIGUITY", "LOW_MARGIN", "ABSTAIN_RECOMMENDED"})
TAXONOMY_TRIGGER_FLAGS = frozenset(
    {"NEW_INTENT_CANDIDATE", "UNKNOWN_LABEL_CANDIDATE", "MISSING_LABEL_CANDIDATE", "VECTOR_AMBIGUITY"}
)
INFO_KINDS = frozenset({"INFO", "MEMORY"})


class UnifiedOutcome(enum.IntEnum):
    """§3.1.1 — one outcome per interaction; CONFIRMED and FAILURE are the strong ones."""

    NONE = 0
    CONFIRMED = 1
    UNCERTAIN = 2
    LOW_CONFIDENCE = 3
    FAILURE = 4

    @property
    def strong(self) -> bool:
        return self in (UnifiedOutcome.CONFIRMED, UnifiedOutcome.FAILURE)


def unified_outcome(*, outcome_kind: str, outcome_status: str, silent: bool) -> UnifiedOutcome:
    """The unified outcome of one logged interaction (see the module table)."""
    if outcome_kind in INFO_KINDS:
        if outcome_status == "INFO_CONFIRMED_SUCCESS" and not silent:
            return UnifiedOutcome.CONFIRMED
        if outcome_status == "INFO_LOW_CONFIDENCE":
            return UnifiedOutcome.LOW_CONFIDENCE if silent else UnifiedOutcome.FAILURE
        if outcome_status in ("INFO_UNCERTAIN_SUCCESS", "MEMORY", "INFO_CONFIRMED_SUCCESS"):
            return UnifiedOutcome.UNCERTAIN  # silence (or a confirmed status without a signal) stays weak
        return UnifiedOutcome.NONE
    if outcome_kind == "ACTION":
        if outcome_status in ("ACTION_SUCCEEDED", "ACTION_CONFIRMED_SUCCESS"):
            return UnifiedOutcome.CONFIRMED
        if outcome_status in ("ACTION_FAILED", "ACTION_REPORTED_FAILURE", "ACTION_TIMEOUT"):
            return UnifiedOutcome.FAILURE
    return UnifiedOutcome.NONE


@dataclass(frozen=True)
class NodeMetrics:
    """§3.1.2 metrics of one node (its interactions as the target), JSON-ready via ``as_json``."""

    node_id: str
    interactions: int
    landings: int
    n_info: int
    confirmed: int
    uncertain: int
    low_confidence: int
    failures: int
    verified: int
    n_action: int
    action_success: int
    ambiguous: int
    mean_path_length: float

    @property
    def confirmed_rate(self) -> float:
        return self.confirmed / self.n_info if self.n_info else 0.0

    @property
    def uncertain_rate(self) -> float:
        return self.uncertain / self.n_info if self.n_info else 0.0

    @property
    def low_confidence_rate(self) -> float:
        return (self.low_confidence + self.failures) / self.n_info if self.n_info else 0.0

    @property
    def active_check_coverage(self) -> float:
        return self.verified / self.n_info if self.n_info else 0.0

    @property
    def action_success_rate(self) -> float:
        return self.action_success / self.n_action if self.n_action else 0.0

    @property
    def silence_dominated(self) -> bool:
        """Looks successful mainly because of silence: uncertain ≥ 60 % and under 10 % verified."""
        return self.n_info > 0 and self.uncertain_rate >= 0.6 and self.active_check_coverage < 0.1

    def as_json(self) -> dict[str, Any]:
        return {
            "node_id": self.node_id,
            "interactions": self.interactions,
            "landings": self.landings,
            "n_info": self.n_info,
            "ConfirmedSuccessRate_info": round(self.confirmed_rate, 4),
            "UncertainSuccessRate_info": round(self.uncertain_rate, 4),
            "LowConfidenceRate_info": round(self.low_confidence_rate, 4),
            "ActiveCheckCoverage": round(self.active_check_coverage, 4),
            "n_action": self.n_action,
            "ActionSuccessRate": round(self.action_success_rate, 4),
            "ambiguous": self.ambiguous,
            "mean_path_length": round(self.mean_path_length, 3),
            "silence_dominated": self.silence_dominated,
        }


@dataclass(frozen=True)
class EdgeMetrics:
    """§3.1.2 metrics of one edge (the interactions whose path took it)."""

    key: tuple[str, str, str]
    traversals: int
    n_info: int
    confirmed: int
    uncertain: int
    low_confidence: int
    verified: int
    action_success: int
    action_failure: int

    def as_json(self) -> dict[str, Any]:
        n = self.n_info
        return {
            "source": self.key[0],
            "target": self.key[1],
            "type": self.key[2],
            "traversals": self.traversals,
            "n_info": n,
            "ConfirmedSuccessRate_info": round(self.confirmed / n, 4) if n else 0.0,
            "UncertainSuccessRate_info": round(self.uncertain / n, 4) if n else 0.0,
            "LowConfidenceRate_info": round(self.low_confidence / n, 4) if n else 0.0,
            "ActiveCheckCoverage": round(self.verified / n, 4) if n else 0.0,
            "action_success": self.action_success,
            "action_failure": self.action_failure,
        }


@dataclass(frozen=True)
class Episode:
    """One episodic memory entry, as the offline loop reads it (see ``episodes_for``)."""

    episode_id: str
    text: str
    label_ids: tuple[str, ...]
    info_type: str
    scope: str
    source: str  # who said it (user / session)
    segment: str  # which user segment (role, channel…)
    outcome: UnifiedOutcome
    flags: tuple[str, ...]
    info_unit: str | None  # the InfoUnit it was deduplicated into, if any
    created_at: datetime | None = None


@dataclass
class Collection:
    """The interactions of one window as columns, with their metrics (row ``i`` = one InferenceLog)."""

    project_id: int
    window_start: datetime
    window_end: datetime
    log_ids: np.ndarray
    created: np.ndarray  # float epoch seconds
    prompts: list[str]
    sessions: np.ndarray  # int codes into ``session_names``
    sources: np.ndarray  # int codes into ``source_names`` (user id, else session)
    segments: np.ndarray  # int codes into ``segment_names`` (role|channel)
    landing: np.ndarray  # node codes into ``node_names`` (−1 none)
    target: np.ndarray  # node codes (−1 none)
    paths: list[tuple[int, ...]]  # node codes along the route
    path_edges: list[tuple[tuple[str, str, str], ...]]
    labels: list[tuple[str, ...]]  # L_final LabelIDs
    top_labels: list[tuple[tuple[str, float], ...]]  # weaver top-K (LabelID, cosine), best first
    shadow_wins: list[str]  # SHADOW label that beat every ACTIVE one in the top-K ("" if none)
    landing_candidates: list[tuple[tuple[str, float], ...]]
    flags: list[frozenset[str]]
    kinds: list[str]
    outcome: np.ndarray  # UnifiedOutcome codes (int8)
    c_info: np.ndarray  # float (nan when not Info)
    confidence: np.ndarray  # confidence_global (nan when none)
    asked: np.ndarray  # bool: an active check was asked
    verified: np.ndarray  # bool: an explicit signal was received
    node_names: list[str]
    session_names: list[str]
    source_names: list[str]
    segment_names: list[str]
    contexts: list[dict[str, Any]] = field(default_factory=list)  # the logged RequestContext (replay input)
    roles: list[str] = field(default_factory=list)  # the policy role the request ran under
    parameters: list[dict[str, Any]] = field(default_factory=list)  # the action parameters it carried
    choices: dict[int, str] = field(default_factory=dict)  # log id → disambiguation choice
    episodes: list[Episode] = field(default_factory=list)
    node_metrics: dict[str, NodeMetrics] = field(default_factory=dict)
    edge_metrics: dict[tuple[str, str, str], EdgeMetrics] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return int(self.log_ids.shape[0])

    def node_code(self, node_id: str) -> int:
        return self._node_index.get(node_id, -1)

    def rows_at(self, node_id: str, *, by: str = "target") -> np.ndarray:
        """Row indices whose target (or landing point, ``by="landing"``) is ``node_id``."""
        code = self._node_index.get(node_id, -1)
        if code < 0:
            return np.zeros(0, dtype=np.int64)
        column = self.target if by == "target" else self.landing
        return np.flatnonzero(column == code)

    def target_id(self, row: int) -> str | None:
        code = int(self.target[row])
        return self.node_names[code] if code >= 0 else None

    def landing_id(self, row: int) -> str | None:
        code = int(self.landing[row])
        return self.node_names[code] if code >= 0 else None

    def __post_init__(self) -> None:
        self._node_index = {name: i for i, name in enumerate(self.node_names)}

    def summary(self) -> dict[str, Any]:
        counts = Counter(int(x) for x in self.outcome)
        return {
            "interactions": self.size,
            "episodes": len(self.episodes),
            "outcomes": {UnifiedOutcome(k).name: v for k, v in sorted(counts.items())},
            "strong": int(sum(v for k, v in counts.items() if UnifiedOutcome(k).strong)),
            "nodes_with_traffic": len(self.node_metrics),
            "edges_traversed": len(self.edge_metrics),
            "languages": self.uncovered_languages(),
        }

    def uncovered_languages(self) -> dict[str, int]:
        """Requests answered with the language message, per language (flags ``language:<code>``,
        ``inference.steps.language``): demand for a language the release does not cover."""
        counts = Counter(
            flag.partition(":")[2] for flags in self.flags for flag in flags if flag.startswith("language:")
        )
        return dict(sorted(counts.items()))


class _Codes:
    def __init__(self, initial: Iterable[str] = ()) -> None:
        self.names: list[str] = []
        self.index: dict[str, int] = {}
        for name in initial:
            self.code(name)

    def code(self, name: str | None) -> int:
        if not name:
            return -1
        code = self.index.get(name)
        if code is None:
            code = self.index[name] = len(self.names)
            self.names.append(name)
        return code


LOG_FIELDS = (
    "id",
    "created_at",
    "session_id",
    "prompt",
    "role_key",
    "context",
    "labels_final",
    "weaver",
    "flags",
    "landing",
    "path_nodes",
    "path_edges",
    "target_node",
    "outcome_kind",
    "outcome_status",
    "silent_outcome",
    "c_info",
    "confidence",
    "active_check",
    "action",
)


def _shadow_win(weaver: dict[str, Any]) -> str:
    shadow = weaver.get("shadow") or []
    top = weaver.get("top_k") or []
    if not shadow:
        return ""
    shadow_ids = {lid for lid, _ in shadow}
    best_active = max((c for lid, c in top if lid not in shadow_ids), default=-1.0)
    lid, cosine = max(shadow, key=lambda item: item[1])
    return lid if cosine >= best_active else ""


def collect(
    *,
    project: Any,
    window_start: datetime | None = None,
    window_end: datetime | None = None,
    window_days: float | None = None,
    node_ids: Iterable[str] = (),
    max_logs: int | None = None,
    reuse_proxy_s: float = 0.0,
    progress: Any = None,
) -> Collection:
    """Read the window's logs, feedback and episodes into a ``Collection`` with its metrics.

    ``node_ids`` seeds the node vocabulary (the base release's ids, so codes are stable). ``max_logs``
    keeps the most recent logs only. ``reuse_proxy_s`` > 0 enables the short-term proxy of §3.1.1: an
    UNCERTAIN Info interaction followed within that many seconds, in the same session, by a successful
    action whose path passes its target counts as CONFIRMED.
    """
    import time

    from django.conf import settings

    started = time.perf_counter()
    window_end = window_end or timezone.now()
    if window_start is None:
        # settings declares OFFLINE_LOOP's values as object; "window_days" is a number of days
        days = window_days if window_days is not None else cast(float, settings.OFFLINE_LOOP["window_days"])
        window_start = window_end - timedelta(days=days)
    query = InferenceLog.objects.filter(
        project_id=project.pk, created_at__gte=window_start, created_at__lt=window_end
    ).order_by("-created_at", "-id")
    if max_logs:
        query = query[:max_logs]
    nodes, sessions, sources, segments = _Codes(node_ids), _Codes(), _Codes(), _Codes()
    rows: dict[str, list[Any]] = {k: [] for k in ("id", "t", "ses", "src", "seg", "land", "tgt", "out")}
    rows.update({k: [] for k in ("cinfo", "conf", "asked", "verified")})
    prompts: list[str] = []
    paths: list[tuple[int, ...]] = []
    path_edges: list[tuple[tuple[str, str, str], ...]] = []
    labels: list[tuple[str, ...]] = []
    top_labels: list[tuple[tuple[str, float], ...]] = []
    shadow_wins: list[str] = []
    candidates: list[tuple[tuple[str, float], ...]] = []
    flags: list[frozenset[str]] = []
    kinds: list[str] = []
    contexts: list[dict[str, Any]] = []
    roles: list[str] = []
    parameters: list[dict[str, Any]] = []
    for values in query.values_list(*LOG_FIELDS).iterator(chunk_size=5000):
        record = dict(zip(LOG_FIELDS, values, strict=True))
        context = record["context"] or {}
        session = record["session_id"] or ""
        rows["id"].append(record["id"])
        rows["t"].append(record["created_at"].timestamp())
        rows["ses"].append(sessions.code(session or f"log:{record['id']}"))
        rows["src"].append(sources.code(str(context.get("user_id") or session or f"log:{record['id']}")))
        rows["seg"].append(segments.code(f"{record['role_key'] or '-'}|{context.get('channel') or '-'}"))
        landing = record["landing"] or {}
        rows["land"].append(nodes.code(landing.get("node_start")))
        rows["tgt"].append(nodes.code(record["target_node"]))
        kind, status = record["outcome_kind"] or "", record["outcome_status"] or ""
        silent = bool(record["silent_outcome"])
        rows["out"].append(int(unified_outcome(outcome_kind=kind, outcome_status=status, silent=silent)))
        rows["cinfo"].append(record["c_info"] if record["c_info"] is not None else np.nan)
        rows["conf"].append(record["confidence"] if record["confidence"] is not None else np.nan)
        rows["asked"].append(bool(record["active_check"]))
        rows["verified"].append(not silent)
        prompts.append(record["prompt"])
        paths.append(tuple(nodes.code(n) for n in record["path_nodes"] or ()))
        path_edges.append(tuple(tuple(e) for e in record["path_edges"] or ()))  # type: ignore[misc]
        labels.append(tuple(record["labels_final"] or ()))
        weaver = record["weaver"] or {}
        top_labels.append(tuple((lid, float(c)) for lid, c in weaver.get("top_k") or ()))
        shadow_wins.append(_shadow_win(weaver))
        candidates.append(tuple((n, float(s)) for n, s in landing.get("candidates") or ()))
        flags.append(frozenset(record["flags"] or ()) | frozenset(landing.get("flags") or ()))
        kinds.append(kind)
        contexts.append(context)
        roles.append(record["role_key"] or "")
        action = record["action"] or {}
        parameters.append(dict(action.get("parameters") or {}) if isinstance(action, dict) else {})
        if progress is not None and len(prompts) % 5000 == 0:
            progress(len(prompts))
    collection = Collection(
        project_id=project.pk,
        window_start=window_start,
        window_end=window_end,
        log_ids=np.array(rows["id"], dtype=np.int64),
        created=np.array(rows["t"], dtype=np.float64),
        prompts=prompts,
        sessions=np.array(rows["ses"], dtype=np.int64),
        sources=np.array(rows["src"], dtype=np.int64),
        segments=np.array(rows["seg"], dtype=np.int64),
        landing=np.array(rows["land"], dtype=np.int64),
        target=np.array(rows["tgt"], dtype=np.int64),
        paths=paths,
        path_edges=path_edges,
        labels=labels,
        top_labels=top_labels,
        shadow_wins=shadow_wins,
        landing_candidates=candidates,
        flags=flags,
        kinds=kinds,
        outcome=np.array(rows["out"], dtype=np.int8),
        c_info=np.array(rows["cinfo"], dtype=np.float64),
        confidence=np.array(rows["conf"], dtype=np.float64),
        asked=np.array(rows["asked"], dtype=bool),
        verified=np.array(rows["verified"], dtype=bool),
        node_names=nodes.names,
        session_names=sessions.names,
        source_names=sources.names,
        segment_names=segments.names,
        contexts=contexts,
        roles=roles,
        parameters=parameters,
    )
    collection.timings["read_s"] = round(time.perf_counter() - started, 3)
    if collection.size:
        choices = Feedback.objects.filter(
            log__project_id=project.pk,
            log__created_at__gte=window_start,
            log__created_at__lt=window_end,
            kind=Feedback.Kind.DISAMBIGUATION,
        ).values_list("log_id", "choice")
        collection.choices = dict(choices)
    if reuse_proxy_s > 0:
        _apply_reuse_proxy(collection, reuse_proxy_s)

    collection.episodes = episodes_for(project=project, window_start=window_start, window_end=window_end)
    t = time.perf_counter()
    compute_metrics(collection)
    collection.timings["metrics_s"] = round(time.perf_counter() - t, 3)
    collection.timings["total_s"] = round(time.perf_counter() - started, 3)
    return collection


def _apply_reuse_proxy(collection: Collection, window_s: float) -> None:
    """§3.1.1 optional strong proxy: immediate reuse of a related action confirms an Info answer."""
    order = np.lexsort((collection.created, collection.sessions))
    for a, b in zip(order[:-1], order[1:], strict=True):
        if collection.sessions[a] != collection.sessions[b]:
            continue
        if collection.outcome[a] != UnifiedOutcome.UNCERTAIN or collection.kinds[b] != "ACTION":
            continue
        if collection.outcome[b] != UnifiedOutcome.CONFIRMED:
            continue
        if collection.created[b] - collection.created[a] > window_s:
            continue
        if collection.target[a] >= 0 and int(collection.target[a]) in collection.paths[b]:
            collection.outcome[a] = UnifiedOutcome.CONFIRMED
            collection.verified[a] = True


def compute_metrics(collection: Collection) -> None:
    """Fill ``node_metrics`` and ``edge_metrics`` (vectorised per node; one pass over paths per edge)."""
    n_nodes = len(collection.node_names)
    if collection.size == 0 or n_nodes == 0:
        collection.node_metrics, collection.edge_metrics = {}, {}
        return
    target = collection.target
    has_target = target >= 0
    out = collection.outcome
    info = np.array([k in INFO_KINDS for k in collection.kinds], dtype=bool)
    action = np.array([k == "ACTION" for k in collection.kinds], dtype=bool)
    ambiguous = np.array([bool(f & AMBIGUITY_FLAGS) for f in collection.flags], dtype=bool)
    path_len = np.array([max(0, len(p) - 1) for p in collection.paths], dtype=np.float64)

    def count(mask: np.ndarray) -> np.ndarray:
        return np.bincount(target[has_target & mask], minlength=n_nodes)

    interactions = count(np.ones_like(has_target))
    landings = np.bincount(collection.landing[collection.landing >= 0], minlength=n_nodes)
    n_info = count(info)
    confirmed = count(info & (out == UnifiedOutcome.CONFIRMED))
    uncertain = count(info & (out == UnifiedOutcome.UNCERTAIN))
    low = count(info & (out == UnifiedOutcome.LOW_CONFIDENCE))
    failures = count(info & (out == UnifiedOutcome.FAILURE))
    verified = count(info & collection.verified)
    n_action = count(action)
    action_ok = count(action & (out == UnifiedOutcome.CONFIRMED))
    amb = count(ambiguous)
    path_sum = np.bincount(target[has_target], weights=path_len[has_target], minlength=n_nodes)
    metrics: dict[str, NodeMetrics] = {}
    for code in np.flatnonzero((interactions > 0) | (landings > 0)):
        metrics[collection.node_names[code]] = NodeMetrics(
            node_id=collection.node_names[code],
            interactions=int(interactions[code]),
            landings=int(landings[code]),
            n_info=int(n_info[code]),
            confirmed=int(confirmed[code]),
            uncertain=int(uncertain[code]),
            low_confidence=int(low[code]),
            failures=int(failures[code]),
            verified=int(verified[code]),
            n_action=int(n_action[code]),
            action_success=int(action_ok[code]),
            ambiguous=int(amb[code]),
            mean_path_length=float(path_sum[code] / interactions[code]) if interactions[code] else 0.0,
        )
    collection.node_metrics = metrics
    edges: dict[tuple[str, str, str], list[int]] = {}
    for row, keys in enumerate(collection.path_edges):
        if not keys:
            continue
        o = int(out[row])
        is_info, is_action = bool(info[row]), bool(action[row])
        for key in keys:
            c = edges.setdefault(key, [0] * 8)
            c[0] += 1
            if is_info:
                c[1] += 1
                c[2] += o == UnifiedOutcome.CONFIRMED
                c[3] += o == UnifiedOutcome.UNCERTAIN
                c[4] += o in (UnifiedOutcome.LOW_CONFIDENCE, UnifiedOutcome.FAILURE)
                c[5] += bool(collection.verified[row])
            if is_action:
                c[6] += o == UnifiedOutcome.CONFIRMED
                c[7] += o == UnifiedOutcome.FAILURE
    collection.edge_metrics = {
        key: EdgeMetrics(key, c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]) for key, c in edges.items()
    }


# --- episodic memory, read-only (ARG §4.1–4.2) ------------------------------------------------------


def episodes_for(*, project: Any, window_start: datetime, window_end: datetime) -> list[Any]:
    """The project's episodic entries written in the window (empty when memory is unavailable)."""
    try:
        return _episodes_read(project=project, window_start=window_start, window_end=window_end)
    except Exception:  # the memory tables may not be migrated yet: the loop goes on without episodes
        logger.warning("episodic memory unavailable to the offline loop", exc_info=True)
        return []


def _episodes_read(*, project: Any, window_start: datetime, window_end: datetime) -> list[Any]:
    """Episodic items written in ``[window_start, window_end)`` as ``Episode`` values. The outcome is the
    unified outcome of the request that wrote the item when there is one; an API write counts as
    CONFIRMED when it carried a strong signal, NONE otherwise."""
    episodes = list(
        EpisodicMemory.objects.filter(
            project=project, created_at__gte=window_start, created_at__lt=window_end
        )
        .order_by("id")
        .defer("embedding")
    )
    logs = {
        log.request_id: log
        for log in InferenceLog.objects.filter(
            project=project, request_id__in=[e.request_id for e in episodes if e.request_id]
        ).only("request_id", "outcome_kind", "outcome_status", "silent_outcome", "role_key", "context")
    }
    out = []
    for e in episodes:
        log = logs.get(e.request_id)
        if log is not None:
            outcome = unified_outcome(
                outcome_kind=log.outcome_kind,
                outcome_status=log.outcome_status,
                silent=bool(log.silent_outcome),
            )
            segment = f"{log.role_key}|{(log.context or {}).get('channel') or ''}"
        else:
            outcome = UnifiedOutcome.CONFIRMED if e.signal == "strong" else UnifiedOutcome.NONE
            segment = f"{e.provenance.get('role') or ''}|{e.provenance.get('channel') or ''}"
        out.append(
            Episode(
                episode_id=str(e.pk),
                text=e.text,
                label_ids=tuple(e.label_ids or ()),
                info_type=e.info_type,
                scope=e.scope,
                source=e.user_id or e.session_id or "anonymous",
                segment=segment,
                outcome=outcome,
                flags=tuple(e.flags or ()),
                info_unit=str(e.info_unit_id) if e.info_unit_id else None,
                created_at=e.created_at,
            )
        )
    return out
