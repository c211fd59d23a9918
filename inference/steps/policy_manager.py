"""The Policy Manager (ARG §2.1.2–2.1.3): a transverse safety kernel that runs before any
classification or routing and never reads the graph.

``precheck`` runs its sub-modules on the request envelope and the role's policy, compiled once per
release (``compile_policy``, held by ``ReleaseRuntime``):

* **content filter** — blocked terms as whole words on the matching-normalized prompt (so case,
  accents, zero-width characters and punctuation between the words of a term do not hide it) and
  blocked patterns (expert regexes on RE2, ``arg_platform.patterns``: linear time, bounded; searched
  on both the prompt and its matching form) → BLOCK;
* **sensitive topics** — a topic's terms (whole words) → its action: BLOCK, RESTRICT (cautious
  answer) or REFOCUS (→ ALLOW_WITH_REFOCUS with the refocus template);
* **scope & intent guard** — deterministic, no embedder: ALLOW_WITH_REFOCUS (reason
  ``out_of_scope``) only when the prompt hits an off-domain marker (``DEFAULT_OFF_DOMAIN_MARKERS``
  minus every marker the release's own vocabulary uses) *and* none of its content words belongs to
  the release's domain vocabulary (label names, synonyms, descriptions, cluster texts, scope
  statements). Everything subtler is left to the Context Weaver's OOD flag and abstention;
* **access control** — the role's policy constraints, label rules expanded over whole subtrees with
  ``label_gate_for``, node types, max hops, memory scopes (precomputed per release);
* **response shaper** — ALLOW → normal, RESTRICT → cautious, ALLOW_WITH_REFOCUS → refocus,
  BLOCK → refuse;
* **Memory Guard** (``memory.pii``, §2.10.5.9.2) — the kinds of secret PII the prompt holds (a card
  number, an IBAN, a national id: ``SECRET_KINDS``) go into ``PolicyDecision.secrets``. They change no
  state: the request is answered as any other, and ``secret_notice`` adds to the answer a warning not
  to share such numbers. Every answer leaves with its secret PII replaced by placeholders.

Precedence BLOCK > ALLOW_WITH_REFOCUS > RESTRICT > ALLOW; every matched reason is listed, in
sub-module order. ``postcheck`` runs the content filter over the answer before it leaves: a blocked
term replaces the whole answer by the refusal; blocked patterns are redacted in place, and so is
secret PII the Memory Guard finds.

A blocked pattern that cannot run on RE2 fails closed. Validation refuses such a pattern (saving a
policy, importing a pack, publishing), but a release frozen under older rules may still carry one:
``compile_policy`` then logs an error and keeps the pattern in ``unusable_patterns``, and every
request under that policy is BLOCKed (reason ``blocked_pattern_unusable``) until a release without it
is published — a deny rule the runtime cannot evaluate never lets through what it was written to stop.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from arg_platform.patterns import ExpertPattern, PatternError, expert_pattern
from inference.contracts import Envelope, PolicyConstraints, PolicyDecision, PolicyState, ResponseMode
from inference.steps.envelope import matching_tokens, normalized_for_matching
from memory.pii import SECRET_KINDS, PiiType, detect, redact_text
from taxonomy.validator import TaxonomyView, label_gate_for

if TYPE_CHECKING:
    from inference.runtime import ReleaseRuntime

logger = logging.getLogger(__name__)

PRECEDENCE = {
    PolicyState.ALLOW: 0,
    PolicyState.RESTRICT: 1,
    PolicyState.ALLOW_WITH_REFOCUS: 2,
    PolicyState.BLOCK: 3,
}
RESPONSE_MODE = {
    PolicyState.ALLOW: ResponseMode.NORMAL,
    PolicyState.RESTRICT: ResponseMode.CAUTIOUS,
    PolicyState.ALLOW_WITH_REFOCUS: ResponseMode.REFOCUS,
    PolicyState.BLOCK: ResponseMode.REFUSE,
}
TOPIC_ACTION = {
    "BLOCK": PolicyState.BLOCK,
    "RESTRICT": PolicyState.RESTRICT,
    "REFOCUS": PolicyState.ALLOW_WITH_REFOCUS,
}
DEFAULT_REFUSAL = "I can't help with that request."
DEFAULT_REFOCUS = "That's outside what I can help with here."
REDACTED = "[redacted]"

# Clearly-off-domain request markers for the scope guard; a marker the release's own vocabulary
# uses (e.g. "weather" in a weather assistant) is dropped when the runtime is built.
DEFAULT_OFF_DOMAIN_MARKERS: tuple[str, ...] = (
    "weather", "forecast", "recipe", "cooking", "bake", "poem", "poetry", "lyrics", "joke", "riddle",
    "horoscope", "zodiac", "astrology", "lottery", "football", "soccer", "basketball", "baseball",
    "movie", "tv show", "celebrity", "dating", "girlfriend", "boyfriend", "homework", "essay",
    "write a story", "short story", "medical advice", "diagnose", "symptoms", "vacation",
    "travel tips", "restaurant", "stock tips", "sports score",
)  # fmt: skip


def term_regex(terms: Iterable[str]) -> re.Pattern[str] | None:
    """One regex matching any of ``terms`` as whole words in matching-normalized text.

    Words of a multi-word term may be separated by any run of non-alphanumeric characters
    ("crypto mining" also matches "crypto-mining"); a term never matches inside a longer word.
    """
    alternatives = []
    for term in terms:
        words = normalized_for_matching(term).split()
        if words:
            alternatives.append(r"[\W_]+".join(re.escape(word) for word in words))
    if not alternatives:
        return None
    alternatives.sort(key=lambda a: (-len(a), a))  # longest first: report the most specific term
    return re.compile(r"(?<![^\W_])(?:" + "|".join(alternatives) + r")(?![^\W_])")


@dataclass(frozen=True)
class SensitiveTopicRule:
    topic: str
    state: PolicyState
    matcher: re.Pattern[str]


@dataclass(frozen=True)
class CompiledPolicy:
    """One policy, ready for the hot path: regexes compiled, label rules expanded over subtrees.

    ``blocked_patterns`` are compiled on RE2; ``unusable_patterns`` are those RE2 refused (see the
    module doc: while there is one, the policy BLOCKs every request)."""

    key: str
    constraints: PolicyConstraints
    blocked_terms: re.Pattern[str] | None
    blocked_patterns: tuple[ExpertPattern, ...]
    sensitive_topics: tuple[SensitiveTopicRule, ...]
    scope_statement: str
    refusal_message: str
    refocus_message: str
    unusable_patterns: tuple[str, ...] = ()


def compile_policy(data: Mapping[str, Any], view: TaxonomyView) -> CompiledPolicy:
    """Compile a pack-shape policy (validated at publication; a blocked pattern RE2 refuses is logged and
    kept in ``unusable_patterns``, which fails the policy closed)."""
    gate = label_gate_for(
        view,
        allowed_labels=data.get("allowed_labels") or [],
        forbidden_labels=data.get("forbidden_labels") or [],
    )
    allowed_types = data.get("allowed_node_types") or []
    constraints = PolicyConstraints(
        allowed_labels=gate.allowed,
        forbidden_labels=gate.forbidden,
        allowed_node_types=frozenset(allowed_types) if allowed_types else None,
        forbidden_node_types=frozenset(data.get("forbidden_node_types") or []),
        max_hops=data.get("max_hops"),
        memory_scopes=frozenset(data.get("memory_scopes") or []),
    )
    topics = []
    for topic in data.get("sensitive_topics") or []:
        matcher = term_regex(topic.get("terms") or [])
        if matcher is not None:
            topics.append(
                SensitiveTopicRule(str(topic["topic"]), TOPIC_ACTION[topic.get("action", "REFOCUS")], matcher)
            )
    patterns: list[ExpertPattern] = []
    unusable: list[str] = []
    for source in data.get("blocked_patterns") or []:
        try:
            patterns.append(expert_pattern(source))
        except PatternError as exc:
            logger.error("policy %s: blocked pattern %s; every request under it is refused", data["key"], exc)
            unusable.append(str(source))
    return CompiledPolicy(
        key=str(data["key"]),
        constraints=constraints,
        blocked_terms=term_regex(data.get("blocked_terms") or []),
        blocked_patterns=tuple(patterns),
        sensitive_topics=tuple(topics),
        scope_statement=str(data.get("scope_statement") or ""),
        refusal_message=str(data.get("refusal_template") or "") or DEFAULT_REFUSAL,
        refocus_message=str(data.get("refocus_template") or "") or DEFAULT_REFOCUS,
        unusable_patterns=tuple(unusable),
    )


@dataclass(frozen=True)
class ScopeGuard:
    """The release-wide data of the scope & intent guard."""

    vocabulary: frozenset[str]  # content tokens of the release's domain texts
    markers: re.Pattern[str] | None  # off-domain markers the domain vocabulary does not use

    @staticmethod
    def build(domain_texts: Iterable[str], markers: Iterable[str] = DEFAULT_OFF_DOMAIN_MARKERS) -> ScopeGuard:
        vocabulary = frozenset(token for text in domain_texts for token in matching_tokens(text))
        kept = [m for m in markers if not set(matching_tokens(m)) & vocabulary]
        return ScopeGuard(vocabulary, term_regex(kept))

    def out_of_scope(self, text: str) -> bool:
        if self.markers is None or not self.vocabulary or self.markers.search(text) is None:
            return False
        return not set(matching_tokens(text)) & self.vocabulary


# --- sub-modules -----------------------------------------------------------------------------------


def content_filter(prompt: str, matching: str, policy: CompiledPolicy) -> list[str]:
    """Reasons to BLOCK: ``blocked_term``, ``blocked_pattern`` and/or ``blocked_pattern_unusable``."""
    reasons = []
    if policy.blocked_terms is not None and policy.blocked_terms.search(matching):
        reasons.append("blocked_term")
    if any(p.search(prompt) or p.search(matching) for p in policy.blocked_patterns):
        reasons.append("blocked_pattern")
    if policy.unusable_patterns:
        reasons.append("blocked_pattern_unusable")
    return reasons


def sensitive_topics(matching: str, policy: CompiledPolicy) -> list[tuple[PolicyState, str]]:
    """``(state, "sensitive_topic:<topic>")`` for every topic the prompt touches."""
    return [
        (rule.state, f"sensitive_topic:{rule.topic}")
        for rule in policy.sensitive_topics
        if rule.matcher.search(matching)
    ]


def scope_guard(matching: str, guard: ScopeGuard) -> list[str]:
    return ["out_of_scope"] if guard.out_of_scope(matching) else []


def access_control(envelope: Envelope, runtime: ReleaseRuntime) -> CompiledPolicy:
    """The role's compiled policy (its constraints are what the rest of the pipeline may touch)."""
    return runtime.policy_for_role(envelope.role_key)


