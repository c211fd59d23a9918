"""Guards against hostile import files: what a pack or SKOS file is refused for before it is parsed.

A few hundred bytes can ask a parser for gigabytes or for a network fetch: YAML aliases that expand
exponentially, XML entities declared in a DOCTYPE ("billion laughs", external entities), containers
nested thousands deep (a ``RecursionError``), a JSON-LD ``@context`` naming a URL that rdflib would
fetch. Every door that imports a file — the browser upload, the API, ``import_pack`` and
``skos_import`` — goes through these functions, which raise a ``RuleViolation`` on the field ``file``
before the costly step runs; a file above ``IMPORT_MAX_BYTES`` is refused (``ContentTooLarge``, 413)
before it is read.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import yaml
from django.conf import settings

from arg_platform.errors import ContentTooLarge, RuleViolation, Violation

FIELD = "file"
# containers (lists, mappings, JSON arrays and objects) nested deeper than this are refused
MAX_DEPTH = 64
# YAML aliases may add at most this many nodes to what the file spells out
MAX_ALIAS_NODES = 100_000
# a multipart body carries the file plus boundaries and part headers: this much more is let through
# the Content-Length check, the file's own size is checked exactly once it is parsed
MULTIPART_OVERHEAD = 64 * 1024


def import_max_bytes() -> int:
    """The largest pack or SKOS file an import accepts (the ``IMPORT_MAX_BYTES`` setting)."""
    return int(getattr(settings, "IMPORT_MAX_BYTES", 50 * 2**20))


def _bytes_text(size: int) -> str:
    if size >= 2**20 and size % 2**20 == 0:
        return f"{size // 2**20} MiB"
    if size >= 2**10 and size % 2**10 == 0:
        return f"{size // 2**10} KiB"
    return f"{size} bytes"


def size_check(*, size: int | None, source: str = "the file") -> None:
    """Refuse a file of ``size`` bytes above the import limit (``None``: size unknown, let through)."""
    limit = import_max_bytes()
    if size is not None and size > limit:
        raise ContentTooLarge(
            Violation(
                "file.too_large",
                f"{source} is larger than {_bytes_text(limit)}, the largest file an import accepts "
                "(ARG_IMPORT_MAX_BYTES)",
                FIELD,
            )
        )


def content_length_check(meta: dict[str, Any], *, overhead: int = 0) -> None:
    """Refuse a request whose declared body (less ``overhead``) is above the import limit, before any
    of it is read."""
    try:
        length = int(meta.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return  # Django reads no body without a valid Content-Length
    size_check(size=max(0, length - overhead), source="the request body")


def stream_read(stream: IO[bytes], *, size: int | None = None, source: str = "the file") -> bytes:
    """A stream's bytes: its declared ``size`` checked first, then at most the limit plus one byte read."""
    size_check(size=size, source=source)
    data = stream.read(import_max_bytes() + 1)
    size_check(size=len(data), source=source)
    return data


def upload_read(upload: Any) -> bytes:
    """An uploaded file's bytes (Django ``UploadedFile``), its size checked before it is read."""
    return stream_read(upload, size=upload.size, source=upload.name or "the file")


def path_read(path: Path) -> bytes:
    """A file's bytes, its size checked before it is read; ``OSError`` if it cannot be read."""
    with path.open("rb") as stream:
        return stream_read(stream, size=os.fstat(stream.fileno()).st_size, source=path.name)


def _too_deep(where: str) -> RuleViolation:
    return RuleViolation(
        Violation(
            "file.too_deep",
            f"lists or mappings are nested more than {MAX_DEPTH} deep",
            FIELD,
            where,
        )
    )


