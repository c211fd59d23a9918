"""The knobs of the Info answer step: how much context is read, how sentences are chosen, the weights
of C_info and the thresholds of the active check and the outcome status (``InfoParams``)."""

from __future__ import annotations

from dataclasses import dataclass

from inference.contracts import Flag


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
