"""The ``GraphStore`` port (every graph read and write goes through it) and the factory of the configured
backend.

Backends: ``sql`` (Django ORM tables, the embedded default) and ``neo4j`` (official driver). Both are
reached only through ``get_graph_store()``; one instance per process (for neo4j: one driver per
process, created lazily so Celery prefork children create their own after fork).
"""

from __future__ import annotations

import os
import threading

from django.conf import settings

from .port import AliasData, EdgeData, GraphData, GraphStore, NodeData, ParameterSpec, StoreHealth

_store: GraphStore | None = None
_store_pid: int | None = None
_lock = threading.Lock()


def get_graph_store() -> GraphStore:
    global _store, _store_pid
    if _store is None or _store_pid != os.getpid():
        with _lock:
            if _store is None or _store_pid != os.getpid():
                if settings.GRAPH_BACKEND == "neo4j":
                    from .neo4j_backend import Neo4jGraphStore

                    _store = Neo4jGraphStore.from_settings()
                else:
                    from .sql_backend import SqlGraphStore

                    _store = SqlGraphStore()
                _store_pid = os.getpid()
    return _store


__all__ = [
    "AliasData",
    "EdgeData",
    "GraphData",
    "GraphStore",
    "NodeData",
    "ParameterSpec",
    "StoreHealth",
    "get_graph_store",
]