def response_shaper(state: PolicyState, policy: CompiledPolicy) -> tuple[ResponseMode, str]:
    if state is PolicyState.BLOCK:
        return RESPONSE_MODE[state], policy.refusal_message
    if state is PolicyState.ALLOW_WITH_REFOCUS:
        return RESPONSE_MODE[state], policy.refocus_message
    return RESPONSE_MODE[state], ""


# --- entry points ----------------------------------------------------------------------------------


def precheck(envelope: Envelope, runtime: ReleaseRuntime) -> PolicyDecision:
    """The governance verdict on a request: state, constraints, response mode, reasons, message."""
    policy = access_control(envelope, runtime)
    matching = normalized_for_matching(envelope.prompt)
    state = PolicyState.ALLOW
    reasons = content_filter(envelope.prompt, matching, policy)
    if reasons:
        state = PolicyState.BLOCK
    for topic_state, reason in sensitive_topics(matching, policy):
        reasons.append(reason)
        if PRECEDENCE[topic_state] > PRECEDENCE[state]:
            state = topic_state
    for reason in scope_guard(matching, runtime.scope_guard):
        reasons.append(reason)
        if PRECEDENCE[PolicyState.ALLOW_WITH_REFOCUS] > PRECEDENCE[state]:
            state = PolicyState.ALLOW_WITH_REFOCUS
    mode, message = response_shaper(state, policy)
    return PolicyDecision(
        state=state,
        constraints=policy.constraints,
        response_mode=mode,
        reasons=tuple(reasons),
        message=message,
        policy_key=policy.key or None,
        secrets=secrets_in(envelope.prompt),
    )


