"""The picture of a release's ask-threshold trade-off: geometry for the inline SVG on the Releases page.

``ask_chart`` turns the held-out curve (``ontology.ask_threshold``: per threshold, coverage, precision
and, with ``oos`` examples, OOS recall) into polylines over a plot of threshold (x, 0–1) against share
(y, 0–1), with the operating point (the threshold in force) and, when a curator overrode it, the
calibrated point marked. The template draws it; nothing runs in the browser.
"""

from __future__ import annotations

from typing import Any

WIDTH, HEIGHT = 520, 240
LEFT, RIGHT, TOP, BOTTOM = 44, 16, 14, 36
SERIES = (  # (curve key, name, colour, dash)
    ("precision", "Precision (answered and right)", "#1f6feb", ""),
    ("coverage", "Coverage (in-scope answered)", "#2f855a", "6 3"),
    ("oos_recall", "OOS recall (out of scope asked)", "#b7791f", "2 3"),
)


def _x(threshold: float) -> float:
    return round(LEFT + threshold * (WIDTH - LEFT - RIGHT), 1)


def _y(share: float) -> float:
    return round(TOP + (1.0 - share) * (HEIGHT - TOP - BOTTOM), 1)


def point_at(curve: list[dict[str, Any]], threshold: float) -> dict[str, Any] | None:
    """The curve's point at the largest grid threshold not above ``threshold`` (the figures shown for
    the operating point), or ``None`` for an empty curve."""
    below = [p for p in curve if p["threshold"] <= threshold + 1e-9]
    return below[-1] if below else (curve[0] if curve else None)


def _marker(threshold: float, curve: list[dict[str, Any]], series: list[dict[str, Any]]) -> dict[str, Any]:
    at = point_at(curve, threshold) or {}
    return {
        "threshold": threshold,
        "x": _x(threshold),
        "at": at,
        "dots": [
            {"cx": _x(threshold), "cy": _y(at[s["key"]]), "colour": s["colour"]}
            for s in series
            if at.get(s["key"]) is not None
        ],
    }


def ask_chart(in_force: dict[str, Any]) -> dict[str, Any] | None:
    """The SVG geometry of ``in_force`` (``threshold_in_force``), or ``None`` without a curve."""
    curve = in_force.get("curve") or []
    if not curve:
        return None
    series = []
    for key, name, colour, dash in SERIES:
        if not any(p.get(key) is not None for p in curve):
            continue
        points = " ".join(f"{_x(p['threshold'])},{_y(p[key])}" for p in curve if p.get(key) is not None)
        series.append({"key": key, "name": name, "colour": colour, "dash": dash, "points": points})
    calibrated = in_force.get("calibrated")
    return {
        "width": WIDTH,
        "height": HEIGHT,
        "plot": {"x0": LEFT, "x1": WIDTH - RIGHT, "y0": TOP, "y1": HEIGHT - BOTTOM},
        "ticks": [{"value": f"{t / 10:.1f}", "x": _x(t / 10), "y": _y(t / 10)} for t in range(0, 11, 2)],
        "series": series,
        "operating": _marker(in_force["value"], curve, series),
        "calibrated": (
            _marker(calibrated, curve, series)
            if calibrated is not None and in_force.get("source") == "curator"
            else None
        ),
    }
