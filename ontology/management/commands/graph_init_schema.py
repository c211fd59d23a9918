"""``manage.py graph_init_schema``: create the Neo4j constraints and indexes of the graph store."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = (
        "Create the neo4j backend's uniqueness constraints ((project_id, node_id) of :OntologyNode, "
        "(project_id, source) of :NodeAlias) and its lookup, full-text and vector indexes. Idempotent "
        "(IF NOT EXISTS). Needs ARG_GRAPH_BACKEND=neo4j or --uri."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--uri", default="", help="Neo4j URI (default: NEO4J_URI from settings)")

    def handle(self, *args: Any, **options: Any) -> None:
        from ontology.store.neo4j_backend import Neo4jGraphStore

        uri = options["uri"] or settings.NEO4J_URI
        if not uri:
            raise CommandError("no Neo4j to talk to: set NEO4J_URI or pass --uri")
        store = Neo4jGraphStore(
            uri=uri,
            user=settings.NEO4J_USER,
            password=settings.NEO4J_PASSWORD,
            database=settings.NEO4J_DATABASE,
        )
        try:
            for name in store.init_schema():
                self.stdout.write(f"ok {name}")
        except Exception as exc:
            raise CommandError(f"graph_init_schema failed: {type(exc).__name__}: {exc}") from exc
        finally:
            store.close()
        self.stdout.write(self.style.SUCCESS("graph schema ready"))
