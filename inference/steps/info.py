"""Step 9 — ARG-Info (ARG v1 §2.9): a grounded answer from the target's neighbourhood, C_info, active
check and an outcome status that silence never confirms.

``answer_info`` runs, for an Info-like target (Info, InfoStable, FAQ, Shortcut, Decision):

1. **context acquisition** (§2.9.1) — the target chunk and its one-hop neighbours over ELABORATES,
   RELATED_TO and LEADS_TO (both directions), policy-gated (type, labels, status), content types only,
   ranked by cosine to the prompt and cut to the typology's ``complexity_budget``;
2. **combined retrieval** (§2.9.2) — the chunks are split into sentences, embedded (the embedder caches
   them by content hash) and ranked by cosine to the prompt, the target's sentences with a bonus;
3. **answer** (§2.9.3) — extractive: the best sentences, target first, each cited node with the exact
   sentences used. With ``settings.LLM_URL`` set, an OpenAI-compatible chat completion writes the answer
   from the same context ("answer only from the context, cite node ids"); any error, or an answer citing
   no context node, falls back to the extractive one;
4. **C_info** (§2.9.4) — see ``InfoParams``;
5. **active check** (§2.9.5) — "Do you mean X or Y?" on VECTOR_AMBIGUITY, "Did this help?" on low or
   mid C_info, and a deterministic sample of the rest (hash of the request id < ``sample_rate``);
6. **outcome status** (§2.9.7) — INFO_UNCERTAIN_SUCCESS when C_info ≥ 0.45, INFO_LOW_CONFIDENCE
   otherwise; only explicit feedback later confirms (``status_after_feedback``).

A MemoryRead target returns a MEMORY outcome with the node's chunk (the memory layer fills real reads).
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from django.conf import settings

from arg_platform.llm import LlmError, chat_complete
from inference.contracts import (
    ActiveCheck,
    Citation,
    Envelope,
    Flag,
    InfoStatus,
    Outcome,
    OutcomeKind,
    PolicyDecision,
    PolicyState,
    Route,
    WeaverResult,
)
from inference.steps.clarification import Option, offerable_options, options_details
from ontology.graph_snapshot import GraphSnapshot, NodeView

logger = logging.getLogger(__name__)

ACTION_TYPES = frozenset({"Action", "DirectAction", "MemoryWrite"})


@dataclass(frozen=True)
class InfoParams:
    """The knobs of step 9, with the weights of ``C_info``.

    ``C_info = w_lexical·lexical + w_semantic·semantic + w_taxonomy·taxonomy + w_policy·policy
    + w_fallback·fallback``, each component in [0, 1] and the weights summing to 1:

    * *lexical* — the best coverage of one of the L_final labels' name or synonyms by the prompt's
      tokens (1 when the prompt says "invoice" and the label has the synonym "invoice"); the names and
      synonyms of the label's ancestors count with ``ancestor_weight``;
    * *semantic* — the mean of cos(prompt, target node vector) and the best cos(prompt, used sentence),
      mapped linearly from [``cos_floor``, ``cos_ceiling``] to [0, 1];
    * *taxonomy* — the fraction of path nodes attached to an L_final label or to its cluster;
    * *policy* — 1 under ALLOW, ``refocus_factor`` / ``restrict_factor`` under ALLOW_WITH_REFOCUS /
      RESTRICT, minus ``policy_reason_penalty`` per policy reason (a sensitive topic, …);
    * *fallback* — the distance from the OOD / fallback path: the smallest factor of the weaver's flags
      (``flag_factors``), 1 without flags. An OOD flag also caps C_info at ``ood_cap``.
    """

    w_lexical: float = 0.25
    w_semantic: float = 0.40
    w_taxonomy: float = 0.15
    w_policy: float = 0.10
    w_fallback: float = 0.10
    cos_floor: float = 0.10
    cos_ceiling: float = 0.70
    refocus_factor: float = 0.6
    restrict_factor: float = 0.3
    policy_reason_penalty: float = 0.1
    flag_factors: tuple[tuple[str, float], ...] = (
        (Flag.OOD, 0.0),
        (Flag.ABSTAIN_RECOMMENDED, 0.2),
        (Flag.NEW_INTENT_CANDIDATE, 0.4),
        (Flag.UNKNOWN_LABEL_CANDIDATE, 0.5),
        (Flag.LOW_MARGIN, 0.7),
        (Flag.VECTOR_AMBIGUITY, 0.7),
        (Flag.MISSING_LABEL_CANDIDATE, 0.8),
    )
    ood_cap: float = 0.30
    # active check and outcome status (§2.9.5, §2.9.7)
    low_threshold: float = 0.45
    mid_threshold: float = 0.70
    # context and retrieval (§2.9.1–2)
    context_edge_types: tuple[str, ...] = ("ELABORATES", "RELATED_TO", "LEADS_TO")
    context_node_types: frozenset[str] = frozenset({"Info", "InfoStable", "FAQ", "Decision", "Shortcut"})
    max_context_nodes: int = 6
    max_target_sentences: int = 4
    max_neighbour_sentences: int = 2
    min_neighbour_cosine: float = 0.45
    neighbour_margin: float = 0.10
    ancestor_weight: float = 0.75  # a prompt naming only a parent label aligns less
    excerpt_chars: int = 400


DEFAULT_PARAMS = InfoParams()


# --- the per-release text index ----------------------------------------------------------------------

STOPWORDS = frozenset(
    {"a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how", "i", "in"}
    | {"is", "it", "its", "me", "my", "of", "on", "or", "our", "so", "that", "the", "this", "to", "up"}
    | {"was", "we", "what", "when", "where", "which", "who", "why", "will", "with", "you", "your"}
)
ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "approx.", "incl.", "no.")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'“(])")


def tokens(text: str) -> frozenset[str]:
    """Content words, lower-cased, with a light plural stemming (invoices → invoice)."""
    out = set()
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        if word in STOPWORDS:
            continue
        if len(word) > 4 and word.endswith("ies"):
            word = word[:-3] + "y"
        elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out.add(word)
    return frozenset(out)


def sentences(text: str) -> tuple[str, ...]:
    """A chunk split into sentences (abbreviations such as "e.g." do not end one)."""
    pieces = [p.strip() for p in _SENTENCE_END.split(text.strip()) if p.strip()]
    merged: list[str] = []
    for piece in pieces:
        if merged and merged[-1].lower().endswith(ABBREVIATIONS):
            merged[-1] = f"{merged[-1]} {piece}"
        else:
            merged.append(piece)
    return tuple(merged)


SENTENCE_MATRIX = "info_sentence_vectors"
SENTENCE_DOCUMENT = "info_sentences"


def info_sentences_hook(arrays: Any, documents: dict[str, Any], embedder: Any) -> tuple[dict, dict]:
    """``ontology.releases.GRAPH_HOOKS`` entry: the sentence vectors of every content node, computed
    once at publication with the release's encoder and frozen with the release (``counts[i]`` sentences
    of node ``i``, in node order, rows of ``info_sentence_vectors``), so that no serving process embeds
    the release's chunks itself — at 100k nodes that is tens of minutes of CPU per process."""
    from ontology.graph_arrays import NODE_TYPE_NAMES

    wanted = DEFAULT_PARAMS.context_node_types
    counts: list[int] = []
    texts: list[str] = []
    for code, chunk in zip(arrays.node_type.tolist(), arrays.chunks, strict=True):
        found = sentences(chunk) if NODE_TYPE_NAMES[code] in wanted else ()
        counts.append(len(found))
        texts.extend(found)
    vectors = embedder.embed(texts) if texts else np.zeros((0, embedder.dim), dtype=np.float32)
    return {SENTENCE_MATRIX: vectors}, {SENTENCE_DOCUMENT: {"counts": counts, "node_types": sorted(wanted)}}


