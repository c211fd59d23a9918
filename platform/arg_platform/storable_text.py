"""Text every database stores: no NUL and no lone surrogate characters.

PostgreSQL's text and ``jsonb`` types refuse NUL (``\\x00``, ``\\u0000`` in JSON), and no encoding
carries a lone surrogate (``\\ud800`` in JSON), so SQLite cannot store one either. JSON can spell both,
so any text a client sends may hold them. Where they arrive decides what happens:
- in a serializer's text field, DRF's validators refuse them with a field message;
- in a JSON object of a request (action parameters) or a knowledge pack, ``unstorable_paths``
  finds them and the caller refuses;
- in text that is logged even when refused (a binary prompt), ``storable_text`` replaces them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

UNSTORABLE_RE = re.compile("[\x00\ud800-\udfff]")


def storable_text(text: str) -> str:
    """``text`` with NUL and lone surrogate characters replaced by U+FFFD."""
    return UNSTORABLE_RE.sub("\ufffd", text)


def unstorable_paths(value: Any, path: str = "") -> Iterator[str]:
    """The paths (``labels[0].name``) of the strings under a JSON value, keys included, that hold a
    NUL or lone surrogate character, in document order (``"(root)"`` for ``value`` itself)."""
    if isinstance(value, str):
        if UNSTORABLE_RE.search(value):
            yield path or "(root)"
    elif isinstance(value, dict):
        for key, item in value.items():
            child = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and UNSTORABLE_RE.search(key):
                yield child
            yield from unstorable_paths(item, child)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from unstorable_paths(item, f"{path}[{i}]")
