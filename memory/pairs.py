"""Labelled pair files: two wordings and whether they state the same fact.

A pair file is a JSON list of ``{"a", "b", "same"}`` objects with optional ``info_type``, ``scope``,
``label`` and ``kind`` (a free tag reports group by). The *development* pair files in
``memory/resources/`` (``DEV_FILES``) are what the Info Registry's optional learned models are trained
on: the comparator's logistic grey-zone model (``memory.comparator``, weights in
``memory/resources/comparator_model.json``) and the pair cross-encoder (``memory.cross_encoder``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from memory.canonical import InfoType

RESOURCES_DIR = Path(__file__).resolve().parent / "resources"


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    same: bool
    info_type: str | None = None
    scope: str = "USER"
    label: str = "general"
    kind: str = ""


def pairs_load(path: str | Path) -> list[Pair]:
    """Read a PAIRS.json file: a JSON list of ``{"a", "b", "same"}`` with optional ``info_type``,
    ``scope``, ``label`` (and ``kind``, a free tag the report groups by)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of pair objects")
    out = []
    for i, item in enumerate(data):
        if not isinstance(item, dict) or not {"a", "b", "same"} <= set(item):
            raise ValueError(f"{path}: item {i} needs a, b and same")
        if not isinstance(item["same"], bool):
            raise ValueError(f"{path}: item {i}: same is true or false")
        info_type = item.get("info_type")
        if info_type is not None and info_type not in InfoType.ALL:
            raise ValueError(f"{path}: item {i}: unknown info_type {info_type!r}")
        scope = str(item.get("scope") or "USER").upper()
        if scope not in ("USER", "ORG", "GLOBAL"):
            raise ValueError(f"{path}: item {i}: unknown scope {scope!r}")
        out.append(
            Pair(
                a=str(item["a"]),
                b=str(item["b"]),
                same=item["same"],
                info_type=info_type,
                scope=scope,
                label=str(item.get("label") or "general"),
                kind=str(item.get("kind") or ("same" if item["same"] else "different")),
            )
        )
    return out