@dataclass(frozen=True, eq=False)
class InfoIndex:
    """What step 9 precomputes once per release snapshot. Sentence vectors come from the release
    (``info_sentences_hook``) when it carries them, else they are embedded on first use
    (``info_warm_up`` fills them all at once)."""

    label_phrases: Mapping[str, tuple[tuple[frozenset[str], float], ...]]  # LabelID → (tokens, weight)
    label_names: Mapping[str, str]
    active_labels: frozenset[str]
    label_cluster: Mapping[str, str]
    budgets: Mapping[str, int]  # typology key → complexity budget
    default_typology: str | None
    node_sentences: dict[int, tuple[str, ...]] = field(default_factory=dict)
    node_vectors: dict[int, np.ndarray] = field(default_factory=dict)  # position → sentences × dim
    frozen_ptr: np.ndarray | None = None  # the release's sentence rows of node i: ptr[i]:ptr[i + 1]
    frozen_vectors: np.ndarray | None = None

    @classmethod
    def build(cls, snapshot: GraphSnapshot, params: InfoParams = DEFAULT_PARAMS) -> InfoIndex:
        labels = {label["id"]: label for label in snapshot.documents.get("labels", [])}
        typologies = snapshot.documents.get("typologies", [])

        def phrases(label_id: str) -> tuple[tuple[frozenset[str], float], ...]:
            # the label's own name and synonyms, then its ancestors' (a weaker match)
            out, weight, current, seen = [], 1.0, labels.get(label_id), set()
            while current is not None and current["id"] not in seen:
                seen.add(current["id"])
                for text in [current["name"], *current.get("synonyms", [])]:
                    if found := tokens(text):
                        out.append((found, weight))
                weight = params.ancestor_weight
                current = labels.get(current.get("parent") or "")
            return tuple(out)

        frozen_ptr = frozen_vectors = None
        counts = (snapshot.documents.get(SENTENCE_DOCUMENT) or {}).get("counts")
        matrix = snapshot.documents.get(f"matrix:{SENTENCE_MATRIX}")
        if counts is not None and matrix is not None and len(counts) == snapshot.node_count:
            frozen_ptr = np.zeros(len(counts) + 1, dtype=np.int64)
            np.cumsum(counts, out=frozen_ptr[1:])
            if int(frozen_ptr[-1]) == matrix.shape[0]:
                frozen_vectors = np.asarray(matrix, dtype=np.float32)
                frozen_vectors.setflags(write=False)
            else:
                frozen_ptr = None
        return cls(
            label_phrases={label_id: phrases(label_id) for label_id in labels},
            label_names={label_id: label["name"] for label_id, label in labels.items()},
            active_labels=frozenset(
                label_id for label_id, label in labels.items() if label.get("status", "ACTIVE") == "ACTIVE"
            ),
            label_cluster={label_id: label["cluster"] for label_id, label in labels.items()},
            budgets={t["key"]: int(t.get("complexity_budget") or 0) for t in typologies},
            default_typology=next((t["key"] for t in typologies if t.get("is_default")), None),
            frozen_ptr=frozen_ptr,
            frozen_vectors=frozen_vectors,
        )

    def sentences_of(self, snapshot: GraphSnapshot, position: int) -> tuple[str, ...]:
        found = self.node_sentences.get(position)
        if found is None:
            found = self.node_sentences[position] = sentences(snapshot.chunks[position])
        return found

    def vectors_of(self, snapshot: GraphSnapshot, positions: Sequence[int]) -> list[np.ndarray]:
        """The sentence vectors of each node (embedded in one batch for the nodes not seen yet)."""
        missing = [p for p in dict.fromkeys(positions) if p not in self.node_vectors]
        if missing and self.frozen_vectors is not None and self.frozen_ptr is not None:
            unfrozen = []
            for p in missing:
                start, end = int(self.frozen_ptr[p]), int(self.frozen_ptr[p + 1])
                if end - start == len(self.sentences_of(snapshot, p)):
                    self.node_vectors[p] = self.frozen_vectors[start:end]  # a read-only view
                else:  # a node type the release did not embed
                    unfrozen.append(p)
            missing = unfrozen
        if missing:
            from inference.learning.encoder_finetune import encoder_for_documents

            texts = [text for p in missing for text in self.sentences_of(snapshot, p)]
            embedder = encoder_for_documents(snapshot.documents)  # the release's encoder
            vectors = embedder.embed(texts) if texts else np.zeros((0, embedder.dim), dtype=np.float32)
            start = 0
            for p in missing:
                count = len(self.sentences_of(snapshot, p))
                block = np.ascontiguousarray(vectors[start : start + count])
                block.setflags(write=False)
                self.node_vectors[p] = block
                start += count
        return [self.node_vectors[p] for p in positions]


