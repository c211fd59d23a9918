"""The per-release runtime: everything the online steps precompute from one frozen release snapshot.

A ``ReleaseRuntime`` is built once per release (``ReleaseRuntime.build``) and shared by every request
served from that release (``runtime_for`` caches it by project, release id and checksum). Like the
snapshot it is read-only: nothing in a request changes it, so the graph — and the taxonomy, the
policies and the indexes — stay fixed during the request.

A release published with a fine-tuned encoder (``inference.learning.encoder_finetune``) carries its checksum:
``encoder`` is then that encoder — shared per process by checksum, loaded lazily once — and the
prompt of every request is embedded once with it (the release's label and node vectors were computed
with it at publication). Otherwise ``encoder`` is the platform embedder.

To add a precomputed part for another step, add a field (with a default when it is optional) and
compute it in ``build`` from ``snapshot.documents`` or the snapshot's arrays.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
from django.urls import get_resolver

from arg_platform.embedder import get_embedder
from arg_platform.metrics import RATE_LIMITED, STEP_DURATION
from arg_platform.vocabulary import NodeType
from inference.actions.registry import default_registry
from inference.contracts import PolicyConstraints
from inference.learning.encoder_finetune import encoder_for_documents
from inference.steps.envelope import language_detector_warm_up, normalized_for_matching
from inference.steps.graph_index import graph_runtime_for
from inference.steps.lexical import LexicalIndex
from inference.steps.policy_manager import (
    DEFAULT_OFF_DOMAIN_MARKERS,
    DEFAULT_REFOCUS,
    DEFAULT_REFUSAL,
    CompiledPolicy,
    ScopeGuard,
    compile_policy,
    term_regex,
)
from inference.steps.products import declared_products
from inference.steps.weaver import weaver_index_for
from memory.lexicon import lexicon
from memory.pii import redact_text
from ontology.graph_arrays import NODE_TYPE_CODE
from ontology.graph_snapshot import GraphSnapshot
from ontology.models import Release
from ontology.snapshot_registry import registry
from projects.models import Project
from taxonomy.term_guard import routing_term_texts
from taxonomy.validator import LabelRecord, TaxonomyView, pair_key

RUNTIME_CACHE_SIZE = 32

# The policy of a release that defines no roles: no constraints, no content rules.
UNGOVERNED_POLICY = CompiledPolicy(
    key="",
    constraints=PolicyConstraints(),
    blocked_terms=None,
    blocked_patterns=(),
    sensitive_topics=(),
    scope_statement="",
    refusal_message=DEFAULT_REFUSAL,
    refocus_message=DEFAULT_REFOCUS,
)


@dataclass(frozen=True)
class RoleBinding:
    """A policy role of the release: which policy governs it and its default context typology."""

    key: str
    policy: str
    default_typology: str | None


@dataclass(frozen=True, eq=False)
class ReleaseRuntime:
    """The online steps' precomputed view of one release."""

    project_id: int
    release_id: int | None
    version: int
    checksum: str
    taxonomy: TaxonomyView
    labels: Mapping[str, Mapping[str, Any]]  # LabelID → pack-shape label
    clusters: Mapping[str, Mapping[str, Any]]  # key → pack-shape cluster
    roles: Mapping[str, RoleBinding]
    typologies: Mapping[str, Mapping[str, Any]]  # key → pack-shape typology
    default_typology: str | None
    policies: Mapping[str, CompiledPolicy]
    scope_guard: ScopeGuard
    lexical: LexicalIndex
    # the release's text encoder: its fine-tuned MiniLM (loaded on first use) or the platform embedder;
    # every vector of a request (label top-K, classifier, S_sem, Info retrieval) comes from it
    encoder: Any = None
    products: frozenset[str] = frozenset()  # the product keys the release's nodes declare

    @classmethod
    def build(
        cls, snapshot: GraphSnapshot, *, off_domain_markers: Iterable[str] = DEFAULT_OFF_DOMAIN_MARKERS
    ) -> ReleaseRuntime:
        """Precompute everything from the snapshot's documents (no database, no network)."""
        documents = snapshot.documents
        labels = {label["id"]: label for label in documents.get("labels", [])}
        clusters = {cluster["key"]: cluster for cluster in documents.get("clusters", [])}
        view = taxonomy_view_from_documents(documents)
        policies = {p["key"]: compile_policy(p, view) for p in documents.get("policies", [])}
        roles = {
            r["key"]: RoleBinding(r["key"], r["policy"], r.get("default_typology"))
            for r in documents.get("roles", [])
        }
        typologies = {t["key"]: t for t in documents.get("typologies", [])}
        default_typology = next((k for k, t in sorted(typologies.items()) if t.get("is_default")), None)
        entries = documents.get("label_index", {}).get("entries", [])
        indexed = {e["label_id"]: e["status"] for e in entries}
        domain_texts = [
            *(text for lid in indexed for text in _label_domain_texts(labels[lid])),
            *(f"{c.get('name', '')} {c.get('description', '')}" for c in clusters.values()),
            *(p.get("scope_statement") or "" for p in documents.get("policies", [])),
        ]
        language_detector_warm_up()
        return cls(
            project_id=snapshot.project_id,
            release_id=snapshot.release_id,
            version=snapshot.version,
            checksum=snapshot.checksum,
            taxonomy=view,
            labels=MappingProxyType(labels),
            clusters=MappingProxyType(clusters),
            roles=MappingProxyType(roles),
            typologies=MappingProxyType(typologies),
            default_typology=default_typology,
            policies=MappingProxyType(policies),
            scope_guard=ScopeGuard.build(
                domain_texts, _markers_not_in_examples(snapshot, labels, off_domain_markers)
            ),
            lexical=LexicalIndex.build(labels, indexed),
            encoder=encoder_for_documents(documents),
            products=declared_products(snapshot.extras),
        )

    def policy(self, policy_key: str | None) -> CompiledPolicy:
        """A policy by key; no key (a release without roles) means the ungoverned policy."""
        if not policy_key:
            return UNGOVERNED_POLICY
        return self.policies[policy_key]

    def policy_for_role(self, role_key: str | None) -> CompiledPolicy:
        """The compiled policy of a role (the envelope has already checked that the role exists)."""
        if role_key is None:
            if self.roles:
                raise KeyError("a release with roles needs a role to pick a policy")
            return UNGOVERNED_POLICY
        return self.policies[self.roles[role_key].policy]