def secrets_in(text: str) -> tuple[str, ...]:
    """The kinds of secret PII (``SECRET_KINDS``) the Memory Guard finds in ``text``, in a fixed order."""
    found = {f.type for f in detect(text, only=SECRET_KINDS)}
    return tuple(kind for kind in SECRET_KINDS if kind in found)


SECRET_NAMES = {
    PiiType.CARD: "card numbers",
    PiiType.IBAN: "bank account numbers",
    PiiType.NATIONAL_ID: "ID numbers such as social security or passport numbers",
}


def secret_notice(kinds: tuple[str, ...]) -> str:
    """The warning added to the answer of a request that held secret PII ("" when it held none)."""
    if not kinds:
        return ""
    names = [SECRET_NAMES[k] for k in kinds]
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
    return (
        f"For your safety, please don't share {listed} here: we never need them to help you, "
        "and we removed what you sent from our records."
    )


def refocus_message(envelope: Envelope, runtime: ReleaseRuntime) -> str:
    """The caller's policy's refocus text ("that's outside what I can help with; I can help with …"): the
    answer of the controlled fallbacks of ``inference.steps.fallback`` (a request about labels this role may
    not use, or one no label and no OutOfScope node is close to)."""
    return access_control(envelope, runtime).refocus_message


def postcheck(
    decision: PolicyDecision, answer_text: str, runtime: ReleaseRuntime
) -> tuple[str, tuple[str, ...]]:
    """The answer as it may leave, and why it was changed (empty when untouched).

    A blocked term in the answer replaces it with the policy's refusal; blocked patterns are
    redacted where they match, and the answer is refused if one still matches its matching form (or
    when the policy holds a pattern RE2 refused). Secret PII (``SECRET_KINDS``) is replaced by its
    placeholder (``<CARD>``).
    """
    policy = runtime.policy(decision.policy_key)
    if decision.state is PolicyState.BLOCK:
        return decision.message or policy.refusal_message, ()
    if policy.unusable_patterns:
        return policy.refusal_message, ("postcheck:blocked_pattern_unusable",)
    if policy.blocked_terms is not None and policy.blocked_terms.search(normalized_for_matching(answer_text)):
        return policy.refusal_message, ("postcheck:blocked_term",)
    text, redactions = answer_text, 0
    for pattern in policy.blocked_patterns:
        text, count = pattern.subn(REDACTED, text)
        redactions += count
    if any(pattern.search(normalized_for_matching(text)) for pattern in policy.blocked_patterns):
        return policy.refusal_message, ("postcheck:blocked_pattern",)
    reasons = ("postcheck:blocked_pattern",) if redactions else ()
    redacted = redact_text(text, only=SECRET_KINDS)
    if redacted.kinds:
        text, reasons = redacted.value, (*reasons, "postcheck:secret_redacted")
    return text, reasons
