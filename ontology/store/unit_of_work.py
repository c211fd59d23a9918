"""One unit of work across the Django database and the graph store: a change commits in both or in neither.

A change to a project's knowledge may touch Django tables (taxonomy, audit, proposals) and the graph
store together; it commits in both or in neither.

* ``graph_atomic()`` opens a Django atomic block and, inside it, the graph store's unit of work: on
  the ``sql`` backend the graph *is* Django tables, so the atomic block is the whole unit; on the
  ``neo4j`` backend it is one explicit Neo4j transaction that every store call of the thread joins.
  An exception anywhere in the block rolls back both. When the block ends normally the graph commits
  first, then the database: the only failure left between the two is a database commit that fails
  after the graph committed, which ``graph_atomic`` logs as an error for the operator. Nested blocks
  join the outermost one (Django makes them savepoints; the graph joins).
* ``graph_savepoint(project_id)`` marks a point a caller may roll back to and then carry on — the
  nightly batch rolls back one failing proposal and applies the others: a Django savepoint, plus the
  store's savepoint (on ``neo4j``, the project's graph as it was is written back in the same
  transaction).

Both work as context managers and as decorators.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import transaction

from . import get_graph_store

logger = logging.getLogger(__name__)


@contextmanager
def graph_atomic() -> Iterator[None]:
    """A Django atomic block and the graph store's unit of work, committed together or not at all."""
    store = get_graph_store()
    outermost = not transaction.get_connection().in_atomic_block and not store.in_unit_of_work
    graph_committed = False
    try:
        with transaction.atomic():
            with store.unit_of_work():
                yield
            graph_committed = outermost and store.backend != "sql"
    except Exception:
        if graph_committed:
            logger.error(
                "the database commit failed after the graph store committed: compare the draft graph "
                "with the database (manage.py export_pack) before the next publication"
            )
        raise


@contextmanager
def graph_savepoint(project_id: int) -> Iterator[None]:
    """A point inside a ``graph_atomic`` block that a failing part rolls back to, in both stores."""
    store = get_graph_store()
    with transaction.atomic(), store.savepoint(project_id):
        yield
