"""Vocabulary of the ARG protocol's ontology graph (ARG §0.1): node types, edge types, risk levels, node
lifecycle. Shared by every app: typologies name node types, the graph store and the pipeline use them all."""

from __future__ import annotations

import enum


class NodeType(enum.StrEnum):
    """Type of a terminal operational unit of the graph."""

    DECISION = "Decision"
    INFO = "Info"
    ACTION = "Action"
    MEMORY_READ = "MemoryRead"
    MEMORY_WRITE = "MemoryWrite"
    SHORTCUT = "Shortcut"
    FAQ = "FAQ"
    DIRECT_ACTION = "DirectAction"
    INFO_STABLE = "InfoStable"
    CLARIFY = "Clarify"
    OUT_OF_SCOPE = "OutOfScope"


NODE_TYPES: frozenset[str] = frozenset(t.value for t in NodeType)


class EdgeType(enum.StrEnum):
    """Typed directed "movement grammar" between nodes."""

    LEADS_TO = "LEADS_TO"
    REQUIRES = "REQUIRES"
    CLARIFIES = "CLARIFIES"
    ELABORATES = "ELABORATES"
    ALTERNATIVE_TO = "ALTERNATIVE_TO"
    ESCALATES_TO = "ESCALATES_TO"
    SHORTCUT_TO = "SHORTCUT_TO"
    RELATED_TO = "RELATED_TO"
    READS_MEMORY = "READS_MEMORY"
    WRITES_MEMORY = "WRITES_MEMORY"


EDGE_TYPES: frozenset[str] = frozenset(t.value for t in EdgeType)


class RiskLevel(enum.StrEnum):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


class NodeStatus(enum.StrEnum):
    """Lifecycle of a node: ACTIVE → DEPRECATED → REMOVED (ARG §3.5)."""

    ACTIVE = "ACTIVE"
    DEPRECATED = "DEPRECATED"
    REMOVED = "REMOVED"


# Sorted value lists, shared by serializers and the OpenAPI enum names.
NODE_TYPE_CHOICES: list[str] = sorted(NODE_TYPES)
EDGE_TYPE_CHOICES: list[str] = sorted(EDGE_TYPES)
NODE_STATUS_CHOICES: list[str] = [s.value for s in NodeStatus]

# The declared types of Action parameters and where their values come from
# (docs/knowledge-pack-format.md, "Action parameters"; ``ontology.store.port.ParameterSpec``).
PARAMETER_TYPES: frozenset[str] = frozenset(
    {
        "string",
        "integer",
        "number",
        "boolean",
        "list",
        "map",
        "datetime",
        "date",
        "email",
        "identifier",
        "enum",
    }
)
PARAMETER_SOURCES: frozenset[str] = frozenset({"prompt", "context"})
