"""The geDIG two-stage gate before auto-commit (seed 000 §3.4), with thresholds from the project's history.

Terms (the gauge itself is ``review.loop.gauge``):

* **g0** — the 0-hop gauge of a candidate: its normalised edit cost minus the entropy gain of where the
  replayed requests land, before any path term. A high g0 means the change costs more than it clarifies
  right where it is wired: the situation is *ambiguous*.
* **b** — the operational gauge ``min(g0, gmin)``, the best of the 0-hop and multi-hop values; a low b
  means the change pays for itself once its path shortening over a few hops is counted.
* **AG** (attention gate) fires when ``g0 > θ_AG``: the change is ambiguous, so it is not accepted
  automatically — an expert looks at it (the seed's "deepen exploration").
* **DG** (decision gate) fires when ``b ≤ θ_DG``: a confirmed structural gain, the only case in which a
  change may be committed without a reviewer.
* **History** — the gauges of this project's earlier proposals (earlier nights only: the night being
  binned never calibrates itself), newest first, at most ``history_window`` of them. θ_AG is the
  ``ag_percentile``-th and θ_DG the ``dg_percentile``-th percentile of that history, taken per proposal
  kind when the kind has at least ``min_history`` gauges (an edge weight and a split have different
  scales), else over every kind. With fewer than ``min_history`` gauges in all, the fixed ``theta_ag`` /
  ``theta_dg`` of the settings stand in, and the decision says so.

The gate only ever holds a change back: a HIGH score whose AG fired or whose DG did not confirm goes to
review instead of auto-commit. Every proposal records the thresholds, where they came from and what the
gate decided (``replay["gedig_gate"]``), which the proposal page shows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from review.loop.params import GedigParams


@dataclass(frozen=True)
class GateThresholds:
    """θ_AG and θ_DG for one proposal kind, and where they came from."""

    theta_ag: float
    theta_dg: float
    source: str  # "kind history" | "project history" | "fixed"
    n_history: int


@dataclass(frozen=True)
class GateDecision:
    """What the two gates say about one gauge."""

    thresholds: GateThresholds
    g0: float | None
    b: float | None
    ag: bool
    dg: bool

    @property
    def allows_autocommit(self) -> bool:
        """A change may skip review only when AG is quiet and DG confirms."""
        return self.dg and not self.ag

    def blocker(self) -> str:
        """Why the gate holds the change back, in words (empty when it does not)."""
        t = self.thresholds
        if self.g0 is None or self.b is None:
            return "geDIG: no gauge, so DG cannot confirm a structural gain"
        reasons = []
        if self.ag:
            reasons.append(f"geDIG AG fired (g0 {self.g0:.4f} > θ_AG {t.theta_ag:.4f}: ambiguous)")
        if not self.dg:
            reasons.append(f"geDIG DG did not confirm (b {self.b:.4f} > θ_DG {t.theta_dg:.4f})")
        return "; ".join(reasons)

    def as_json(self, *, decided: str) -> dict[str, Any]:
        return {
            **asdict(self.thresholds),
            "g0": self.g0,
            "b": self.b,
            "ag": self.ag,
            "dg": self.dg,
            "decided": decided,
        }


GaugeHistory = Mapping[str, list[tuple[float, float]]]


def gauge_history(
    rows: Iterable[tuple[str, Mapping[str, Any] | None]],
) -> dict[str, list[tuple[float, float]]]:
    """``(kind, replay)`` rows → ``{kind: [(g0, b), …]}``, skipping rows without a gauge."""
    out: dict[str, list[tuple[float, float]]] = {}
    for kind, replay in rows:
        g = (replay or {}).get("gedig") or {}
        if "g0" in g and "b" in g:
            out.setdefault(kind, []).append((float(g["g0"]), float(g["b"])))
    return out


def calibrate(history: GaugeHistory, kind: str, params: GedigParams) -> GateThresholds:
    """θ_AG and θ_DG for ``kind`` from the history (see the module doc for the fallbacks)."""
    own = history.get(kind, [])
    if len(own) >= params.min_history:
        values, source = own, "kind history"
    else:
        values = [v for rows in history.values() for v in rows]
        source = "project history"
    if len(values) < params.min_history:
        return GateThresholds(params.theta_ag, params.theta_dg, "fixed", len(values))
    g0 = np.asarray([v[0] for v in values], dtype=np.float64)
    b = np.asarray([v[1] for v in values], dtype=np.float64)
    return GateThresholds(
        theta_ag=round(float(np.percentile(g0, params.ag_percentile)), 6),
        theta_dg=round(float(np.percentile(b, params.dg_percentile)), 6),
        source=source,
        n_history=len(values),
    )


def decide(gauge: Mapping[str, Any] | None, thresholds: GateThresholds) -> GateDecision:
    """Apply the two gates to one proposal's recorded gauge."""
    g = gauge or {}
    if "g0" not in g or "b" not in g:
        return GateDecision(thresholds, None, None, ag=False, dg=False)
    g0, b = float(g["g0"]), float(g["b"])
    return GateDecision(thresholds, g0, b, ag=g0 > thresholds.theta_ag, dg=b <= thresholds.theta_dg)
