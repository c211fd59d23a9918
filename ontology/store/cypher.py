"""Every Cypher statement the ``neo4j`` graph backend can send, as named constants.

Nothing else in the code base builds Cypher: the backend sends statements by name through
``Neo4jGraphStore._run``, which refuses parameters that differ from the declared ones, and CI lints
each entry of ``STATEMENTS`` with Neo4j's own parser (``tools/cypher-lint``: syntax, undefined
variables, undeclared parameters, unknown labels and relationship types).

Data model (Cypher 5):

* ``(:OntologyNode {project_id, generation, node_id, type, title, chunk, staff_notes, description, risk,
  status, status_reason, status_changed_at, labels: [LabelID], clusters: [cluster key], preconditions: [text],
  parameters_json: text, handler, products: [product key], embedding: [float] | absent, created_at,
  updated_at})`` — unique per
  (project_id, generation, node_id). Attachments are list properties; parameters (a list of maps,
  which Neo4j cannot store as a property) are JSON text.
* ``(:OntologyNode)-[:EDGE {type, weight, semantics}]->(:OntologyNode)`` — one relationship type whose
  ``type`` property holds the edge type. Relationship types cannot be query parameters, so a single
  type keeps every statement static (and lintable) and lets one index serve type filters. At most one
  EDGE per (source, target, type): the backend checks it in the writing transaction. Edges join nodes
  of one generation.
* ``(:NodeAlias {project_id, generation, source, targets: [node_id], reason, created_at})`` — one row of
  the split redirection table per source, unique per (project_id, generation, source).
* ``(:ProjectGraph {project_id, generation})`` — the project's *head*: which generation of its nodes
  and aliases is the project's graph (no head: generation 0). Every statement on a project's graph
  names the generation (``$generation``, read from the head in the same transaction). A large
  replacement writes a new generation beside the current one, in batches of their own transactions,
  and swaps it in by one write — the head's — whatever the graph's size; the old generation is then
  deleted in batches. Nodes of other generations are invisible to every statement.
"""

from __future__ import annotations

NODE_LABEL = "OntologyNode"
ALIAS_LABEL = "NodeAlias"
HEAD_LABEL = "ProjectGraph"
LABELS = (NODE_LABEL, ALIAS_LABEL, HEAD_LABEL)
EDGE_REL_TYPE = "EDGE"

# --- schema (manage.py graph_init_schema) ---------------------------------------------------------
# The uniqueness constraints (each backed by a range index that serves the key lookups of every
# statement below), an index on each graph's (project, generation), lookup indexes for the type /
# status filters and the edge type. No full-text or vector index: nothing reads the draft graph by text
# or by vector — node search is a substring match (on the draft here, on the active release in
# memory), and vector search runs on the release snapshot.
# A database written before generations existed is migrated in place: its keys on (project_id,
# node_id) are dropped (they would refuse a second generation of the same node) and its nodes and
# aliases become generation 0, the generation of a project without a head.

