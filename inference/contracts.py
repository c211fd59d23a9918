"""The frozen values that flow between the steps of the online pipeline (ARG v1 §2).

Each step is its own module with one entry function taking and returning these dataclasses; the
pipeline (``inference.pipeline``) calls them in the protocol's order, so *policy first* holds by
construction: nothing downstream of a BLOCK decision is ever called.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime


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


@dataclass(frozen=True)
class LexicalCandidates:
    """Step 2 output: ``L_raw`` (label → lexical score), what policy kept, and what it blocked."""

    raw: dict[str, float] = field(default_factory=dict)
    filtered: dict[str, float] = field(default_factory=dict)
    blocked: tuple[tuple[str, str], ...] = ()  # (LabelID, constraint type)
