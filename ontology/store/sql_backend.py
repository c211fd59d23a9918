"""The ``sql`` graph backend: the ontology graph as node/edge/attachment tables in the Django database."""

from __future__ import annotations

from django.db import connection

from .port import StoreHealth


class SqlGraphStore:
    backend = "sql"

    def health(self) -> StoreHealth:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
            return StoreHealth(self.backend, True, "ok", {"vendor": connection.vendor})
        except Exception as exc:
            return StoreHealth(self.backend, False, f"{type(exc).__name__}: {exc}")
