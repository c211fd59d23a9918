"""The ontology nodes attached to a label, as the taxonomy sees them.

The taxonomy sits below the ontology and does not import it: the ontology app registers the reader
(``ontology.selectors.nodes_for_label``) when it is ready. The label page lists these nodes, and a label
with ACTIVE nodes attached cannot be deprecated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AttachedNode:
    """A node attached to a label: its id, type and title."""

    node_id: str
    type: str
    title: str


NodesReader = Callable[..., list[Any]]
_reader: NodesReader | None = None


def attached_nodes_reader_set(reader: NodesReader) -> None:
    """Register ``reader(project=, label_id=, status=, limit=)``, returning nodes with ``node_id``, ``type``
    and ``title``."""
    global _reader
    _reader = reader


def attached_nodes(
    *, project: Any, label_id: str, status: str | None = None, limit: int
) -> list[AttachedNode]:
    """At most ``limit`` nodes of the project's draft graph attached to ``label_id`` (of ``status`` when
    given), by node id."""
    if _reader is None:
        raise RuntimeError("no attached-nodes reader: the ontology app registers one when it is ready")
    return [
        AttachedNode(node.node_id, node.type, node.title)
        for node in _reader(project=project, label_id=label_id, status=status, limit=limit)
    ]
