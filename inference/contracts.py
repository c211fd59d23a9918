"""The frozen values that flow between the steps of the online pipeline (ARG v1 §2).

Each step is its own module with one entry function taking and returning these dataclasses; the
pipeline (``inference.pipeline``) calls them in the protocol's order, so *policy first* holds by
construction: nothing downstream of a BLOCK decision is ever called.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, fields, is_dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class RequestContext:
    """Structured context a client sends with a prompt (all optional)."""

    role: str | None = None
    product: str | None = None
    channel: str | None = None
    language: str | None = None
    history: tuple[str, ...] = ()
    timestamp: datetime | None = None
    session_id: str | None = None
    typology: str | None = None
    user_id: str | None = None


@dataclass(frozen=True)
class Envelope:
    """Step 1 output: the normalized, language-tagged request every later step reads (§2.1.1)."""

    request_id: str
    project_id: int
    prompt_raw: str
    prompt: str  # normalized: unicode NFKC, control characters removed, whitespace collapsed
    language: str  # ISO 639-1 code, "und" when undetermined
    language_confidence: float
    context: RequestContext
    role_key: str | None  # the policy role the request runs under
    typology_key: str | None  # the active context typology
    mood: str | None = None  # "act" / "ask": what the request asks for (``inference.steps.mood``)


class PolicyState(enum.StrEnum):
    """The governance state of a request (§2.1.2)."""

    ALLOW = "ALLOW"
    ALLOW_WITH_REFOCUS = "ALLOW_WITH_REFOCUS"
    RESTRICT = "RESTRICT"
    BLOCK = "BLOCK"


class ResponseMode(enum.StrEnum):
    NORMAL = "normal"
    CAUTIOUS = "cautious"
    REFOCUS = "refocus"
    REFUSE = "refuse"


@dataclass(frozen=True)
class PolicyConstraints:
    """What the rest of the pipeline may touch for this request (§2.1.3), label sets already expanded
    over subtrees. ``None`` for an allow-set means "everything"."""

    allowed_labels: frozenset[str] | None = None
    forbidden_labels: frozenset[str] = frozenset()
    allowed_node_types: frozenset[str] | None = None
    forbidden_node_types: frozenset[str] = frozenset()
    max_hops: int | None = None
    memory_scopes: frozenset[str] = frozenset()
    # the request's product (``context.product``) when the release declares it: nodes tagged with other
    # products are not admitted (``inference.steps.products``)
    product: str | None = None

    def admits_label(self, label_id: str) -> bool:
        return label_id not in self.forbidden_labels and (
            self.allowed_labels is None or label_id in self.allowed_labels
        )

    def admits_node_type(self, node_type: str) -> bool:
        return node_type not in self.forbidden_node_types and (
            self.allowed_node_types is None or node_type in self.allowed_node_types
        )


@dataclass(frozen=True)
class PolicyDecision:
    """The Policy Manager's verdict on a request: state, constraints, response mode, and why."""

    state: PolicyState
    constraints: PolicyConstraints
    response_mode: ResponseMode
    reasons: tuple[str, ...] = ()  # e.g. ("blocked_term", "sensitive_topic:legal-advice")
    message: str = ""  # the refusal or refocus text when the state asks for one
    policy_key: str | None = None  # the policy that decided (None: a release without roles)
    secrets: tuple[str, ...] = ()  # kinds of secret PII in the prompt (memory.pii.SECRET_KINDS): warned about


@dataclass(frozen=True)
class LexicalCandidates:
    """Step 2 output: ``L_raw`` (label → lexical score), what policy kept, and what it blocked."""

    raw: dict[str, float] = field(default_factory=dict)
    filtered: dict[str, float] = field(default_factory=dict)
    blocked: tuple[tuple[str, str], ...] = ()  # (LabelID, constraint type)


class Flag(enum.StrEnum):
    """Flags of the Context Weaver (§2.3.4) and of later steps, logged and read by the offline loop."""

    OOD = "OOD"
    VECTOR_AMBIGUITY = "VECTOR_AMBIGUITY"
    LOW_MARGIN = "LOW_MARGIN"
    ABSTAIN_RECOMMENDED = "ABSTAIN_RECOMMENDED"
    NEW_INTENT_CANDIDATE = "NEW_INTENT_CANDIDATE"
    UNKNOWN_LABEL_CANDIDATE = "UNKNOWN_LABEL_CANDIDATE"
    MISSING_LABEL_CANDIDATE = "MISSING_LABEL_CANDIDATE"


