"""The request's product (``context.product``): routing narrowed to the nodes of that product.

A knowledge pack *declares products* when some of its nodes carry ``products: [key, …]`` — the product
keys a node is specific to; a node without ``products`` holds for every product. A release's *declared
products* are the union of its nodes' product keys.

When the release declares products and a request names one of them, the request's policy constraints
carry it (``PolicyConstraints.product``) and every hard node gate of the request — landing, traversal
(``graph_index.NodeGate``) and the Info answer's context (``info.evidence.node_admitted``) — admits
only the nodes tagged with that product or with none. A product the release does not declare is bad
input (``request.product_unknown``, 400, checked in the envelope). A release that declares no products
ignores ``context.product`` (it may still be an Action's ``source: context`` parameter).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from inference.contracts import PolicyDecision


def node_products(extras: Mapping[str, Any]) -> tuple[str, ...]:
    """The product keys a node of a snapshot is specific to (its ``extras``), empty for every product."""
    return tuple(extras.get("products") or ())


def declared_products(extras: Iterable[Mapping[str, Any]]) -> frozenset[str]:
    """The union of the nodes' product keys: what a release declares."""
    return frozenset(p for e in extras for p in node_products(e))


def excluded_by_product(extras: Iterable[Mapping[str, Any]]) -> dict[str, np.ndarray]:
    """Per declared product, the boolean mask over node positions of the nodes it excludes: those
    tagged with products, none of them this one."""
    tags = [frozenset(node_products(e)) for e in extras]
    products = sorted(frozenset().union(*tags)) if tags else []
    out: dict[str, np.ndarray] = {}
    for product in products:
        mask = np.fromiter((bool(t) and product not in t for t in tags), dtype=bool, count=len(tags))
        mask.flags.writeable = False
        out[product] = mask
    return out


def admits_node_product(product: str | None, extras: Mapping[str, Any]) -> bool:
    """Whether a node may serve a request of ``product`` (None: any node)."""
    tags = node_products(extras)
    return product is None or not tags or product in tags


def narrowed(decision: PolicyDecision, product: str | None, declared: frozenset[str]) -> PolicyDecision:
    """``decision`` with its constraints narrowed to ``product`` when the release declares it."""
    if not product or product not in declared:
        return decision
    return replace(decision, constraints=replace(decision.constraints, product=product))
