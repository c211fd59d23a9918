"""Reading a pack file into a ``PackDocument`` that remembers where each item came from.

Locations are JSON-path-like (``labels[12].parent``) plus the YAML line when the pack is YAML, so an
import error points a person at the exact place to fix.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from arg_platform.errors import RuleViolation, Violation
from arg_platform.storable_text import unstorable_paths

from ..file_guards import json_load, path_read, size_check, yaml_load

FORMAT = "arg-pack/1"
SECTIONS = (
    "clusters",
    "labels",
    "incompatibilities",
    "typologies",
    "policies",
    "roles",
    "nodes",
    "edges",
    "aliases",
)
# sections a pack may leave out: absent, the project's rows of that kind are kept as they are
OPTIONAL_SECTIONS = ("distinct_terms",)
# a pack refused for characters no database stores (``arg_platform.storable_text``) names this many places
MAX_CHARACTER_PROBLEMS = 20


@dataclass(frozen=True)
class PackDocument:
    """A parsed pack: its data, its file name, and the line of each path (YAML only)."""

    data: dict[str, Any]
    source: str = "<pack>"
    lines: dict[str, int] = field(default_factory=dict)

    def where(self, path: str) -> str:
        """``file:line (path)`` for an error message; falls back to the closest parent path's line."""
        probe = path
        while probe:
            if probe in self.lines:
                return f"{self.source}:{self.lines[probe]} ({path})"
            cut = max(probe.rfind("."), probe.rfind("["))
            probe = probe[:cut] if cut > 0 else ""
        return f"{self.source} ({path})"

    def section(self, name: str) -> list[Any]:
        value = self.data.get(name) or []
        return value if isinstance(value, list) else []


def _yaml_lines(node: yaml.Node, path: str, out: dict[str, int]) -> None:
    out[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                child = f"{path}.{key.value}" if path else str(key.value)
                _yaml_lines(value, child, out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _yaml_lines(item, f"{path}[{i}]", out)


def pack_parse(text: str, *, source: str = "<pack>", fmt: str | None = None) -> PackDocument:
    """Parse pack text (YAML, or JSON when ``fmt`` is "json" or the text starts with "{").

    The hostile-file guards apply (``taxonomy.file_guards``): size, nesting depth, YAML aliases."""
    size_check(size=len(text.encode("utf-8", "surrogatepass")), source=source)
    lines: dict[str, int] = {}
    try:
        if fmt == "json" or (fmt is None and text.lstrip().startswith("{")):
            data = json_load(text, source=source)
        else:
            data, composed = yaml_load(text, source=source)
            if composed is not None:
                _yaml_lines(composed, "", lines)
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        raise RuleViolation(
            Violation("pack.parse", f"{source}: not valid YAML/JSON: {exc}", location=source)
        ) from exc
    if not isinstance(data, dict):
        raise RuleViolation(Violation("pack.shape", f"{source}: a pack is a mapping with a 'format' key"))
    if data.get("format") != FORMAT:
        raise RuleViolation(
            Violation(
                "pack.format",
                f"{source}: 'format' must be {FORMAT!r}, got {data.get('format')!r}",
                location=f"{source}:{lines.get('format', 1)}",
            )
        )
    for name in SECTIONS + OPTIONAL_SECTIONS:
        if name in data and data[name] is not None and not isinstance(data[name], list):
            raise RuleViolation(
                Violation("pack.shape", f"'{name}' must be a list", location=f"{source} ({name})")
            )
    document = PackDocument(data=data, source=source, lines=lines)
    unstorable = list(itertools.islice(unstorable_paths(data), MAX_CHARACTER_PROBLEMS))
    if unstorable:
        raise RuleViolation(
            [
                Violation(
                    "pack.characters",
                    "a NUL or lone surrogate character is not allowed in a pack's text",
                    location=document.where(path),
                )
                for path in unstorable
            ]
        )
    return document


def pack_read(path: str | Path) -> PackDocument:
    """Read and parse a pack file (``.yaml``/``.yml``/``.json``); its size is checked before it is read."""
    path = Path(path)
    try:
        text = path_read(path).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RuleViolation(Violation("pack.read", f"cannot read {path}: {exc}")) from exc
    return pack_parse(text, source=path.name, fmt="json" if path.suffix == ".json" else None)