@dataclass(frozen=True)
class WeaverResult:
    """Step 3 output: the validated label set ``L_final`` with its confidence and flags (§2.3.4)."""

    top_k: tuple[tuple[str, float], ...] = ()  # label vector search: (LabelID, cosine)
    classifier: tuple[tuple[str, float], ...] = ()  # distilled classifier: (LabelID or "oos", probability)
    proposer_used: bool = False
    proposal: dict[str, str] = field(
        default_factory=dict
    )  # the bounded proposer's answer (``Proposal.as_log``)
    l_final: dict[str, float] = field(default_factory=dict)
    confidence: float = 0.0  # confidence_global in [0, 1]
    flags: frozenset[Flag] = frozenset()
    rejected: tuple[tuple[str, str], ...] = ()  # (LabelID, validator rule)
    shadow: tuple[tuple[str, float], ...] = ()  # SHADOW labels that would have won (evaluated, not routed)
    # the candidate set C = L_raw ∪ vector Top-K (``inference.steps.weaver``): {"mode", "size",
    # "classifier_top", "classifier_top_outside"} — the classifier's own top label and whether it lay outside C
    candidates: dict[str, Any] = field(default_factory=dict)

    @property
    def policy_gated(self) -> bool:
        """The request is about labels the caller's policy does not allow: the weaver had labels to route
        to (not OOD) and the policy's label gate alone removed every one of them from ``L_final``."""
        # late: keeps these value types importable before the app registry (the validator imports models)
        from taxonomy.validator import POLICY_LABEL_GATE

        return (
            not self.l_final
            and Flag.OOD not in self.flags
            and bool(self.rejected)
            and all(rule == POLICY_LABEL_GATE for _, rule in self.rejected)
        )


@dataclass(frozen=True)
class Landing:
    """Step 4 output: where routing starts on the graph (§2.4), or why it abstained."""

    node_start: str | None
    candidates: tuple[tuple[str, float], ...] = ()  # top-N landing candidates (node_id, score)
    abstained: bool = False
    reason: str = ""  # e.g. "label_match", "cluster_match", "cold_start", "ood", "no_attachment"
    flags: frozenset[Flag] = frozenset()
    clusters: tuple[str, ...] = ()  # the taxonomy scope the landing was computed in (cluster keys)


@dataclass(frozen=True)
class ScoredNode:
    """A candidate neighbour with its composite score and the five components (§2.5.3)."""

    node_id: str
    score: float
    s_struct: float = 0.0
    s_sem: float = 0.0
    s_taxo: float = 0.0
    s_typology: float = 0.0
    s_memory: float = 0.0


@dataclass(frozen=True)
class Route:
    """Steps 5–7 output: the selected path from the landing point to the target node."""

    target: str | None
    path_nodes: tuple[str, ...] = ()
    path_edges: tuple[tuple[str, str, str], ...] = ()  # (source, target, edge type)
    fast_path: bool = False
    considered: int = 0  # candidates scored after pruning
    pruned: int = 0  # candidates dropped by anti-hub pruning and hard gates
    scored: tuple[ScoredNode, ...] = ()  # the best candidates, for the trace
    reason: str = ""  # fast_path, terminal_start, beam, abstained, no_terminal, no_start, start_forbidden


class OutcomeKind(enum.StrEnum):
    ACTION = "ACTION"
    INFO = "INFO"
    MEMORY = "MEMORY"
    CLARIFY = "CLARIFY"
    REFOCUS = "REFOCUS"
    REFUSE = "REFUSE"
    OUT_OF_SCOPE = "OUT_OF_SCOPE"


class InfoStatus(enum.StrEnum):
    """§2.9.7: silence feeds UNCERTAIN, never CONFIRMED."""

    CONFIRMED = "INFO_CONFIRMED_SUCCESS"
    UNCERTAIN = "INFO_UNCERTAIN_SUCCESS"
    LOW_CONFIDENCE = "INFO_LOW_CONFIDENCE"


@dataclass(frozen=True)
class Citation:
    node_id: str
    title: str
    excerpt: str


@dataclass(frozen=True)
class ActiveCheck:
    """A strategic question to the user (§2.9.5): yes/no helpfulness or "X or Y?"."""

    kind: str  # "helpful" | "disambiguate"
    question: str
    options: tuple[str, ...] = ()
    reason: str = ""  # "low_c_info" | "mid_c_info" | "vector_ambiguity" | "sampled" | "abstained" (fallback)


@dataclass(frozen=True)
class Outcome:
    """Steps 8–10 output: what the caller gets back."""

    kind: OutcomeKind
    answer: str = ""
    citations: tuple[Citation, ...] = ()
    action: dict[str, object] | None = None  # handler, parameters, status, result, idempotency key
    missing_parameters: tuple[str, ...] = ()
    c_info: float | None = None
    info_status: InfoStatus | None = None
    active_check: ActiveCheck | None = None
    # step-specific details for the log and the trace viewer: C_info components and context nodes (Info),
    # precondition checks (Action), notes (Memory)
    details: dict[str, object] = field(default_factory=dict)
    response_style: str | None = None  # the typology style that shaped ``answer`` (``inference.steps.style``)


def plain(value: object) -> object:
    """A JSON-ready copy of a contract value: a dataclass becomes a dict of its fields (in order), a
    tuple or list a list, a set a sorted list of strings, an enum its value; dict keys are kept.

    What ``dataclasses.asdict`` gives once JSON-encoded, without its deep copy of every leaf (the log
    row and the response of every request go through this)."""
    if isinstance(value, str | int | float | bool) or value is None:
        return value.value if isinstance(value, enum.Enum) else value
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, set | frozenset):
        return sorted(str(plain(v)) for v in value)
    if isinstance(value, enum.Enum):
        return plain(value.value)
    return value


def plain_fields(value: object) -> dict[str, object]:
    """``plain`` of a dataclass instance: the JSON-ready dict of its fields."""
    fields_ = plain(value)
    if not isinstance(fields_, dict):
        raise TypeError(f"{type(value).__name__} is not a dataclass instance")
    return fields_
