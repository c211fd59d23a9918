"""Reads of the memory app: the memory browser's lists, InfoUnit pages, the UNSURE staging list, the
alias-safe MemoryRead, and the offline loop's door into episodic memory."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from django.db.models import Count, Max, Q, QuerySet

from arg_platform.errors import NotFound
from projects.models import Project

from .canonical import canonicalize
from .comparator import DEFAULT_PARAMS, RegistryParams
from .comparator.identity import identity_gap
from .distinctions import Distinction, Distinctions, suggestions
from .edges import Hit, expand, graph_rerank
from .merge_bar import ReviewedPair
from .models import (
    EpisodicMemory,
    InfoEvidence,
    InfoKey,
    InfoUnit,
    InfoUnitEvent,
    MergeBar,
    RegistryAttempt,
    Scope,
    Signal,
    TermDistinction,
)

REVIEWED_PAIR_LIMIT = 300  # most recent resolved UNSURE attempts the merge-bar curve reads
READ_CANDIDATE_LIMIT = 5000  # most recent items of the caller's scopes a vector read scans
LABEL_BOOST = 0.1  # a hit sharing a validated label with the request


def _flag_filter(flag: str) -> Q:
    # JSON list membership that works on SQLite and Postgres alike: the quoted flag in the JSON text
    return Q(flags__icontains=f'"{flag}"')


def memory_list(
    *,
    project: Project,
    user_id: str = "",
    org_id: str = "",
    scope: str = "",
    info_type: str = "",
    label_id: str = "",
    flag: str = "",
    session_id: str = "",
    search: str = "",
) -> QuerySet[EpisodicMemory]:
    """Episodic items of a project, newest first, filtered like the memory browser and the API list."""
    items = EpisodicMemory.objects.filter(project=project).select_related("info_unit")
    if user_id:
        items = items.filter(user_id=user_id)
    if org_id:
        items = items.filter(org_id=org_id)
    if scope:
        items = items.filter(scope=scope)
    if info_type:
        items = items.filter(info_type=info_type)
    if label_id:
        items = items.filter(label_ids__icontains=f'"{label_id}"')
    if flag:
        items = items.filter(_flag_filter(flag))
    if session_id:
        items = items.filter(session_id=session_id)
    if search:
        items = items.filter(text__icontains=search)
    return items.defer("embedding")


def memory_get(*, project: Project, pk: int) -> EpisodicMemory:
    item = (
        EpisodicMemory.objects.filter(project=project, pk=pk).select_related("info_unit", "corrects").first()
    )
    if item is None:
        raise NotFound(f"memory #{pk} not found")
    return item


def info_unit_list(
    *,
    project: Project,
    info_type: str = "",
    scope: str = "",
    label_id: str = "",
    subject: str = "",
    status: str = "",
) -> QuerySet[InfoUnit]:
    units = InfoUnit.objects.filter(project=project).select_related("info_key")
    if info_type:
        units = units.filter(info_type=info_type)
    if scope:
        units = units.filter(scope=scope)
    if label_id:
        units = units.filter(info_key__label_ids__icontains=f'"{label_id}"')
    if subject:
        units = units.filter(subject=subject)
    if status:
        units = units.filter(status=status)
    return units.defer("embedding")


def info_unit_get(*, project: Project, pk: int) -> InfoUnit:
    unit = InfoUnit.objects.filter(project=project, pk=pk).select_related("info_key").first()
    if unit is None:
        raise NotFound(f"InfoUnit #{pk} not found")
    return unit


def info_evidence_get(*, project: Project, pk: int, unit: InfoUnit | None = None) -> InfoEvidence:
    """One piece of evidence of an InfoUnit of ``project`` — of ``unit`` when given (``NotFound`` when it
    belongs elsewhere or is gone)."""
    evidence = InfoEvidence.objects.filter(unit__project=project, pk=pk)
    if unit is not None:
        evidence = evidence.filter(unit=unit)
    found = evidence.first()
    if found is None:
        raise NotFound(f"evidence #{pk} not found" + (f" on InfoUnit #{unit.pk}" if unit is not None else ""))
    return found


def info_unit_founding_episodes(*, unit: InfoUnit) -> set[int]:
    """The episodic memories that founded ``unit`` (its CREATED event names them): the unit *is* their
    fact, so their evidence cannot be detached."""
    return {
        d["episode"]
        for d in InfoUnitEvent.objects.filter(unit=unit, kind=InfoUnitEvent.Kind.CREATED).values_list(
            "details", flat=True
        )
        if isinstance(d, dict) and isinstance(d.get("episode"), int)
    }


def info_key_list(*, project: Project) -> QuerySet[InfoKey]:
    return InfoKey.objects.filter(project=project)


def registry_attempt_list(*, project: Project, decision: str = "") -> QuerySet[RegistryAttempt]:
    attempts = RegistryAttempt.objects.filter(project=project).select_related("info_key", "episode", "unit")
    return attempts.filter(decision=decision) if decision else attempts


def registry_unsure_list(*, project: Project) -> QuerySet[RegistryAttempt]:
    """The Info Registry's UNSURE staging list (§2.10.5.7.2): attempts waiting for a reviewer, oldest
    first, for the review queue.

    Each item is a ``RegistryAttempt`` with ``review_status == "PENDING"``; the fields a reviewer needs:
    ``episode.text`` (the new, PII-scrubbed fact), ``candidate_unit.canonical_text`` (what it may be the
    same as), ``top_k`` (candidates with cosine and the discriminators' reasons), ``reasons``,
    ``info_key.key`` and ``label_path_current``. Resolve one with
    ``memory.services.registry_unsure_resolve(attempt=…, decision="SAME"|"DIFFERENT", actor=…, reason=…)``.
    """
    return (
        RegistryAttempt.objects.filter(project=project, review_status=RegistryAttempt.Review.PENDING)
        .select_related("episode", "candidate_unit", "info_key")
        .order_by("created_at", "id")
    )


def registry_params(*, project: Project) -> RegistryParams:
    """The Info Registry's parameters for ``project``: the defaults with the project's merge bar
    (``MergeBar``; none set: ``DEFAULT_PARAMS.identity_slack``). Every write and comparison made for
    a project uses these."""
    slack = MergeBar.objects.filter(project=project).values_list("identity_slack", flat=True).first()
    return DEFAULT_PARAMS if slack is None else replace(DEFAULT_PARAMS, identity_slack=slack)


def reviewed_pairs(
    *, project: Project, params: RegistryParams = DEFAULT_PARAMS, limit: int = REVIEWED_PAIR_LIMIT
) -> list[ReviewedPair]:
    """The project's most recent resolved UNSURE attempts whose candidate InfoUnit still exists, each
    with its identity gap (staged fact against the unit's canonical statement, without the labels'
    synonyms) and the reviewer's verdict: the data of the merge-bar curve (``memory.merge_bar``)."""
    attempts = (
        RegistryAttempt.objects.filter(
            project=project,
            review_status__in=(RegistryAttempt.Review.SAME, RegistryAttempt.Review.DIFFERENT),
            candidate_unit__isnull=False,
        )
        .select_related("episode", "candidate_unit")
        .order_by("-resolved_at", "-id")[:limit]
    )
    out = []
    for attempt in attempts:
        unit = attempt.candidate_unit
        assert unit is not None  # filtered above
        staged = canonicalize(attempt.episode.text, info_type=unit.info_type)
        candidate = canonicalize(unit.canonical_statement, info_type=unit.info_type)
        only_staged, only_candidate = identity_gap(staged, candidate, params)
        out.append(
            ReviewedPair(
                gap=len(only_staged) + len(only_candidate),
                same=attempt.review_status == RegistryAttempt.Review.SAME,
            )
        )
    return out


def registry_attempt_get(*, project: Project, pk: int) -> RegistryAttempt:
    attempt = (
        RegistryAttempt.objects.filter(project=project, pk=pk)
        .select_related("episode", "candidate_unit", "info_key", "unit")
        .first()
    )
    if attempt is None:
        raise NotFound(f"registry attempt #{pk} not found")
    return attempt


def term_hints_annotate(attempts: Iterable[RegistryAttempt]) -> None:
    """Give each staged attempt ``unit_words`` / ``fact_words``: the words its candidate unit and its
    fact each have and the other lacks (``memory.distinctions.suggestions``), the hints a "different
    fact" form offers for the terms that differ (the staging list and the review queue's merge list)."""
    for attempt in attempts:
        statement = attempt.candidate_unit.canonical_statement if attempt.candidate_unit else ""
        hints = suggestions(statement, attempt.episode.text)
        attempt.unit_words, attempt.fact_words = hints


def term_distinction_list(*, project: Project) -> QuerySet[TermDistinction]:
    """The project's term distinctions, alphabetical, with who taught them and from which attempt."""
    return TermDistinction.objects.filter(project=project).select_related("created_by", "attempt")


def term_distinction_get(*, project: Project, pk: int) -> TermDistinction:
    distinction = TermDistinction.objects.filter(project=project, pk=pk).first()
    if distinction is None:
        raise NotFound(f"term distinction #{pk} not found")
    return distinction


_distinctions_cache: dict[int, tuple[tuple[Any, ...], Distinctions]] = {}


def term_distinctions_for(*, project_id: int) -> Distinctions:
    """What the registry applies to a write of the project (``memory.distinctions``), oldest first.

    Kept per process and checked on every call against one aggregate query (count, newest id, newest
    creation time: any create or delete changes it), so a write pays that query, not the loading of a
    project's thousands of rules."""
    stamp = tuple(
        TermDistinction.objects.filter(project_id=project_id)
        .aggregate(n=Count("id"), top=Max("id"), at=Max("created_at"))
        .values()
    )
    cached = _distinctions_cache.get(project_id)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    rules = Distinctions(
        Distinction(first, second, pk)
        for pk, first, second in TermDistinction.objects.filter(project_id=project_id)
        .order_by("pk")
        .values_list("pk", "first", "second")
    )
    _distinctions_cache[project_id] = (stamp, rules)
    return rules


def term_distinctions_cache_clear() -> None:
    _distinctions_cache.clear()


# --- MemoryRead ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReadItem:
    """One memory a read returns, with where its node lives on now."""

    episode: EpisodicMemory
    hit: Hit
    node_ids_current: tuple[str, ...] = ()
    redirected: bool = False  # the original node was split or merged: follow node_ids_current


@dataclass(frozen=True)
class MemoryReadResult:
    items: tuple[ReadItem, ...] = ()
    scanned: int = 0
    redirects: dict[int, tuple[str, ...]] = field(default_factory=dict)  # episode → current nodes (changed)


def scope_filter(*, user_id: str = "", org_id: str = "", scopes: Iterable[str] | None = None) -> Q:
    """Which items a caller may read: its own USER items, its org's ORG items, GLOBAL items — limited to
    ``scopes`` (None: all three)."""
    allowed = set(scopes) if scopes is not None else set(Scope.values)
    q = Q(pk__in=[])
    if Scope.USER in allowed and user_id:
        q |= Q(scope=Scope.USER, subject=user_id)
    if Scope.ORG in allowed and org_id:
        q |= Q(scope=Scope.ORG, subject=org_id)
    if Scope.GLOBAL in allowed:
        q |= Q(scope=Scope.GLOBAL)
    return q


def memory_read(
    *,
    project: Project,
    query: np.ndarray | None,
    user_id: str = "",
    org_id: str = "",
    scopes: Iterable[str] | None = None,
    everything: bool = False,
    scope: str = "",
    label_ids: Sequence[str] = (),
    info_type: str = "",
    k: int = 5,
    graph_boost: float = 0.3,
    max_hops: int = 1,
    expansion_k: int = 2,
    resolve_alias: Callable[[str], Iterable[str]] | None = None,
) -> MemoryReadResult:
    """Alias-safe MemoryRead (§4.3): the caller's memories most relevant to ``query`` (a unit vector;
    None = most recent), vector hits graph-reranked along memory edges, plus multi-hop expansion from the best
    hit (at most ``expansion_k`` more items), each item's node followed through the split redirection
    table (``resolve_alias(node_id)`` → current node ids, e.g. a snapshot's ``resolve_alias``).
    ``redirects`` lists the items whose current nodes changed, for
    ``memory.services.memory_redirect_soft_update``.
    """
    items = EpisodicMemory.objects.filter(project=project)
    if not everything:  # ``everything``: a curator browsing the whole project
        items = items.filter(scope_filter(user_id=user_id, org_id=org_id, scopes=scopes))
    if scope:
        items = items.filter(scope=scope)
    if info_type:
        items = items.filter(info_type=info_type)
    rows = list(items.order_by("-id").values_list("pk", "embedding", "label_ids")[:READ_CANDIDATE_LIMIT])
    if not rows:
        return MemoryReadResult()
    ids = [r[0] for r in rows]
    wanted = set(label_ids)
    if query is None:
        ranked = [(pk, 1.0 - i / max(len(rows), 1)) for i, pk in enumerate(ids)][: k * 3]
    else:
        matrix = np.stack(
            [
                np.frombuffer(bytes(r[1]), dtype=np.float32) if r[1] else np.zeros(query.shape[0], np.float32)
                for r in rows
            ]
        )
        scores = matrix @ np.asarray(query, dtype=np.float32)
        if wanted:
            scores = scores + LABEL_BOOST * np.array(
                [bool(wanted & set(r[2] or [])) for r in rows], dtype=np.float32
            )
        order = np.argsort(-scores)[: k * 3]
        ranked = [(ids[int(i)], float(scores[int(i)])) for i in order]
    hits = graph_rerank(ranked, boost=graph_boost, k=k)
    if max_hops > 0 and hits:
        taken = {h.episode_id for h in hits}
        extra = expand([hits[0].episode_id], query=query, max_hops=max_hops, k=k, allowed=set(ids) - taken)
        hits = hits + extra[:expansion_k]
    episodes = EpisodicMemory.objects.defer("embedding").in_bulk([h.episode_id for h in hits])
    out: list[ReadItem] = []
    redirects: dict[int, tuple[str, ...]] = {}
    for hit in hits:
        episode = episodes.get(hit.episode_id)
        if episode is None:
            continue
        current: tuple[str, ...] = tuple(
            episode.node_ids_current or ([episode.node_id] if episode.node_id else [])
        )
        redirected = False
        if episode.node_id and resolve_alias is not None:
            resolved = tuple(resolve_alias(episode.node_id))
            redirected = resolved != (episode.node_id,)
            if resolved != current:
                redirects[episode.pk] = resolved
            current = resolved
        out.append(ReadItem(episode=episode, hit=hit, node_ids_current=current, redirected=redirected))
    return MemoryReadResult(items=tuple(out), scanned=len(rows), redirects=redirects)


@dataclass(frozen=True)
class UsageEvent:
    """One of a caller's own memories as evidence of use of a node (the input of ``S_memory``)."""

    node_id: str  # where the memory's node lives on now (after splits and merges)
    relevance: float  # cosine of the memory's statement with the request, in [0, 1]
    strong: bool  # an explicit, reliable confirmation (``Signal.STRONG``)
    occurred_at: Any  # datetime


def memory_usage_events(
    *,
    project_id: int,
    user_id: str,
    query: np.ndarray,
    min_relevance: float,
    limit: int,
    resolve_alias: Callable[[str], Iterable[str]] | None = None,
) -> list[UsageEvent]:
    """The caller's own (USER scope) memories attached to a node and relevant to ``query`` (a unit
    vector): at most the ``limit`` most recent, each counted once per node it lives on now — the
    memory's node followed through the redirection table by ``resolve_alias`` (a snapshot's) when
    given, else its last soft-updated ``node_ids_current``."""
    if not user_id:
        return []
    rows = list(
        EpisodicMemory.objects.filter(project_id=project_id, scope=Scope.USER, subject=user_id)
        .exclude(node_id="")
        .exclude(embedding=None)
        .order_by("-id")
        .values_list("embedding", "node_id", "node_ids_current", "signal", "occurred_at")[:limit]
    )
    events: list[UsageEvent] = []
    for blob, node_id, current, signal, occurred_at in rows:
        vector = np.frombuffer(bytes(blob or b""), dtype=np.float32)
        if vector.shape != query.shape:
            continue
        relevance = float(vector @ query)
        if relevance < min_relevance:
            continue
        nodes = tuple(resolve_alias(node_id)) if resolve_alias is not None else (current or [node_id])
        for node in nodes:
            events.append(UsageEvent(node, relevance, signal == Signal.STRONG, occurred_at))
    return events


@dataclass(frozen=True)
class ConsolidatedUnit:
    """A semantic (GLOBAL) InfoUnit written or handled by offline consolidation
    (``memory.services.consolidation``), with the support its latest CONSOLIDATED history line records:
    ``subjects`` (distinct users or orgs), ``sessions``, ``episodes``, ``strong`` and ``weak`` signals,
    ``segments`` (role|channel → episodes). ``text`` is the unit's founding text (PII-free by
    construction; readers check again)."""

    unit_id: int
    text: str
    info_type: str
    label_ids: tuple[str, ...]
    subjects: int
    sessions: int
    episodes: int
    strong: int
    weak: int
    segments: dict[str, int]


def consolidated_units(*, project: Project | int) -> list[ConsolidatedUnit]:
    """The project's ACTIVE GLOBAL InfoUnits that offline consolidation wrote or handled, by id."""
    project_id = project if isinstance(project, int) else project.pk
    latest: dict[int, dict[str, Any]] = {}
    for unit_id, details in (
        InfoUnitEvent.objects.filter(
            unit__project_id=project_id,
            unit__scope=Scope.GLOBAL,
            unit__status=InfoUnit.Status.ACTIVE,
            kind=InfoUnitEvent.Kind.CONSOLIDATED,
        )
        .order_by("pk")
        .values_list("unit_id", "details")
    ):
        latest[unit_id] = details or {}
    units = InfoUnit.objects.filter(pk__in=list(latest)).select_related("info_key").order_by("pk")
    return [
        ConsolidatedUnit(
            unit_id=u.pk,
            text=u.founding_text,
            info_type=u.info_type,
            label_ids=tuple(u.info_key.label_ids or ()),
            subjects=int(latest[u.pk].get("subjects", 0)),
            sessions=int(latest[u.pk].get("sessions", 0)),
            episodes=int(latest[u.pk].get("episodes", 0)),
            strong=int(latest[u.pk].get("strong", 0)),
            weak=int(latest[u.pk].get("weak", 0)),
            segments={str(k): int(v) for k, v in (latest[u.pk].get("segments") or {}).items()},
        )
        for u in units
    ]
