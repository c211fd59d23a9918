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

One concept a module: ``params`` (the knobs), ``sentence_index`` (the per-release text index),
``evidence`` (1–2), ``llm`` (the LLM-written answer of 3), ``confidence`` (4), ``active_check`` (5–6),
and ``answer``, the step that runs them in this order.
"""

from .active_check import active_check_for, nearby_branches, sampled, status_after_feedback, status_at_answer
from .answer import ACTION_TYPES, answer_info
from .confidence import CInfo, c_info
from .evidence import Retrieved, neighbourhood, node_admitted, retrieve
from .llm import LLM_INSTRUCTIONS, llm_answer
from .params import DEFAULT_PARAMS, InfoParams
from .sentence_index import (
    ABBREVIATIONS,
    SENTENCE_DOCUMENT,
    SENTENCE_MATRIX,
    STOPWORDS,
    InfoIndex,
    info_index_for,
    info_sentences_hook,
    info_warm_up,
    sentences,
    tokens,
)

__all__ = [
    "ABBREVIATIONS",
    "ACTION_TYPES",
    "DEFAULT_PARAMS",
    "LLM_INSTRUCTIONS",
    "SENTENCE_DOCUMENT",
    "SENTENCE_MATRIX",
    "STOPWORDS",
    "CInfo",
    "InfoIndex",
    "InfoParams",
    "Retrieved",
    "active_check_for",
    "answer_info",
    "c_info",
    "info_index_for",
    "info_sentences_hook",
    "info_warm_up",
    "llm_answer",
    "nearby_branches",
    "neighbourhood",
    "node_admitted",
    "retrieve",
    "sampled",
    "sentences",
    "status_after_feedback",
    "status_at_answer",
    "tokens",
]