_indexes: weakref.WeakKeyDictionary[GraphSnapshot, InfoIndex] = weakref.WeakKeyDictionary()
_indexes_lock = threading.Lock()


def info_index_for(snapshot: GraphSnapshot) -> InfoIndex:
    index = _indexes.get(snapshot)
    if index is None:
        with _indexes_lock:
            index = _indexes.get(snapshot)
            if index is None:
                index = _indexes[snapshot] = InfoIndex.build(snapshot)
    return index


def info_warm_up(snapshot: GraphSnapshot, params: InfoParams = DEFAULT_PARAMS) -> int:
    """Embed the sentences of every content node of the release now, not on the first request that
    reads them; returns the number of nodes. Call it where a new release is loaded. A release that
    carries its sentence vectors needs no embedding: they are read from it on demand."""
    index = info_index_for(snapshot)
    if index.frozen_ptr is not None:
        return int(np.count_nonzero(np.diff(index.frozen_ptr)))
    codes = [i for i in range(snapshot.node_count) if snapshot.node(i).type in params.context_node_types]
    index.vectors_of(snapshot, codes)
    return len(codes)


# --- context acquisition and retrieval ---------------------------------------------------------------


def node_admitted(node: NodeView, decision: PolicyDecision) -> bool:
    """May this request read ``node``: type admitted, no forbidden label, an admitted label if any."""
    constraints = decision.constraints
    if not constraints.admits_node_type(node.type):
        return False
    if not node.labels:
        return True
    if any(label in constraints.forbidden_labels for label in node.labels):
        return False
    return any(constraints.admits_label(label) for label in node.labels)