SCHEMA_DROP_NODE_KEY_V1 = "DROP CONSTRAINT ontology_node_key IF EXISTS"
SCHEMA_DROP_ALIAS_KEY_V1 = "DROP CONSTRAINT ontology_alias_key IF EXISTS"
SCHEMA_DROP_NODE_TYPE_INDEX_V1 = "DROP INDEX ontology_node_type IF EXISTS"
SCHEMA_DROP_NODE_STATUS_INDEX_V1 = "DROP INDEX ontology_node_status IF EXISTS"
SCHEMA_MIGRATE_GENERATION = (
    "MATCH (n) WHERE (n:OntologyNode OR n:NodeAlias) AND n.generation IS NULL "
    "CALL (n) { SET n.generation = 0 } IN TRANSACTIONS OF 10000 ROWS"
)
SCHEMA_NODE_KEY = (
    "CREATE CONSTRAINT ontology_node_generation_key IF NOT EXISTS "
    "FOR (n:OntologyNode) REQUIRE (n.project_id, n.generation, n.node_id) IS UNIQUE"
)
SCHEMA_ALIAS_KEY = (
    "CREATE CONSTRAINT ontology_alias_generation_key IF NOT EXISTS "
    "FOR (a:NodeAlias) REQUIRE (a.project_id, a.generation, a.source) IS UNIQUE"
)
SCHEMA_HEAD_KEY = (
    "CREATE CONSTRAINT ontology_graph_head_key IF NOT EXISTS "
    "FOR (h:ProjectGraph) REQUIRE h.project_id IS UNIQUE"
)
SCHEMA_NODE_GRAPH_INDEX = (
    "CREATE INDEX ontology_node_graph IF NOT EXISTS FOR (n:OntologyNode) ON (n.project_id, n.generation)"
)
SCHEMA_ALIAS_GRAPH_INDEX = (
    "CREATE INDEX ontology_alias_graph IF NOT EXISTS FOR (a:NodeAlias) ON (a.project_id, a.generation)"
)
SCHEMA_NODE_TYPE_INDEX = (
    "CREATE INDEX ontology_node_generation_type IF NOT EXISTS "
    "FOR (n:OntologyNode) ON (n.project_id, n.generation, n.type)"
)
SCHEMA_NODE_STATUS_INDEX = (
    "CREATE INDEX ontology_node_generation_status IF NOT EXISTS "
    "FOR (n:OntologyNode) ON (n.project_id, n.generation, n.status)"
)
SCHEMA_EDGE_TYPE_INDEX = "CREATE INDEX ontology_edge_type IF NOT EXISTS FOR ()-[r:EDGE]-() ON (r.type)"
# Indexes earlier versions created and nothing reads: dropped so that the schema is what the code uses.
SCHEMA_DROP_NODE_TEXT_INDEX = "DROP INDEX ontology_node_text IF EXISTS"
SCHEMA_DROP_NODE_VECTOR_INDEX = "DROP INDEX ontology_node_embedding IF EXISTS"
SCHEMA_STATEMENTS = (
    "SCHEMA_DROP_NODE_KEY_V1",
    "SCHEMA_DROP_ALIAS_KEY_V1",
    "SCHEMA_DROP_NODE_TYPE_INDEX_V1",
    "SCHEMA_DROP_NODE_STATUS_INDEX_V1",
    "SCHEMA_MIGRATE_GENERATION",
    "SCHEMA_NODE_KEY",
    "SCHEMA_ALIAS_KEY",
    "SCHEMA_HEAD_KEY",
    "SCHEMA_NODE_GRAPH_INDEX",
    "SCHEMA_ALIAS_GRAPH_INDEX",
    "SCHEMA_NODE_TYPE_INDEX",
    "SCHEMA_NODE_STATUS_INDEX",
    "SCHEMA_EDGE_TYPE_INDEX",
    "SCHEMA_DROP_NODE_TEXT_INDEX",
    "SCHEMA_DROP_NODE_VECTOR_INDEX",
)
# Statements that commit their own inner transactions: sent outside any explicit transaction.
AUTOCOMMIT_STATEMENTS = frozenset({"SCHEMA_MIGRATE_GENERATION"})

# --- the head (which generation is the project's graph) -------------------------------------------

GRAPH_GENERATION = (
    "OPTIONAL MATCH (h:ProjectGraph {project_id: $project_id}) RETURN coalesce(h.generation, 0) AS generation"
)
SET_GRAPH_GENERATION = "MERGE (h:ProjectGraph {project_id: $project_id}) SET h.generation = $generation"
# --- whole graph (replace_graph / export_graph) ---------------------------------------------------

DELETE_PROJECT_NODES = (
    "MATCH (n:OntologyNode {project_id: $project_id, generation: $generation}) DETACH DELETE n"
)
DELETE_PROJECT_ALIASES = "MATCH (a:NodeAlias {project_id: $project_id, generation: $generation}) DELETE a"
# A batch of the nodes (aliases) of a project's generations other than ``$keep``: what a large
# replacement leaves behind (the replaced generation; a staged one whose swap never committed).
DELETE_OTHER_NODES_BATCH = (
    "MATCH (n:OntologyNode {project_id: $project_id}) WHERE NOT n.generation IN $keep "
    "WITH n LIMIT $limit DETACH DELETE n"
)
DELETE_OTHER_ALIASES_BATCH = (
    "MATCH (a:NodeAlias {project_id: $project_id}) WHERE NOT a.generation IN $keep "
    "WITH a LIMIT $limit DELETE a"
)
CREATE_NODES = (
    "UNWIND $rows AS row "
    "CREATE (n:OntologyNode {project_id: $project_id, generation: $generation, node_id: row.node_id}) "
    "SET n += row.props, n.created_at = $now, n.updated_at = $now, n.status_changed_at = $now"
)
CREATE_EDGES = (
    "UNWIND $rows AS row "
    "MATCH (s:OntologyNode {project_id: $project_id, generation: $generation, node_id: row.source}) "
    "MATCH (t:OntologyNode {project_id: $project_id, generation: $generation, node_id: row.target}) "
    "CREATE (s)-[:EDGE {type: row.type, weight: row.weight, semantics: row.semantics}]->(t)"
)
CREATE_ALIASES = (
    "UNWIND $rows AS row "
    "CREATE (:NodeAlias {project_id: $project_id, generation: $generation, source: row.source, "
    "targets: row.targets, reason: row.reason, created_at: $now})"
)
EXPORT_NODES = (
    "MATCH (n:OntologyNode {project_id: $project_id, generation: $generation}) "
    "RETURN n {.*} AS node ORDER BY n.node_id"
)
EXPORT_EDGES = (
    "MATCH (s:OntologyNode {project_id: $project_id, generation: $generation})-[r:EDGE]->(t:OntologyNode) "
    "RETURN s.node_id AS source, t.node_id AS target, r.type AS type, r.weight AS weight, "
    "r.semantics AS semantics ORDER BY source, target, type"
)
EXPORT_ALIASES = (
    "MATCH (a:NodeAlias {project_id: $project_id, generation: $generation}) "
    "RETURN a.source AS source, a.targets AS targets, a.reason AS reason ORDER BY source"
)

