"""Append-only rows written with one prepared statement.

``Model.objects.create`` compiles its INSERT anew for every row: for a wide row such as the
InferenceLog (36 columns, most of them JSON) that is about three times the cost of running the
statement, on the request path of every inference. ``insert_row`` builds the statement once per model
and database and converts each value with the field's own ``pre_save`` and ``get_db_prep_save`` —
the same conversions ``save()`` applies — so the stored row is the one ``create`` would store.

It is meant for rows that are only ever appended (logs): no ``pre_save``/``post_save`` signals are
sent and ``save()`` overrides are not called. A model that needs either must use the ORM.
"""

from __future__ import annotations

from functools import cache
from typing import Any, TypeVar

from django.db import connections, models, router

ModelT = TypeVar("ModelT", bound=models.Model)


@cache
def _statement(model: type[models.Model], alias: str) -> tuple[str, tuple[models.Field, ...]]:
    connection = connections[alias]
    meta = model._meta
    fields = tuple(f for f in meta.concrete_fields if not f.primary_key)
    quote = connection.ops.quote_name
    columns = ", ".join(quote(f.column) for f in fields)
    marks = ", ".join(["%s"] * len(fields))
    sql = f"INSERT INTO {quote(meta.db_table)} ({columns}) VALUES ({marks}) RETURNING {quote(meta.pk.column)}"
    return sql, fields


def insert_row(instance: ModelT) -> ModelT:
    """Insert ``instance`` as a new row and set its primary key (see the module docstring)."""
    model = type(instance)
    alias = router.db_for_write(model, instance=instance)
    connection = connections[alias]
    if not connection.features.can_return_columns_from_insert or instance.pk is not None:
        instance.save(force_insert=True, using=alias)  # the ORM handles what the statement does not
        return instance
    sql, fields = _statement(model, alias)
    params: list[Any] = [f.get_db_prep_save(f.pre_save(instance, True), connection) for f in fields]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        instance.pk = cursor.fetchone()[0]
    instance._state.adding = False
    instance._state.db = alias
    return instance