def neighbourhood(
    snapshot: GraphSnapshot,
    target: int,
    decision: PolicyDecision,
    prompt_vec: np.ndarray,
    *,
    budget: int,
    params: InfoParams = DEFAULT_PARAMS,
) -> list[int]:
    """The admitted one-hop content neighbours of ``target``, best cosine to the prompt first."""
    idx, _types, weights = snapshot.neighbours(target, direction="both", edge_types=params.context_edge_types)
    best_weight: dict[int, float] = {}
    for position, weight in zip(idx.tolist(), weights.tolist(), strict=True):
        if position != target:
            best_weight[position] = max(weight, best_weight.get(position, 0.0))
    allowed = [
        p
        for p in best_weight
        if (node := snapshot.node(p)).type in params.context_node_types
        and node.status == "ACTIVE"
        and node_admitted(node, decision)
    ]
    if snapshot.embeddings is not None and allowed:
        cosines = snapshot.embeddings[allowed] @ prompt_vec
        rank = {p: float(c) for p, c in zip(allowed, cosines, strict=True)}
    else:
        rank = best_weight
    allowed.sort(key=lambda p: (-rank[p], -best_weight[p], snapshot.node_ids[p]))
    return allowed[: max(0, budget)]


@dataclass(frozen=True)
class Retrieved:
    """The sentences chosen for the answer, grouped by node (target first)."""

    by_node: tuple[tuple[int, tuple[str, ...]], ...]
    best_cosine: float  # the best cosine of a used sentence
    context: tuple[int, ...]  # every node that was searched (target first)