# --- nodes ----------------------------------------------------------------------------------------

GET_NODE = (
    "MATCH (n:OntologyNode {project_id: $project_id, generation: $generation, node_id: $node_id}) "
    "RETURN n {.*} AS node"
)
NODE_STATE = (
    "MATCH (n:OntologyNode {project_id: $project_id, generation: $generation, node_id: $node_id}) "
    "RETURN n.status AS status, COUNT { (n)-[:EDGE]-() } AS touching"
)
NODE_STATUSES = (
    "MATCH (n:OntologyNode {project_id: $project_id, generation: $generation}) WHERE n.node_id IN $node_ids "
    "RETURN n.node_id AS node_id, n.status AS status"
)
CREATE_NODE = (
    "CREATE (n:OntologyNode {project_id: $project_id, generation: $generation, node_id: $node_id}) "
    "SET n += $props, n.created_at = $now, n.updated_at = $now, n.status_changed_at = $now"
)
UPDATE_NODE = (
    "MATCH (n:OntologyNode {project_id: $project_id, generation: $generation, node_id: $node_id}) "
    "SET n.status_changed_at = CASE WHEN n.status = $props.status THEN n.status_changed_at ELSE $now END "
    "SET n += $props, n.updated_at = $now"
)
SET_NODE_STATUS = (
    "MATCH (n:OntologyNode {project_id: $project_id, generation: $generation, node_id: $node_id}) "
    "SET n.status_changed_at = CASE WHEN n.status = $status THEN n.status_changed_at ELSE $now END "
    "SET n.status = $status, n.status_reason = $reason, n.updated_at = $now"
)

_LIST_NODES_MATCH = (
    "MATCH (n:OntologyNode {project_id: $project_id, generation: $generation}) "
    "WHERE ($type IS NULL OR n.type = $type) AND ($status IS NULL OR n.status = $status) "
    "AND ($label IS NULL OR $label IN n.labels) "
    "AND ($search IS NULL OR toLower(n.title) CONTAINS $search OR toLower(n.node_id) CONTAINS $search) "
)
LIST_NODES = _LIST_NODES_MATCH + "RETURN n {.*} AS node ORDER BY n.node_id SKIP $offset LIMIT $limit"
COUNT_LIST_NODES = _LIST_NODES_MATCH + "RETURN count(n) AS n"

# --- edges ----------------------------------------------------------------------------------------

EDGE_EXISTS = (
    "MATCH (:OntologyNode {project_id: $project_id, generation: $generation, node_id: $source})"
    "-[r:EDGE {type: $type}]->"
    "(:OntologyNode {project_id: $project_id, generation: $generation, node_id: $target}) RETURN count(r) AS n"
)
CREATE_EDGE = (
    "MATCH (s:OntologyNode {project_id: $project_id, generation: $generation, node_id: $source}) "
    "MATCH (t:OntologyNode {project_id: $project_id, generation: $generation, node_id: $target}) "
    "CREATE (s)-[:EDGE {type: $type, weight: $weight, semantics: $semantics}]->(t)"
)
DELETE_EDGE = (
    "MATCH (:OntologyNode {project_id: $project_id, generation: $generation, node_id: $source})"
    "-[r:EDGE {type: $type}]->"
    "(:OntologyNode {project_id: $project_id, generation: $generation, node_id: $target}) DELETE r"
)
_NEIGHBOUR_RETURN = (
    "WHERE $edge_types IS NULL OR r.type IN $edge_types "
    "RETURN s.node_id AS source, t.node_id AS target, r.type AS type, r.weight AS weight, "
    "r.semantics AS semantics ORDER BY source, target, type"
)
NEIGHBOURS_OUT = (
    "MATCH (s:OntologyNode {project_id: $project_id, generation: $generation, node_id: $node_id})"
    "-[r:EDGE]->(t:OntologyNode) " + _NEIGHBOUR_RETURN
)
NEIGHBOURS_IN = (
    "MATCH (s:OntologyNode)-[r:EDGE]->"
    "(t:OntologyNode {project_id: $project_id, generation: $generation, node_id: $node_id}) "
    + _NEIGHBOUR_RETURN
)
NEIGHBOURS_BOTH = (
    "MATCH (n:OntologyNode {project_id: $project_id, generation: $generation, node_id: $node_id})"
    "-[r:EDGE]-(:OntologyNode) "
    "WITH r, startNode(r) AS s, endNode(r) AS t " + _NEIGHBOUR_RETURN
)

