"""The ``neo4j`` graph backend: the official driver, one per process, managed transactions."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from .port import StoreHealth


class Neo4jGraphStore:
    backend = "neo4j"

    def __init__(self, *, uri: str, user: str, password: str, database: str) -> None:
        from neo4j import GraphDatabase

        self.database = database
        self.driver: Any = GraphDatabase.driver(uri, auth=(user, password), connection_timeout=5,
                                                max_connection_lifetime=3600)

    @classmethod
    def from_settings(cls) -> Neo4jGraphStore:
        return cls(uri=settings.NEO4J_URI, user=settings.NEO4J_USER, password=settings.NEO4J_PASSWORD,
                   database=settings.NEO4J_DATABASE)

    def health(self) -> StoreHealth:
        try:
            self.driver.verify_connectivity()
            info = self.driver.get_server_info()
            return StoreHealth(self.backend, True, "ok", {"server": str(info.agent), "database": self.database})
        except Exception as exc:
            return StoreHealth(self.backend, False, f"{type(exc).__name__}: {exc}")

    def close(self) -> None:
        self.driver.close()