def retrieve(
    snapshot: GraphSnapshot,
    index: InfoIndex,
    target: int,
    context: Sequence[int],
    prompt_vec: np.ndarray,
    *,
    params: InfoParams = DEFAULT_PARAMS,
) -> Retrieved:
    """Local vector retrieval over the neighbourhood's sentences (never outside it).

    The target chunk is the routed answer: its best ``max_target_sentences`` sentences are kept, in
    their order. A neighbour sentence joins only if it is about as close to the prompt as the target's
    best one (``neighbour_margin``) and above ``min_neighbour_cosine``; at most
    ``max_neighbour_sentences`` of them, best first.
    """
    nodes = [target, *context]
    cosines = [block @ prompt_vec for block in index.vectors_of(snapshot, nodes)]
    target_cos = cosines[0]
    keep = sorted(np.argsort(-target_cos, kind="stable")[: params.max_target_sentences].tolist())
    best_target = float(target_cos.max()) if target_cos.size else 0.0
    floor = max(params.min_neighbour_cosine, best_target - params.neighbour_margin)
    extra = sorted(
        (
            (-float(c), n, i)
            for n in range(1, len(nodes))
            for i, c in enumerate(cosines[n].tolist())
            if c >= floor
        )
    )[: params.max_neighbour_sentences]
    chosen: dict[int, list[int]] = {0: keep} if keep else {}
    for _, n, i in extra:
        chosen.setdefault(n, []).append(i)
    by_node = tuple(
        (nodes[n], tuple(index.sentences_of(snapshot, nodes[n])[i] for i in sorted(chosen[n])))
        for n in sorted(chosen)
    )
    used = [float(cosines[n][i]) for n, picked in chosen.items() for i in picked]
    return Retrieved(by_node, max(used, default=0.0), tuple(nodes))


# --- C_info ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CInfo:
    value: float
    lexical: float
    semantic: float
    taxonomy: float
    policy: float
    fallback: float

    def as_json(self) -> dict[str, float]:
        return {k: round(v, 4) for k, v in asdict(self).items()}


def _scaled_cosine(cos: float, params: InfoParams) -> float:
    span = params.cos_ceiling - params.cos_floor
    return float(min(1.0, max(0.0, (cos - params.cos_floor) / span)))


def c_info(
    *,
    snapshot: GraphSnapshot,
    index: InfoIndex,
    prompt: str,
    prompt_vec: np.ndarray,
    target: int,
    path: Sequence[str],
    weaver: WeaverResult,
    decision: PolicyDecision,
    best_sentence_cosine: float,
    params: InfoParams = DEFAULT_PARAMS,
) -> CInfo:
    """The information confidence of an answer (§2.9.4), with its five components."""
    final = list(weaver.l_final)
    prompt_tokens = tokens(prompt)
    lexical = max(
        (
            weight * len(phrase & prompt_tokens) / len(phrase)
            for label in final
            for phrase, weight in index.label_phrases.get(label, ())
        ),
        default=0.0,
    )

    cosines = [best_sentence_cosine]
    if snapshot.embeddings is not None:
        cosines.append(float(snapshot.embeddings[target] @ prompt_vec))
    semantic = _scaled_cosine(sum(cosines) / len(cosines), params)

    path_nodes = [n for n in path if n in snapshot.position] or [snapshot.node_ids[target]]
    final_set = set(final)
    clusters = {index.label_cluster[label] for label in final if label in index.label_cluster}
    attached = sum(
        1
        for n in path_nodes
        if final_set.intersection(snapshot.node_labels[snapshot.position[n]])
        or clusters.intersection(snapshot.node_clusters[snapshot.position[n]])
    )
    taxonomy = attached / len(path_nodes) if final else 0.0

    state_factor = {
        PolicyState.ALLOW: 1.0,
        PolicyState.ALLOW_WITH_REFOCUS: params.refocus_factor,
        PolicyState.RESTRICT: params.restrict_factor,
    }.get(decision.state, 0.0)
    policy = max(0.0, state_factor - params.policy_reason_penalty * len(decision.reasons))

    factors = dict(params.flag_factors)
    fallback = min((factors.get(str(flag), 1.0) for flag in weaver.flags), default=1.0)
    if snapshot.node(target).type == "OutOfScope":
        fallback = 0.0

    value = (
        params.w_lexical * lexical
        + params.w_semantic * semantic
        + params.w_taxonomy * taxonomy
        + params.w_policy * policy
        + params.w_fallback * fallback
    )
    if Flag.OOD in weaver.flags:
        value = min(value, params.ood_cap)
    value = float(min(1.0, max(0.0, value)))
    return CInfo(round(value, 4), lexical, semantic, taxonomy, policy, fallback)


