"""Turning a labelled utterance file into a knowledge pack (EVALUATION.md, routing quality).

domain → cluster, intent → label (its TRAIN utterances are the label's validated examples), one Info
node per intent attached to its label, and the out-of-scope route: the ``oos`` utterances of TRAIN
become the examples of an "Out of scope" label in an ``oos`` cluster whose only node is an OutOfScope
node — the way a curator teaches the platform what is not its business.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

OOS = "oos"
MAX_EXAMPLES = 480  # the validator's bound is 500 examples per label


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9_-]+", "-", text.lower()).strip("-")[:60] or "x"


def routing_pack(
    train: list[list[str]],
    *,
    domains: dict[str, list[str]] | None = None,
    project_slug: str = "bench-routing",
) -> tuple[dict[str, Any], dict[str, str]]:
    """The pack, and the map intent → node id the benchmark scores landings against."""
    by_intent: dict[str, list[str]] = defaultdict(list)
    for text, intent in train:
        by_intent[intent].append(text)
    domain_of = {intent: domain for domain, intents in (domains or {}).items() for intent in intents}
    clusters: dict[str, str] = {}
    labels: list[dict[str, Any]] = []
    nodes: list[dict[str, Any]] = []
    node_of: dict[str, str] = {}
    for i, intent in enumerate(sorted(by_intent), start=1):
        is_oos = intent == OOS
        domain = OOS if is_oos else domain_of.get(intent, "general")
        clusters.setdefault(slug(domain), domain.replace("_", " ").title())
        label_id = f"L{i:05d}"
        name = "Out of scope" if is_oos else intent.replace("_", " ")
        examples = list(dict.fromkeys(by_intent[intent]))[:MAX_EXAMPLES]
        labels.append(
            {
                "id": label_id,
                "name": name,
                "cluster": slug(domain),
                "parent": None,
                "status": "ACTIVE",
                "description": f"Requests about {name}.",
                "synonyms": [],
                "examples": examples,
            }
        )
        node_id = "N-out-of-scope" if is_oos else f"N-{slug(intent)}"
        node_of[intent] = node_id
        nodes.append(
            {
                "id": node_id,
                "type": "OutOfScope" if is_oos else "Info",
                "title": name.capitalize(),
                "chunk": (
                    "This assistant cannot help with that request."
                    if is_oos
                    else f"Answer for {name}: " + " / ".join(examples[:3])
                ),
                "risk": "low",
                "status": "ACTIVE",
                "labels": [label_id],
                "clusters": [slug(domain)],
                "preconditions": [],
                "parameters": [],
                "handler": "",
            }
        )
    pack = {
        "format": "arg-pack/1",
        "project": {
            "slug": project_slug,
            "name": "Routing benchmark",
            "description": "built from a train file",
        },
        "clusters": [{"key": k, "name": v, "description": ""} for k, v in sorted(clusters.items())],
        "labels": labels,
        "incompatibilities": [],
        "typologies": [
            {
                "key": "bench",
                "name": "Benchmark",
                "is_default": True,
                "response_style": "concise",
                "complexity_budget": 2,
                "max_depth": 2,
                "max_hops": 2,
                "beam_width": 2,
                "fast_path_eligible": True,
                "preferred_node_types": ["Info"],
                "weights": {"alpha": 0.1, "beta": 0.5, "gamma": 0.3, "delta": 0.1, "epsilon": 0.0},
            }
        ],
        "policies": [],
        "roles": [],
        "nodes": nodes,
        "edges": [],
        "aliases": [],
    }
    return pack, node_of
