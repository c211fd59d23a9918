"""The child-label generator on logged prompts that held PII: the Memory Guard's placeholders count as
no word of the intent, and a prompt that held PII supports a group but is never one of its examples."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from review.loop.generators import labels
from review.loop.generators.base import GeneratorContext
from review.loop.params import loop_params
from review.loop.shadow import BaseRelease
from tests.review.test_loop_generators import collection_of

PROMPTS = [
    "can I pay my invoice in swiss francs",
    "pay invoices in swiss francs please",
    "is paying an invoice in swiss francs possible",
    "invoice currency swiss francs instead of euro",
    "switch my invoice currency to swiss francs",
    "I want my invoices billed in swiss francs",
    "bill me in swiss francs from now on",
    "do you accept swiss francs for invoices",
    "my card <CARD> should pay the invoice in swiss francs",
    "charge <CARD> in swiss francs for the invoice",
    "send the swiss francs invoice to <EMAIL>",
    "<PERSON> asks: invoices in swiss francs?",
    "swiss francs invoices for our Zurich office",
    "invoice amounts shown in swiss francs",
]


@pytest.mark.django_db
def test_prompts_that_held_pii_support_a_child_label_but_are_never_its_examples(small_release: Any) -> None:
    project, release = small_release
    collection = collection_of([{"path": ["N-invoice-download"], "outcome": 0, "prompt": p} for p in PROMPTS])
    collection.flags = [frozenset({"NEW_INTENT_CANDIDATE"}) for _ in PROMPTS]
    collection.top_labels = [(("L00001", 0.7),) for _ in PROMPTS]
    collection.sources = np.arange(len(PROMPTS))
    context = GeneratorContext(
        project=project, base=BaseRelease.load(release), collection=collection, params=loop_params(), seed=1
    )

    (candidate,) = [c for c in labels.generate_child_labels(context) if c.kind == "LABEL_ADD"]

    label_add = candidate.ops[0]
    assert label_add.examples, candidate
    assert not any("<" in e or "card" in e.lower() or "email" in e.lower() for e in label_add.examples)
    words = " ".join([label_add.name, *label_add.synonyms, label_add.description]).lower()
    assert not any(w in words for w in ("card", "email", "person")), words
