"""Fixtures of the offline-loop tests (``tests/review/test_loop_*.py``), defined in ``loop_fixtures``,
and of the review-queue tests (``tests/review/test_queue_*.py``), defined in ``queue_fixtures``."""

from .loop_fixtures import demo_release, fresh_snapshots, small_release, stored_proposal  # noqa: F401
from .queue_fixtures import demo, demo_pk, make_proposal, tiny, tiny_pk  # noqa: F401
