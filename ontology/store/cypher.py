"""Every Cypher statement the ``neo4j`` graph backend can send, as named constants.

Nothing else in the code base builds Cypher: the backend sends statements by name through
``Neo4jGraphStore._run``, which refuses parameters that differ from the declared ones, and CI lints
each entry of ``STATEMENTS`` with Neo4j's own parser (``tools/cypher-lint``: syntax, undefined
variables, undeclared parameters, unknown labels and relationship types).

Data model (Cypher 5):

* ``(:OntologyNode {project_id, node_id, type, title, chunk, risk, status, status_reason,
  status_changed_at, labels: [LabelID], clusters: [cluster key], preconditions: [text],
  parameters_json: text, handler, embedding: [float] | absent, created_at, updated_at})`` — unique per
  (project_id, node_id). Attachments are list properties; parameters (a list of maps, which Neo4j
  cannot store as a property) are JSON text.
* ``(:OntologyNode)-[:EDGE {type, weight, semantics}]->(:OntologyNode)`` — one relationship type whose
  ``type`` property holds the edge type. Relationship types cannot be query parameters, so a single
  type keeps every statement static (and lintable) and lets one index serve type filters. At most one
  EDGE per (source, target, type): the backend checks it in the writing transaction.
* ``(:NodeAlias {project_id, source, targets: [node_id], reason, created_at})`` — one row of the split
  redirection table per source, unique per (project_id, source).
"""

from __future__ import annotations

NODE_LABEL = "OntologyNode"
ALIAS_LABEL = "NodeAlias"
EDGE_REL_TYPE = "EDGE"

# --- schema (manage.py graph_init_schema) ---------------------------------------------------------
# The two uniqueness constraints (each backed by a range index that serves the key lookups of every
# statement below) and lookup indexes for the type / status filters and the edge type. No full-text or
# vector index: nothing reads the draft graph by text or by vector — node search is a substring match
# (on the draft here, on the active release in memory), and vector search runs on the release snapshot.

SCHEMA_NODE_KEY = (
    "CREATE CONSTRAINT ontology_node_key IF NOT EXISTS "
    "FOR (n:OntologyNode) REQUIRE (n.project_id, n.node_id) IS UNIQUE"
)
SCHEMA_ALIAS_KEY = (
    "CREATE CONSTRAINT ontology_alias_key IF NOT EXISTS "
    "FOR (a:NodeAlias) REQUIRE (a.project_id, a.source) IS UNIQUE"
)
SCHEMA_NODE_TYPE_INDEX = (
    "CREATE INDEX ontology_node_type IF NOT EXISTS FOR (n:OntologyNode) ON (n.project_id, n.type)"
)
SCHEMA_NODE_STATUS_INDEX = (
    "CREATE INDEX ontology_node_status IF NOT EXISTS FOR (n:OntologyNode) ON (n.project_id, n.status)"
)
SCHEMA_EDGE_TYPE_INDEX = "CREATE INDEX ontology_edge_type IF NOT EXISTS FOR ()-[r:EDGE]-() ON (r.type)"
# Indexes earlier versions created and nothing reads: dropped so that the schema is what the code uses.
SCHEMA_DROP_NODE_TEXT_INDEX = "DROP INDEX ontology_node_text IF EXISTS"
SCHEMA_DROP_NODE_VECTOR_INDEX = "DROP INDEX ontology_node_embedding IF EXISTS"
SCHEMA_STATEMENTS = (
    "SCHEMA_NODE_KEY",
    "SCHEMA_ALIAS_KEY",
    "SCHEMA_NODE_TYPE_INDEX",
    "SCHEMA_NODE_STATUS_INDEX",
    "SCHEMA_EDGE_TYPE_INDEX",
    "SCHEMA_DROP_NODE_TEXT_INDEX",
    "SCHEMA_DROP_NODE_VECTOR_INDEX",
)

# --- whole graph (replace_graph / export_graph) ---------------------------------------------------