# --- active check and status -------------------------------------------------------------------------


def sampled(seed: str, sample_rate: float) -> bool:
    """Deterministic controlled sampling: the same seed always gives the same answer."""
    if sample_rate <= 0:
        return False
    if sample_rate >= 1:
        return True
    digest = hashlib.sha256(seed.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < sample_rate


def nearby_branches(index: InfoIndex, weaver: WeaverResult, decision: PolicyDecision) -> list[Option]:
    """The two plausible branches to ask about: the best offerable labels of the weaver's label-vector
    top-K (``clarification.offerable_options``: ACTIVE, admitted by the policy, distinct by name)."""
    return offerable_options(
        (label_id for label_id, _ in weaver.top_k),
        lambda label_id: index.label_names.get(label_id) if label_id in index.active_labels else None,
        decision,
    )


def active_check_for(
    *,
    value: float,
    weaver: WeaverResult,
    branches: Sequence[Option],
    seed: str,
    sample_rate: float,
    params: InfoParams = DEFAULT_PARAMS,
) -> ActiveCheck | None:
    """The one question to ask, if any (§2.9.5): ambiguity first, then low / mid C_info, then sampling."""
    if Flag.VECTOR_AMBIGUITY in weaver.flags and len(branches) == 2:
        x, y = (branch.name for branch in branches)
        return ActiveCheck("disambiguate", f"Do you mean {x} or {y}?", (x, y), "vector_ambiguity")
    helpful = ("Yes", "No")
    if value < params.low_threshold:
        return ActiveCheck("helpful", "Did this help?", helpful, "low_c_info")
    if value < params.mid_threshold:
        return ActiveCheck("helpful", "Did this help?", helpful, "mid_c_info")
    if sampled(seed, sample_rate):
        return ActiveCheck("helpful", "Did this help?", helpful, "sampled")
    return None


def status_at_answer(value: float, params: InfoParams = DEFAULT_PARAMS) -> InfoStatus:
    """No feedback yet: UNCERTAIN when confident enough, LOW_CONFIDENCE otherwise — never CONFIRMED."""
    return InfoStatus.UNCERTAIN if value >= params.low_threshold else InfoStatus.LOW_CONFIDENCE


def status_after_feedback(current: InfoStatus, *, helpful: bool | None, c_info: float) -> InfoStatus:
    """Only an explicit signal moves the status: yes → CONFIRMED, no → LOW_CONFIDENCE, none → unchanged.

    ``c_info`` is kept for the record (a "no" on a confident answer is what the offline loop looks for).
    """
    if helpful is True:
        return InfoStatus.CONFIRMED
    if helpful is False:
        return InfoStatus.LOW_CONFIDENCE
    return current


# --- the optional LLM --------------------------------------------------------------------------------


LLM_INSTRUCTIONS = (
    "You answer a user's question for a support assistant. Answer only from the context below; if it "
    "does not contain the answer, say so. Cite the node ids you used in square brackets, e.g. [N-x]. "
    "Be brief."
)


def llm_answer(prompt: str, context: Sequence[NodeView]) -> tuple[str, tuple[str, ...]]:
    """Ask the configured OpenAI-compatible endpoint; the answer and the context node ids it cites."""
    blocks = "\n\n".join(f"[{n.node_id}] {n.title}\n{n.chunk}" for n in context)
    text = chat_complete(
        [
            {"role": "system", "content": LLM_INSTRUCTIONS},
            {"role": "user", "content": f"Context:\n{blocks}\n\nQuestion: {prompt}"},
        ],
        max_reply_bytes=2_000_000,
    )
    if not text:
        raise LlmError("the LLM returned an empty answer")
    cited = tuple(n.node_id for n in context if n.node_id in text)
    if not cited:
        raise LlmError("the LLM answer cites no context node")
    return text, cited


# --- the step ----------------------------------------------------------------------------------------


def _budget(index: InfoIndex, envelope: Envelope, params: InfoParams) -> int:
    key = envelope.typology_key or index.default_typology
    budget = index.budgets.get(key or "", 0)
    return min(params.max_context_nodes, budget) if budget > 0 else params.max_context_nodes


def _excerpt(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def answer_info(
    *,
    snapshot: GraphSnapshot,
    route: Route,
    envelope: Envelope,
    decision: PolicyDecision,
    weaver: WeaverResult,
    prompt_vec: np.ndarray,
    sample_rate: float = 0.05,
    rng_seed: str | None = None,
    params: InfoParams = DEFAULT_PARAMS,
) -> Outcome:
    """Answer from the route's target and its allowed neighbourhood (see the module doc).

    ``rng_seed`` (default: the request id) drives the sampled active check. Raises ``ValueError`` only
    for a caller bug: no target, or an Action / MemoryWrite target.
    """
    if route.target is None or route.target not in snapshot.position:
        raise ValueError(f"route target {route.target!r} is not in release v{snapshot.version}")
    node = snapshot.node(route.target)
    if node.type in ACTION_TYPES:
        raise ValueError(f"node {node.node_id} is a {node.type}; use run_action / the memory step")
    if not node_admitted(node, decision):
        return Outcome(
            kind=OutcomeKind.REFUSE,
            answer=decision.message or "This information is not available under your access policy.",
            details={"refused_node": node.node_id},
        )
    citation = Citation(node.node_id, node.title, _excerpt(node.chunk, params.excerpt_chars))
    if node.type == "MemoryRead":
        return Outcome(
            kind=OutcomeKind.MEMORY,
            answer=node.chunk,
            citations=(citation,),
            details={"note": "memory reads are not connected yet: this is what the node would read"},
        )

    index = info_index_for(snapshot)
    prompt_vec = np.asarray(prompt_vec, dtype=np.float32)
    context = neighbourhood(
        snapshot, node.position, decision, prompt_vec, budget=_budget(index, envelope, params), params=params
    )
    found = retrieve(snapshot, index, node.position, context, prompt_vec, params=params)
    citations = tuple(
        Citation(snapshot.node_ids[p], snapshot.titles[p], _excerpt(" ".join(used), params.excerpt_chars))
        for p, used in found.by_node
    )
    answer = " ".join(s for _, used in found.by_node for s in used) or node.chunk
    mode, llm_error = "extractive", ""
    if settings.LLM_URL:
        try:
            text, cited = llm_answer(envelope.prompt, [snapshot.node(p) for p, _ in found.by_node])
            extractive = {c.node_id: c for c in citations}
            answer, mode = text, "llm"
            citations = tuple(extractive[n] for n in cited)
        except LlmError as exc:
            logger.warning("LLM answer failed, using the extractive one: %s", exc)
            llm_error = str(exc)[:300]

    confidence = c_info(
        snapshot=snapshot,
        index=index,
        prompt=envelope.prompt,
        prompt_vec=prompt_vec,
        target=node.position,
        path=route.path_nodes,
        weaver=weaver,
        decision=decision,
        best_sentence_cosine=found.best_cosine,
        params=params,
    )
    branches = nearby_branches(index, weaver, decision)
    check = active_check_for(
        value=confidence.value,
        weaver=weaver,
        branches=branches,
        seed=rng_seed if rng_seed is not None else envelope.request_id,
        sample_rate=sample_rate,
        params=params,
    )
    details: dict[str, Any] = {
        "mode": mode,
        "c_info_components": confidence.as_json(),
        "context_nodes": [snapshot.node_ids[p] for p in found.context],
        "silent_outcome": True,
    }
    if llm_error:
        details["llm_error"] = llm_error
    if check is not None and check.kind == "disambiguate":
        details.update(options_details(branches))
    return Outcome(
        kind=OutcomeKind.INFO,
        answer=answer,
        citations=citations,
        c_info=confidence.value,
        info_status=status_at_answer(confidence.value, params),
        active_check=check,
        details=details,
    )