def _markers_not_in_examples(
    snapshot: GraphSnapshot, labels: Mapping[str, Mapping[str, Any]], markers: Iterable[str]
) -> list[str]:
    """The off-domain markers minus those the validated examples of in-scope labels use.

    A curator who validated "did my vacation get approved" as an example of a label says "vacation"
    is this domain's business, so the scope guard must not refocus it. Labels whose nodes are all
    OutOfScope nodes (a pack's "Out of scope" examples) teach the opposite and are left out.
    """
    out_of_scope = NODE_TYPE_CODE[NodeType.OUT_OF_SCOPE]
    routed_out = {
        label_id
        for label_id, positions in snapshot.label_nodes.items()
        if len(positions) and bool(np.all(snapshot.node_type[positions] == out_of_scope))
    }
    corpus = "\n".join(
        normalized_for_matching(example)
        for label_id, label in labels.items()
        if label.get("status") == "ACTIVE" and label_id not in routed_out
        for example in label.get("examples", [])
    )
    kept = []
    for marker in markers:
        pattern = term_regex([marker])
        if pattern is None or not corpus or pattern.search(corpus) is None:
            kept.append(marker)
    return kept


def _label_domain_texts(label: Mapping[str, Any]) -> list[str]:
    return [label.get("name", ""), label.get("description", ""), *label.get("synonyms", [])]


def taxonomy_view_from_documents(documents: Mapping[str, Any]) -> TaxonomyView:
    """The validator's frozen taxonomy view of a release's label and cluster documents."""
    records = {
        label["id"]: LabelRecord(
            label_id=label["id"],
            name=label["name"],
            cluster=label["cluster"],
            parent=label.get("parent"),
            status=label["status"],
            description=label.get("description", ""),
            synonyms=tuple(label.get("synonyms", [])),
            examples=tuple(label.get("examples", [])),
        )
        for label in documents.get("labels", [])
    }
    return TaxonomyView(
        clusters=frozenset(c["key"] for c in documents.get("clusters", [])),
        labels=MappingProxyType(records),
        incompatibilities=frozenset(pair_key(*i["labels"]) for i in documents.get("incompatibilities", [])),
    )


# --- cache -----------------------------------------------------------------------------------------

_cache: OrderedDict[tuple[int, int | None, str], ReleaseRuntime] = OrderedDict()
_lock = threading.Lock()


def runtime_for(snapshot: GraphSnapshot) -> ReleaseRuntime:
    """The runtime of a snapshot's release, built once (when the snapshot registry loads the snapshot)
    and kept for the next requests.

    Keyed by project, release id and checksum, so a rolled-back release is served from the cache
    again and a rebuilt database that reuses a release id never gets a stale runtime. The least
    recently used runtime is dropped beyond ``RUNTIME_CACHE_SIZE`` releases.
    """
    key = (snapshot.project_id, snapshot.release_id, snapshot.checksum)
    with _lock:  # uncontended almost always; a build (rare) holds it for a fraction of a second
        runtime = _cache.get(key)
        if runtime is None:
            runtime = ReleaseRuntime.build(snapshot)
            _cache[key] = runtime
            while len(_cache) > RUNTIME_CACHE_SIZE:
                _cache.popitem(last=False)
        else:
            _cache.move_to_end(key)
        return runtime