# --- YAML -----------------------------------------------------------------------------------------


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, bounding while it composes — before any Python object is built — how
    deep containers nest and how many nodes aliases add (each alias counts the whole subtree it
    repeats, so nested aliases count what they would expand to). An alias inside its own anchor
    (a cycle) is refused."""

    def __init__(self, stream: str, source: str) -> None:
        super().__init__(stream)
        self.source = source
        self.depth = 0
        self.alias_nodes = 0
        self.expanded: dict[yaml.Node, tuple[int, int]] = {}  # composed node -> (nodes, depth) expanded

    def _where(self) -> str:
        return f"{self.source}:{self.peek_event().start_mark.line + 1}"

    def _aliases_refused(self, reason: str) -> RuleViolation:
        return RuleViolation(
            Violation(
                "file.yaml_aliases",
                f"YAML anchors and aliases are not accepted here: {reason}; write the repeated part out",
                FIELD,
                self._where(),
            )
        )

    def fetch_flow_collection_start(self, TokenClass: type) -> None:  # noqa: N803 (PyYAML's name)
        # The scanner looks ahead while a "[" or "{" may still be a mapping key, at a cost that grows
        # with the flow level: deep flow nesting is refused here, before the composer would see it.
        if self.flow_level >= MAX_DEPTH:
            raise _too_deep(f"{self.source}:{self.get_mark().line + 1}")
        super().fetch_flow_collection_start(TokenClass)

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            target = self.anchors.get(event.anchor)
            if target is not None:  # an undefined alias is PyYAML's own error
                if target not in self.expanded:
                    raise self._aliases_refused(f"*{event.anchor} refers to a node that contains it")
                nodes, depth = self.expanded[target]
                self.alias_nodes += nodes
                if self.alias_nodes > MAX_ALIAS_NODES:
                    raise self._aliases_refused(
                        f"they expand the document by more than {MAX_ALIAS_NODES:,} nodes"
                    )
                if self.depth + depth > MAX_DEPTH:
                    raise _too_deep(self._where())
            return super().compose_node(parent, index)
        container = isinstance(event, yaml.CollectionStartEvent)
        if container:
            if self.depth >= MAX_DEPTH:
                raise _too_deep(self._where())
            self.depth += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self.depth -= container
        if node is None:
            return None
        if isinstance(node, yaml.SequenceNode):
            children = [self.expanded[child] for child in node.value]
        elif isinstance(node, yaml.MappingNode):
            children = [self.expanded[child] for pair in node.value for child in pair]
        else:
            children = []
        self.expanded[node] = (
            1 + sum(nodes for nodes, _ in children),
            container + max((depth for _, depth in children), default=0),
        )
        return node


def yaml_load(text: str, *, source: str) -> tuple[Any, yaml.Node | None]:
    """Parse one YAML document with the bounded safe loader: its data and its composed node tree.

    Raises ``RuleViolation`` (``file.too_deep``, ``file.yaml_aliases``) or PyYAML's ``YAMLError``."""
    loader = _BoundedLoader(text, source)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()
    return data, node


# --- JSON -----------------------------------------------------------------------------------------

_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_BRACKET_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def json_depth_check(text: str, *, source: str) -> None:
    """Refuse JSON nesting arrays or objects more than ``MAX_DEPTH`` deep, before it is parsed
    (Python's parser recurses once per level). Brackets inside strings do not count."""
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    if max(itertools.accumulate(map(_BRACKET_STEP.__getitem__, brackets)), default=0) > MAX_DEPTH:
        raise _too_deep(source)


def json_load(text: str, *, source: str) -> Any:
    """Parse JSON whose nesting is bounded; ``json.JSONDecodeError`` when it is not JSON."""
    json_depth_check(text, source=source)
    return json.loads(text)


# --- RDF ------------------------------------------------------------------------------------------

_DTD = re.compile(r"<!(?:DOCTYPE|ENTITY)", re.I)
_DTD_BYTES = re.compile(rb"<!(?:DOCTYPE|ENTITY)", re.I)


def xml_check(data: str | bytes) -> None:
    """Refuse XML that declares a DOCTYPE or an entity, the way to entity bombs and external entities.

    Scans the raw text; NUL bytes are dropped first, so UTF-16 and UTF-32 encodings are read too."""
    found = _DTD.search(data) if isinstance(data, str) else _DTD_BYTES.search(data.replace(b"\0", b""))
    if found:
        raise RuleViolation(
            Violation(
                "file.xml_doctype",
                "XML with a DOCTYPE or ENTITY declaration is not accepted (entities can expand without "
                "bound or name files and URLs to fetch); remove the DOCTYPE",
                FIELD,
            )
        )


def _decoded(data: str | bytes) -> str | None:
    if isinstance(data, str):
        return data
    try:
        return data.decode(json.detect_encoding(data))
    except (UnicodeDecodeError, LookupError):
        return None  # the RDF parser reports it


def _remote_contexts(document: Any) -> Iterator[str]:
    """Every context a JSON-LD document references by IRI (``@context`` strings, ``@import``), at any
    depth: in the document, in embedded nodes and in scoped contexts of term definitions."""
    stack = [document]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            for key, child in value.items():
                if key == "@context":
                    yield from (
                        c for c in (child if isinstance(child, list) else [child]) if isinstance(c, str)
                    )
                elif key == "@import" and isinstance(child, str):
                    yield child
                stack.append(child)
        elif isinstance(value, list):
            stack.extend(value)


def json_ld_check(data: str | bytes) -> None:
    """Refuse JSON-LD nested more than ``MAX_DEPTH`` deep or referencing a context by IRI, which
    rdflib would fetch (a remote URL, or a local file for a relative one): contexts must be inline."""
    text = _decoded(data)
    if text is None:
        return
    json_depth_check(text, source="")
    try:
        document = json.loads(text)
    except ValueError:
        return  # the RDF parser reports it
    remote = sorted(set(_remote_contexts(document)))
    if remote:
        shown = ", ".join(remote[:3]) + (f" and {len(remote) - 3} more" if len(remote) > 3 else "")
        raise RuleViolation(
            Violation(
                "file.remote_context",
                f"a JSON-LD context must be written inline, not referenced by IRI (nothing is fetched): {shown}",
                FIELD,
            )
        )


def json_lines_depth_check(data: str | bytes) -> None:
    """Refuse JSON lines (HexTuples) nesting more than ``MAX_DEPTH`` deep."""
    text = _decoded(data)
    if text is not None:
        json_depth_check(text, source="")
