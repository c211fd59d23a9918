"""The grey-zone comparator of the Info Registry (ARG §2.10.5.7): is fact B the same InfoUnit as A?

Cosine similarity of MiniLM embeddings is high for "same wording, different fact" — a changed number,
an added "not", two swapped entities, an antonym — so the decision never rests on the cosine alone.
``compare`` combines it with deterministic *discriminators* over the canonical forms and, when switched
on, with a learned grey-zone model, the pair cross-encoder and a bounded LLM compare:

* ``params`` — the verdicts, the methods, the tuned thresholds (``RegistryParams``), ``Comparison``;
* ``wording`` — stems, word families, the wording of a statement and the word diff of two wordings;
* ``order`` — word order and roles: swaps around directional words, exchanged spans, converses;
* ``edits`` — soft reasons of an edited sentence: minimal pairs, replaced spans, one-sided conditions;
* ``discriminators`` — the hard and soft reasons for one pair of canonical facts;
* ``decision`` — ``compare``: thresholds, promotions, the learned model, the LLM, the cross-encoder and
  the identity gate;
* ``identity`` — evidence close to identity: the content words two wordings leave unexplained;
* ``learned`` — the learned grey-zone model (``pair_features``, ``learned_model``);
* ``llm`` — the bounded LLM compare.

The names below are the comparator's interface. The switches ``decision.LEARNED_DEFAULT`` and
``decision.CROSS_DEFAULT`` and the model file ``learned.MODEL_PATH`` are read where they are defined:
set them on those modules.
"""

from .decision import compare, cross_decide, identity_gate
from .discriminators import VALUE_CATEGORIES, VALUE_SURFACES, discriminators
from .learned import FEATURE_NAMES, LearnedModel, learned_model, pair_features
from .llm import LLM_COMPARE_INSTRUCTIONS, llm_compare, llm_compare_enabled
from .params import DEFAULT_PARAMS, LEARNED, RULES_ONLY, Comparison, Method, RegistryParams, Verdict

__all__ = [
    "DEFAULT_PARAMS",
    "FEATURE_NAMES",
    "LEARNED",
    "LLM_COMPARE_INSTRUCTIONS",
    "RULES_ONLY",
    "VALUE_CATEGORIES",
    "VALUE_SURFACES",
    "Comparison",
    "LearnedModel",
    "Method",
    "RegistryParams",
    "Verdict",
    "compare",
    "cross_decide",
    "discriminators",
    "identity_gate",
    "learned_model",
    "llm_compare",
    "llm_compare_enabled",
    "pair_features",
]
