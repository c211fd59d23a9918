"""The API's JSON parser: DRF's, with a bound on how deeply a body may nest.

Python's JSON decoder recurses once per level, so a body of a few hundred kilobytes of ``[`` exhausts
the interpreter's stack (``RecursionError``, which DRF does not catch: a 500), and a body just under
that limit would exhaust it later, in whatever walks the parsed value. Every body is refused with a
400 (``ParseError``) beyond ``MAX_JSON_DEPTH`` levels of objects and arrays; no request the platform
accepts nests anywhere near that.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

MAX_JSON_DEPTH = 64


def json_depth_exceeds(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``value`` nests objects and arrays more than ``limit`` levels deep (walked without
    recursion)."""
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, Mapping):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        pending.extend((child, depth + 1) for child in children)
    return False


class BoundedJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        message = f"JSON parse error - the body nests deeper than {MAX_JSON_DEPTH} levels"
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError as exc:
            raise ParseError(message) from exc
        if json_depth_exceeds(data):
            raise ParseError(message)
        return data
