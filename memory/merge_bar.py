"""The merge bar's trade-off, measured on a project's own reviewed pairs, and its picture.

* A *reviewed pair* is an UNSURE registry attempt a reviewer resolved: the staged fact, its candidate
  InfoUnit, the reviewer's SAME or DIFFERENT, and the pair's *identity gap* (the content words the two
  leave unexplained, ``memory.comparator.identity``).
* The *merge bar* is the identity slack: the registry merges on its own only pairs whose gap is at most
  ``RegistryParams.identity_slack``. At a bar ``s`` the reviewed pairs of gap ≤ ``s`` are those the
  gate lets through: their **false-merge rate** is the share the reviewers called DIFFERENT, and
  **recall** is the share of all SAME pairs among them. (The other checks — numbers, negation, roles —
  still stage a pair the gate lets through; the curve isolates the bar.)

``merge_bar_curve`` gives both figures for every bar from 0 to ``MAX_SLACK``; ``merge_bar_chart`` lays
the curve out for the inline SVG of the UNSURE staging page, with the bar in force marked. The pairs
are grey-zone pairs (the ones the registry staged), so the figures say how the bar does where the
registry hesitates, not over every write.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

MAX_SLACK = 8  # the last bar of the curve: more unexplained words than this is no longer "close"

WIDTH, HEIGHT = 520, 220
LEFT, RIGHT, TOP, BOTTOM = 44, 16, 14, 36
SERIES = (  # (point key, name, colour, dash)
    ("recall", "Recall (same facts merged)", "#2f855a", ""),
    ("fmr", "False-merge rate (different facts merged)", "#c53030", "6 3"),
)


@dataclass(frozen=True)
class ReviewedPair:
    """One resolved UNSURE attempt: its identity gap and whether the reviewer said SAME."""

    gap: int
    same: bool


def merge_bar_curve(pairs: Sequence[ReviewedPair]) -> list[dict[str, Any]]:
    """Per bar 0…``MAX_SLACK``: pairs let through, of them false, false-merge rate and recall (``None``
    when there is nothing to divide by)."""
    total_same = sum(p.same for p in pairs)
    curve = []
    for slack in range(MAX_SLACK + 1):
        through = [p for p in pairs if p.gap <= slack]
        false = sum(not p.same for p in through)
        curve.append(
            {
                "slack": slack,
                "merged": len(through),
                "false": false,
                "fmr": false / len(through) if through else None,
                "recall": (len(through) - false) / total_same if total_same else None,
            }
        )
    return curve


def _x(slack: float) -> float:
    return round(LEFT + slack / MAX_SLACK * (WIDTH - LEFT - RIGHT), 1)


def _y(share: float) -> float:
    return round(TOP + (1.0 - share) * (HEIGHT - TOP - BOTTOM), 1)


def merge_bar_chart(curve: list[dict[str, Any]], slack: int) -> dict[str, Any] | None:
    """The SVG geometry of ``curve`` with the bar in force (``slack``) marked, or ``None`` when no
    point has a figure (no reviewed pair yet)."""
    series = []
    for key, name, colour, dash in SERIES:
        drawn = [p for p in curve if p[key] is not None]
        if drawn:
            points = " ".join(f"{_x(p['slack'])},{_y(p[key])}" for p in drawn)
            series.append({"key": key, "name": name, "colour": colour, "dash": dash, "points": points})
    if not series:
        return None
    at = next((p for p in curve if p["slack"] == min(slack, MAX_SLACK)), curve[-1])
    return {
        "width": WIDTH,
        "height": HEIGHT,
        "plot": {"x0": LEFT, "x1": WIDTH - RIGHT, "y0": TOP, "y1": HEIGHT - BOTTOM},
        "y_ticks": [{"value": f"{t / 10:.1f}", "y": _y(t / 10)} for t in range(0, 11, 2)],
        "x_ticks": [{"value": s, "x": _x(s)} for s in range(MAX_SLACK + 1)],
        "series": series,
        "operating": {
            "slack": slack,
            "x": _x(min(slack, MAX_SLACK)),
            "at": at,
            "dots": [
                {"cx": _x(at["slack"]), "cy": _y(at[s["key"]]), "colour": s["colour"]}
                for s in series
                if at[s["key"]] is not None
            ],
        },
    }
