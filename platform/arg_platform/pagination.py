"""The API's pagination: ``?limit=&offset=`` with bounds.

DRF's ``LimitOffsetPagination`` passes any positive integer through to the database; a ``limit`` or
``offset`` beyond 64 bits made SQLite raise ``OverflowError`` — a 500 on every list endpoint (found by
the API fuzzer). Here ``limit`` is capped at ``MAX_LIMIT`` and ``offset`` at ``MAX_OFFSET`` (past the
end of any real list: an empty page).
"""

from __future__ import annotations

from typing import Any

from rest_framework import pagination

MAX_LIMIT = 1000
MAX_OFFSET = 10**12


class LimitOffsetPagination(pagination.LimitOffsetPagination):
    max_limit = MAX_LIMIT

    def get_offset(self, request: Any) -> int:
        return min(super().get_offset(request), MAX_OFFSET)
