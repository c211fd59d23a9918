"""``manage.py graph_init_schema``: create the graph store's constraints and indexes (idempotent).

Every deploy path runs it before serving (docker compose's ``web`` command, ``make run GRAPH=neo4j``):
on the ``neo4j`` backend it creates the uniqueness constraints and the lookup indexes
(``IF NOT EXISTS``, so a second run changes nothing); on the ``sql`` backend the migrations made the
tables and their indexes, and it says so.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = (
        "Create the neo4j backend's uniqueness constraints ((project_id, node_id) of :OntologyNode, "
        "(project_id, source) of :NodeAlias) and its lookup indexes. Idempotent "
        "(IF NOT EXISTS). With the sql backend there is nothing to do (the migrations made the tables)."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--uri", default="", help="Neo4j URI (default: NEO4J_URI from settings)")

    def handle(self, *args: Any, **options: Any) -> None:
        from ontology.store.neo4j_backend import Neo4jGraphStore

        if settings.GRAPH_BACKEND != "neo4j" and not options["uri"]:
            self.stdout.write("graph backend sql: the graph lives in the database's tables; nothing to do")
            return
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