DELETE_PROJECT_NODES = "MATCH (n:OntologyNode {project_id: $project_id}) DETACH DELETE n"
DELETE_PROJECT_ALIASES = "MATCH (a:NodeAlias {project_id: $project_id}) DELETE a"
# A large replacement (Neo4jGraphStore.replace_graph): a batch of a staged or tombstoned graph deleted
# per transaction, and a whole graph moved from one key to another by one property write per node.
DELETE_NODES_BATCH = "MATCH (n:OntologyNode {project_id: $project_id}) WITH n LIMIT $limit DETACH DELETE n"
MOVE_PROJECT_NODES = "MATCH (n:OntologyNode {project_id: $project_id}) SET n.project_id = $to"
MOVE_PROJECT_ALIASES = "MATCH (a:NodeAlias {project_id: $project_id}) SET a.project_id = $to"
CREATE_NODES = (
    "UNWIND $rows AS row "
    "CREATE (n:OntologyNode {project_id: $project_id, node_id: row.node_id}) "
    "SET n += row.props, n.created_at = $now, n.updated_at = $now, n.status_changed_at = $now"
)
CREATE_EDGES = (
    "UNWIND $rows AS row "
    "MATCH (s:OntologyNode {project_id: $project_id, node_id: row.source}) "
    "MATCH (t:OntologyNode {project_id: $project_id, node_id: row.target}) "
    "CREATE (s)-[:EDGE {type: row.type, weight: row.weight, semantics: row.semantics}]->(t)"
)
CREATE_ALIASES = (
    "UNWIND $rows AS row "
    "CREATE (:NodeAlias {project_id: $project_id, source: row.source, targets: row.targets, "
    "reason: row.reason, created_at: $now})"
)
EXPORT_NODES = "MATCH (n:OntologyNode {project_id: $project_id}) RETURN n {.*} AS node ORDER BY n.node_id"
EXPORT_EDGES = (
    "MATCH (s:OntologyNode {project_id: $project_id})-[r:EDGE]->(t:OntologyNode) "
    "RETURN s.node_id AS source, t.node_id AS target, r.type AS type, r.weight AS weight, "
    "r.semantics AS semantics ORDER BY source, target, type"
)
EXPORT_ALIASES = (
    "MATCH (a:NodeAlias {project_id: $project_id}) "
    "RETURN a.source AS source, a.targets AS targets, a.reason AS reason ORDER BY source"
)

# --- nodes ----------------------------------------------------------------------------------------

GET_NODE = "MATCH (n:OntologyNode {project_id: $project_id, node_id: $node_id}) RETURN n {.*} AS node"
NODE_STATE = (
    "MATCH (n:OntologyNode {project_id: $project_id, node_id: $node_id}) "
    "RETURN n.status AS status, COUNT { (n)-[:EDGE]-() } AS touching"
)
NODE_STATUSES = (
    "MATCH (n:OntologyNode {project_id: $project_id}) WHERE n.node_id IN $node_ids "
    "RETURN n.node_id AS node_id, n.status AS status"
)
CREATE_NODE = (
    "CREATE (n:OntologyNode {project_id: $project_id, node_id: $node_id}) "
    "SET n += $props, n.created_at = $now, n.updated_at = $now, n.status_changed_at = $now"
)
UPDATE_NODE = (
    "MATCH (n:OntologyNode {project_id: $project_id, node_id: $node_id}) "
    "SET n.status_changed_at = CASE WHEN n.status = $props.status THEN n.status_changed_at ELSE $now END "
    "SET n += $props, n.updated_at = $now"
)
SET_NODE_STATUS = (
    "MATCH (n:OntologyNode {project_id: $project_id, node_id: $node_id}) "
    "SET n.status_changed_at = CASE WHEN n.status = $status THEN n.status_changed_at ELSE $now END "
    "SET n.status = $status, n.status_reason = $reason, n.updated_at = $now"
)

_LIST_NODES_MATCH = (
    "MATCH (n:OntologyNode {project_id: $project_id}) "
    "WHERE ($type IS NULL OR n.type = $type) AND ($status IS NULL OR n.status = $status) "
    "AND ($label IS NULL OR $label IN n.labels) "
    "AND ($search IS NULL OR toLower(n.title) CONTAINS $search OR toLower(n.node_id) CONTAINS $search) "
)
LIST_NODES = _LIST_NODES_MATCH + "RETURN n {.*} AS node ORDER BY n.node_id SKIP $offset LIMIT $limit"
COUNT_LIST_NODES = _LIST_NODES_MATCH + "RETURN count(n) AS n"

# --- edges ----------------------------------------------------------------------------------------

EDGE_EXISTS = (
    "MATCH (:OntologyNode {project_id: $project_id, node_id: $source})-[r:EDGE {type: $type}]->"
    "(:OntologyNode {project_id: $project_id, node_id: $target}) RETURN count(r) AS n"
)
CREATE_EDGE = (
    "MATCH (s:OntologyNode {project_id: $project_id, node_id: $source}) "
    "MATCH (t:OntologyNode {project_id: $project_id, node_id: $target}) "
    "CREATE (s)-[:EDGE {type: $type, weight: $weight, semantics: $semantics}]->(t)"
)
DELETE_EDGE = (
    "MATCH (:OntologyNode {project_id: $project_id, node_id: $source})-[r:EDGE {type: $type}]->"
    "(:OntologyNode {project_id: $project_id, node_id: $target}) DELETE r"
)
_NEIGHBOUR_RETURN = (
    "WHERE $edge_types IS NULL OR r.type IN $edge_types "
    "RETURN s.node_id AS source, t.node_id AS target, r.type AS type, r.weight AS weight, "
    "r.semantics AS semantics ORDER BY source, target, type"
)
NEIGHBOURS_OUT = (
    "MATCH (s:OntologyNode {project_id: $project_id, node_id: $node_id})-[r:EDGE]->(t:OntologyNode) "
    + _NEIGHBOUR_RETURN
)
NEIGHBOURS_IN = (
    "MATCH (s:OntologyNode)-[r:EDGE]->(t:OntologyNode {project_id: $project_id, node_id: $node_id}) "
    + _NEIGHBOUR_RETURN
)
NEIGHBOURS_BOTH = (
    "MATCH (n:OntologyNode {project_id: $project_id, node_id: $node_id})-[r:EDGE]-(:OntologyNode) "
    "WITH r, startNode(r) AS s, endNode(r) AS t " + _NEIGHBOUR_RETURN
)

