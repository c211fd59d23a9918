"""Reads of the ontology graph and its releases."""

from __future__ import annotations


def release_active_summary() -> dict[str, object] | None:
    """The active release of each project (id, version, checksum); None while no release exists.

    Releases arrive with the ontology graph; until then there is none.
    """
    return None