# --- aliases --------------------------------------------------------------------------------------

MERGE_ALIAS = (
    "MERGE (a:NodeAlias {project_id: $project_id, generation: $generation, source: $source}) "
    "SET a.targets = $targets, a.reason = $reason, a.created_at = $now"
)
ALIAS_ROWS = (
    "MATCH (a:NodeAlias {project_id: $project_id, generation: $generation}) WHERE a.source IN $sources "
    "RETURN a.source AS source, a.targets AS targets"
)

# --- counts ---------------------------------------------------------------------------------------

COUNT_NODES = (
    "MATCH (n:OntologyNode {project_id: $project_id, generation: $generation}) "
    "RETURN n.type AS type, n.status AS status, count(*) AS n"
)
COUNT_EDGES = (
    "MATCH (:OntologyNode {project_id: $project_id, generation: $generation})-[r:EDGE]->() "
    "RETURN count(r) AS n"
)
COUNT_ALIASES = "MATCH (a:NodeAlias {project_id: $project_id, generation: $generation}) RETURN count(a) AS n"

_P = ("project_id",)
_PG = ("project_id", "generation")

STATEMENTS: dict[str, tuple[str, tuple[str, ...]]] = {
    **{name: (globals()[name], ()) for name in SCHEMA_STATEMENTS},
    "GRAPH_GENERATION": (GRAPH_GENERATION, _P),
    "SET_GRAPH_GENERATION": (SET_GRAPH_GENERATION, _PG),
    "DELETE_PROJECT_NODES": (DELETE_PROJECT_NODES, _PG),
    "DELETE_PROJECT_ALIASES": (DELETE_PROJECT_ALIASES, _PG),
    "DELETE_OTHER_NODES_BATCH": (DELETE_OTHER_NODES_BATCH, ("project_id", "keep", "limit")),
    "DELETE_OTHER_ALIASES_BATCH": (DELETE_OTHER_ALIASES_BATCH, ("project_id", "keep", "limit")),
    "CREATE_NODES": (CREATE_NODES, ("project_id", "generation", "rows", "now")),
    "CREATE_EDGES": (CREATE_EDGES, ("project_id", "generation", "rows")),
    "CREATE_ALIASES": (CREATE_ALIASES, ("project_id", "generation", "rows", "now")),
    "EXPORT_NODES": (EXPORT_NODES, _PG),
    "EXPORT_EDGES": (EXPORT_EDGES, _PG),
    "EXPORT_ALIASES": (EXPORT_ALIASES, _PG),
    "GET_NODE": (GET_NODE, ("project_id", "generation", "node_id")),
    "NODE_STATE": (NODE_STATE, ("project_id", "generation", "node_id")),
    "LIST_NODES": (
        LIST_NODES,
        ("project_id", "generation", "type", "status", "label", "search", "offset", "limit"),
    ),
    "COUNT_LIST_NODES": (COUNT_LIST_NODES, ("project_id", "generation", "type", "status", "label", "search")),
    "NODE_STATUSES": (NODE_STATUSES, ("project_id", "generation", "node_ids")),
    "CREATE_NODE": (CREATE_NODE, ("project_id", "generation", "node_id", "props", "now")),
    "UPDATE_NODE": (UPDATE_NODE, ("project_id", "generation", "node_id", "props", "now")),
    "SET_NODE_STATUS": (SET_NODE_STATUS, ("project_id", "generation", "node_id", "status", "reason", "now")),
    "EDGE_EXISTS": (EDGE_EXISTS, ("project_id", "generation", "source", "target", "type")),
    "CREATE_EDGE": (
        CREATE_EDGE,
        ("project_id", "generation", "source", "target", "type", "weight", "semantics"),
    ),
    "DELETE_EDGE": (DELETE_EDGE, ("project_id", "generation", "source", "target", "type")),
    "NEIGHBOURS_OUT": (NEIGHBOURS_OUT, ("project_id", "generation", "node_id", "edge_types")),
    "NEIGHBOURS_IN": (NEIGHBOURS_IN, ("project_id", "generation", "node_id", "edge_types")),
    "NEIGHBOURS_BOTH": (NEIGHBOURS_BOTH, ("project_id", "generation", "node_id", "edge_types")),
    "MERGE_ALIAS": (MERGE_ALIAS, ("project_id", "generation", "source", "targets", "reason", "now")),
    "ALIAS_ROWS": (ALIAS_ROWS, ("project_id", "generation", "sources")),
    "COUNT_NODES": (COUNT_NODES, _PG),
    "COUNT_EDGES": (COUNT_EDGES, _PG),
    "COUNT_ALIASES": (COUNT_ALIASES, _PG),
}