def runtime_cache_clear() -> None:
    with _lock:
        _cache.clear()


# --- warm start ------------------------------------------------------------------------------------

# A prompt embedded once by every encoder at warm-up: the first forward pass allocates and compiles
# what every later pass reuses (the ONNX session's buffers, torch's kernels).
WARM_UP_PROMPT = "warm-up: how do I reset my password?"


def warm_up_steps() -> list[tuple[str, Any]]:
    """What a serving process loads before it answers its first request, in order, as ``(name, step)``.

    Measured on the demo pack (the first request of a fresh process paid 16 s without any of these and
    0.5 s with only the encoder and the release runtimes; ``manage.py bench_warm_start``), each of these
    would otherwise be paid by the first request that needs it:

    - ``urls``: importing the URL configuration (every app's views and serializers);
    - ``embedder``: loading the platform encoder and its ONNX session, then one forward pass;
    - ``releases``: every active release's snapshot and ``ReleaseRuntime`` (taxonomy view, compiled
      policies, scope guard, lexical index, language detector; ``registry.refresh``), its graph
      runtime and weaver index (classifier), and its fine-tuned encoder when it has one (one pass);
    - ``actions``: the action handler modules (``ACTION_HANDLER_MODULES``) and the pipeline steps it
      imports on first use (traversal, scoring, fallback, memory signal);
    - ``terms:<project>:<n>``: the routing terms (label names, synonyms, examples) of every live
      project, in chunks, into the encoder's cache — what a curator's first checked write or label
      preview would otherwise embed inside its request;
    - ``pii``: the first-name table and patterns the log book's PII scrubber reads for every prompt;
    - ``metrics``: this process's Prometheus sample files (a zero child of the step-duration histogram
      per pipeline step and of the rate-limit counter: zero is what this process has observed);
    - ``lexicon``: the WordNet lexicon of the memory registry's comparator (a memory write).
    """

    def urls() -> None:
        get_resolver().url_patterns  # noqa: B018 — reading the attribute imports the URL modules

    def embedder() -> None:
        get_embedder().embed_one(WARM_UP_PROMPT)

    def releases() -> None:
        registry.refresh()
        projects = Release.objects.filter(is_active=True, project__archived_at__isnull=True).values_list(
            "project_id", flat=True
        )
        for project_id in projects:
            snapshot = registry.pin(project_id)
            if snapshot is None:
                continue
            runtime = runtime_for(snapshot)
            graph_runtime_for(snapshot)
            weaver_index_for(snapshot, runtime)
            if runtime.encoder is not None:
                runtime.encoder.embed_one(WARM_UP_PROMPT)

    def actions() -> None:
        import inference.steps.fallback
        import inference.steps.memory_signal
        import inference.steps.scoring
        import inference.steps.traversal  # noqa: F401 — the steps the pipeline imports on first use

        default_registry().names()  # imports the handler modules (their decorators register)

    def pii() -> None:
        redact_text("Warm-up: Mary Smith, mary@example.invalid, +1 555 0100, 4111 1111 1111 1111")

    def metrics() -> None:
        for step in (
            "total",
            "envelope",
            "policy",
            "embed",
            "lexical",
            "weaver",
            "landing",
            "traversal",
            "outcome",
        ):
            STEP_DURATION.labels(step)
        RATE_LIMITED.labels("infer")

    return [
        ("urls", urls),
        ("embedder", embedder),
        ("releases", releases),
        *_term_steps(),
        ("actions", actions),
        ("pii", pii),
        ("metrics", metrics),
        ("lexicon", lexicon),
    ]


# Routing terms embedded per warm-up step: each step is followed by a heartbeat to the master, so even
# a project with tens of thousands of terms never holds a worker silent for long.
TERM_WARM_UP_CHUNK = 2000


def _term_steps() -> list[tuple[str, Any]]:
    """``terms:<project>:<n>`` steps: the routing terms of every live project, embedded in chunks into
    the encoder's cache (``taxonomy.term_guard.routing_term_texts``), so a curator's first checked write
    or label preview does not embed the whole taxonomy inside its request."""
    try:
        projects = list(Project.objects.filter(archived_at__isnull=True).order_by("pk"))
    except Exception as exc:  # noqa: BLE001 — warm-up never kills a worker: a failed step, named by /healthz

        def unavailable(exc: Exception = exc) -> None:
            raise exc

        return [("terms", unavailable)]
    steps: list[tuple[str, Any]] = []
    for project in projects:
        texts = routing_term_texts(project)
        for n, start in enumerate(range(0, len(texts), TERM_WARM_UP_CHUNK)):
            chunk = texts[start : start + TERM_WARM_UP_CHUNK]
            steps.append((f"terms:{project.slug}:{n}", lambda chunk=chunk: get_embedder().embed(chunk)))
    return steps