# --- aliases --------------------------------------------------------------------------------------

MERGE_ALIAS = (
    "MERGE (a:NodeAlias {project_id: $project_id, source: $source}) "
    "SET a.targets = $targets, a.reason = $reason, a.created_at = $now"
)
ALIAS_ROWS = (
    "MATCH (a:NodeAlias {project_id: $project_id}) WHERE a.source IN $sources "
    "RETURN a.source AS source, a.targets AS targets"
)

# --- counts ---------------------------------------------------------------------------------------

COUNT_NODES = (
    "MATCH (n:OntologyNode {project_id: $project_id}) "
    "RETURN n.type AS type, n.status AS status, count(*) AS n"
)
COUNT_EDGES = "MATCH (:OntologyNode {project_id: $project_id})-[r:EDGE]->() RETURN count(r) AS n"
COUNT_ALIASES = "MATCH (a:NodeAlias {project_id: $project_id}) RETURN count(a) AS n"

_P = ("project_id",)

STATEMENTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "SCHEMA_NODE_KEY": (SCHEMA_NODE_KEY, ()),
    "SCHEMA_ALIAS_KEY": (SCHEMA_ALIAS_KEY, ()),
    "SCHEMA_NODE_TYPE_INDEX": (SCHEMA_NODE_TYPE_INDEX, ()),
    "SCHEMA_NODE_STATUS_INDEX": (SCHEMA_NODE_STATUS_INDEX, ()),
    "SCHEMA_EDGE_TYPE_INDEX": (SCHEMA_EDGE_TYPE_INDEX, ()),
    "SCHEMA_DROP_NODE_TEXT_INDEX": (SCHEMA_DROP_NODE_TEXT_INDEX, ()),
    "SCHEMA_DROP_NODE_VECTOR_INDEX": (SCHEMA_DROP_NODE_VECTOR_INDEX, ()),
    "DELETE_PROJECT_NODES": (DELETE_PROJECT_NODES, _P),
    "DELETE_PROJECT_ALIASES": (DELETE_PROJECT_ALIASES, _P),
    "DELETE_NODES_BATCH": (DELETE_NODES_BATCH, ("project_id", "limit")),
    "MOVE_PROJECT_NODES": (MOVE_PROJECT_NODES, ("project_id", "to")),
    "MOVE_PROJECT_ALIASES": (MOVE_PROJECT_ALIASES, ("project_id", "to")),
    "CREATE_NODES": (CREATE_NODES, ("project_id", "rows", "now")),
    "CREATE_EDGES": (CREATE_EDGES, ("project_id", "rows")),
    "CREATE_ALIASES": (CREATE_ALIASES, ("project_id", "rows", "now")),
    "EXPORT_NODES": (EXPORT_NODES, _P),
    "EXPORT_EDGES": (EXPORT_EDGES, _P),
    "EXPORT_ALIASES": (EXPORT_ALIASES, _P),
    "GET_NODE": (GET_NODE, ("project_id", "node_id")),
    "NODE_STATE": (NODE_STATE, ("project_id", "node_id")),
    "LIST_NODES": (LIST_NODES, ("project_id", "type", "status", "label", "search", "offset", "limit")),
    "COUNT_LIST_NODES": (COUNT_LIST_NODES, ("project_id", "type", "status", "label", "search")),
    "NODE_STATUSES": (NODE_STATUSES, ("project_id", "node_ids")),
    "CREATE_NODE": (CREATE_NODE, ("project_id", "node_id", "props", "now")),
    "UPDATE_NODE": (UPDATE_NODE, ("project_id", "node_id", "props", "now")),
    "SET_NODE_STATUS": (SET_NODE_STATUS, ("project_id", "node_id", "status", "reason", "now")),
    "EDGE_EXISTS": (EDGE_EXISTS, ("project_id", "source", "target", "type")),
    "CREATE_EDGE": (CREATE_EDGE, ("project_id", "source", "target", "type", "weight", "semantics")),
    "DELETE_EDGE": (DELETE_EDGE, ("project_id", "source", "target", "type")),
    "NEIGHBOURS_OUT": (NEIGHBOURS_OUT, ("project_id", "node_id", "edge_types")),
    "NEIGHBOURS_IN": (NEIGHBOURS_IN, ("project_id", "node_id", "edge_types")),
    "NEIGHBOURS_BOTH": (NEIGHBOURS_BOTH, ("project_id", "node_id", "edge_types")),
    "MERGE_ALIAS": (MERGE_ALIAS, ("project_id", "source", "targets", "reason", "now")),
    "ALIAS_ROWS": (ALIAS_ROWS, ("project_id", "sources")),
    "COUNT_NODES": (COUNT_NODES, _P),
    "COUNT_EDGES": (COUNT_EDGES, _P),
    "COUNT_ALIASES": (COUNT_ALIASES, _P),
}
