"""The ontology graph in the browser: node list, node pages with their neighbourhood picture, expert
edits of the draft (nodes, edges, lifecycle), and releases (publish, activate/rollback, diff).

Same conventions as the curation UI (``taxonomy.views``): server-rendered pages, htmx fragments from
the same views, forms that check shape and services that judge rules (refusals in place, status 422).
"""

from .edges import edge_add, edge_remove, edge_targets, edge_update
from .nodes import node_create, node_detail, node_edit, node_list, node_picture, node_status
from .releases import (
    release_activate,
    release_ask_threshold,
    release_diff,
    release_list,
    release_publish,
    release_publish_ask,
    release_publish_dismiss,
)

__all__ = [
    "edge_add",
    "edge_remove",
    "edge_targets",
    "edge_update",
    "node_create",
    "node_detail",
    "node_edit",
    "node_list",
    "node_picture",
    "node_status",
    "release_activate",
    "release_ask_threshold",
    "release_diff",
    "release_list",
    "release_publish",
    "release_publish_ask",
    "release_publish_dismiss",
]
