"""LABEL_ADD for unreached content: a node no label carries and no edge leads to gets a SHADOW label when
requests are closer to its content than to anything the graph can reach — and only then."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from review.changeset import LabelAdd, NodeAttach
from review.loop.generators import labels
from review.loop.generators.base import GeneratorContext
from review.loop.params import loop_params
from review.loop.shadow import BaseRelease
from tests.review.loop_fixtures import SMALL_PACK
from tests.review.test_loop_generators import collection_of

REFUND_NODE = {
    "id": "N-refund-policy",
    "type": "Info",
    "title": "Refund policy",
    "chunk": (
        "Refunds for annual plans are available within 14 days of the charge. Ask for a refund from "
        "Billing › Refunds; the money returns to your card within five business days."
    ),
    "risk": "low",
    "status": "ACTIVE",
    "labels": [],
    "clusters": ["billing"],
    "preconditions": [],
    "parameters": [],
    "handler": "",
}
REFUND_PROMPTS = [
    "can I get a refund for my annual plan",
    "I want my money back",
    "how do refunds work",
    "refund my last charge please",
    "how long does a refund take to reach my card",
    "was charged for the yearly plan, can you refund it",
    "request a refund",
    "is it too late to get refunded after 10 days",
    "where do I ask for my money back",
    "refund policy for annual subscriptions",
    "please reverse the charge and refund me",
    "get reimbursed for the plan I don't use",
    "how many days do I have to ask for a refund",
    "when will my refund arrive",
]
INVOICE_PROMPTS = ["where is my invoice pdf", "download my invoice", "get the invoice for march"] * 4


def _release(tmp_path: Path, *, edge_to_it: bool) -> tuple[Any, Any]:
    from ontology.releases import release_publish
    from taxonomy.packs import pack_import, pack_read

    pack = yaml.safe_load(SMALL_PACK.read_text())
    pack["nodes"].append(REFUND_NODE)
    if edge_to_it:
        pack["edges"].append(
            {
                "source": "N-invoice-download",
                "target": "N-refund-policy",
                "type": "RELATED_TO",
                "weight": 0.5,
                "semantics": "",
            }
        )
    path = tmp_path / "pack.yaml"
    path.write_text(yaml.safe_dump(pack, allow_unicode=True))
    project = pack_import(pack_read(path)).project
    return project, release_publish(project=project, actor=None)


def _context(project: Any, release: Any) -> GeneratorContext:
    prompts = REFUND_PROMPTS + INVOICE_PROMPTS
    # every request was served by the invoice page: the refund content has no door
    collection = collection_of([{"path": ["N-invoice-download"], "outcome": 1, "prompt": p} for p in prompts])
    collection.sources = np.arange(len(prompts))
    return GeneratorContext(
        project=project, base=BaseRelease.load(release), collection=collection, params=loop_params(), seed=1
    )


@pytest.mark.django_db
def test_unreached_content_gets_a_shadow_label_from_the_requests_it_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(labels, "REACHABLE_BLOCK", 2)  # the reachable nodes compared block by block
    project, release = _release(tmp_path, edge_to_it=False)

    (candidate,) = labels.generate_unreached_labels(_context(project, release))

    label_add, attach = candidate.ops
    assert isinstance(label_add, LabelAdd) and isinstance(attach, NodeAttach)
    assert (label_add.name, label_add.cluster, label_add.status) == ("Refund policy", "billing", "SHADOW")
    assert attach.node_id == "N-refund-policy" and attach.labels == (f"new:{label_add.ref}",)
    assert label_add.examples and set(label_add.examples) <= set(REFUND_PROMPTS)
    assert candidate.evidence["support"] >= loop_params().labels.min_support
    assert not set(candidate.evidence["examples"]) & set(INVOICE_PROMPTS)


@pytest.mark.django_db
def test_content_an_edge_leads_to_is_reachable_and_gets_no_label(tmp_path: Path) -> None:
    project, release = _release(tmp_path, edge_to_it=True)

    assert labels.generate_unreached_labels(_context(project, release)) == []


@pytest.mark.django_db
def test_too_few_requests_for_unreached_content_propose_nothing(tmp_path: Path) -> None:
    project, release = _release(tmp_path, edge_to_it=False)
    context = _context(project, release)
    keep = loop_params().labels.min_support - 1
    context.collection = collection_of(
        [{"path": ["N-invoice-download"], "outcome": 1, "prompt": p} for p in REFUND_PROMPTS[:keep]]
    )

    assert labels.generate_unreached_labels(context) == []


@pytest.mark.django_db
def test_the_examples_are_the_requests_closest_to_the_content(tmp_path: Path) -> None:
    from arg_platform.embedder import get_embedder

    project, release = _release(tmp_path, edge_to_it=False)
    context = _context(project, release)
    snapshot = context.base.snapshot
    content = snapshot.embeddings[list(snapshot.node_ids).index("N-refund-policy")]
    nearest = REFUND_PROMPTS[int(np.argmax(get_embedder().embed(REFUND_PROMPTS) @ content))]

    (candidate,) = labels.generate_unreached_labels(context)

    assert candidate.ops[0].examples[0] == nearest  # what the label will route to comes first


@pytest.mark.django_db
def test_requests_no_answer_served_come_first_among_the_examples(tmp_path: Path) -> None:
    """A request another answer served well may be a sibling intent's that sits near this content; one
    that was unrouted or reported unhelpful or failed is what the missing door is for."""
    from arg_platform.embedder import get_embedder

    project, release = _release(tmp_path, edge_to_it=False)
    context = _context(project, release)
    snapshot = context.base.snapshot
    content = snapshot.embeddings[list(snapshot.node_ids).index("N-refund-policy")]
    by_closeness = np.argsort(-(get_embedder().embed(REFUND_PROMPTS) @ content), kind="stable")
    unserved = {
        REFUND_PROMPTS[int(i)]: outcome for i, outcome in zip(by_closeness[4:7], (3, 4, 4), strict=True)
    }
    rows = [
        {"path": ["N-invoice-download"], "outcome": unserved.get(p, 1), "prompt": p} for p in REFUND_PROMPTS
    ]
    rows += [{"path": [None], "outcome": 0, "prompt": "how long until my refund shows up on my card"}]
    rows += [{"path": ["N-invoice-download"], "outcome": 1, "prompt": p} for p in INVOICE_PROMPTS]
    context.collection = collection_of(rows)
    context.collection.sources = np.arange(len(rows))

    (candidate,) = labels.generate_unreached_labels(context)

    examples = list(candidate.ops[0].examples)
    first = [e in unserved or e == "how long until my refund shows up on my card" for e in examples]
    assert first[0] and first == sorted(first, reverse=True)  # every unserved request before a served one
    assert sum(first) >= 3
