"""The metrics dashboard of a project: outcomes, flags, policy states and latency over time.

``dashboard_series`` reads the project's InferenceLog rows of a window (at most ``MAX_ROWS``, newest
first) and counts them per time bucket; ``svg_line_chart`` draws a series set as inline SVG, so the page
needs no JavaScript library and no CDN. Prometheus (``/metrics``) carries the same counts across all
projects for operators; this page is the per-project view for the people who curate it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from html import escape

import numpy as np
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe

from inference.models import InferenceLog
from projects.models import Project

MAX_ROWS = 50_000

# window key -> (length, bucket size, label format)
WINDOWS: dict[str, tuple[timedelta, timedelta, str]] = {
    "24h": (timedelta(hours=24), timedelta(hours=1), "%H:%M"),
    "7d": (timedelta(days=7), timedelta(hours=6), "%a %H:%M"),
    "30d": (timedelta(days=30), timedelta(days=1), "%b %d"),
}

PALETTE = (
    "#2563eb",
    "#16a34a",
    "#dc2626",
    "#d97706",
    "#7c3aed",
    "#0891b2",
    "#db2777",
    "#4b5563",
    "#65a30d",
    "#9333ea",
)


@dataclass(frozen=True)
class DashboardData:
    window: str
    bucket_starts: list[datetime]
    bucket_labels: list[str]
    total: int
    truncated: bool
    outcomes: dict[str, list[int]]
    flags: dict[str, list[int]]
    policy: dict[str, list[int]]
    latency_p50: list[float | None]  # None: no request in the bucket
    latency_p95: list[float | None]
    outcome_totals: list[tuple[str, int]] = field(default_factory=list)
    flag_totals: list[tuple[str, int]] = field(default_factory=list)
    policy_totals: list[tuple[str, int]] = field(default_factory=list)
    p50_ms: float | None = None
    p95_ms: float | None = None
    errors: int = 0  # requests refused as invalid (4xx: the log row carries the error; "rejected")


def _floor(moment: datetime, since: datetime, step: timedelta) -> int:
    return int((moment - since) / step)


def dashboard_series(*, project: Project, window: str = "24h", now: datetime | None = None) -> DashboardData:
    """Counts per bucket of the window for outcome kinds, flags and policy states; latency P50/P95."""

    length, step, label_format = WINDOWS[window]
    now = now or timezone.now()
    buckets = int(length / step)
    # the last bucket ends at the next bucket boundary after `now`
    end = _bucket_end(now, step)
    since = end - step * buckets
    rows = list(
        InferenceLog.objects.filter(project=project, created_at__gte=since, created_at__lt=end)
        .order_by("-created_at")
        .values_list("created_at", "outcome_kind", "flags", "policy_state", "timings_ms", "error")[
            : MAX_ROWS + 1
        ]
    )
    truncated = len(rows) > MAX_ROWS
    rows = rows[:MAX_ROWS]
    outcomes: dict[str, list[int]] = defaultdict(lambda: [0] * buckets)
    flags: dict[str, list[int]] = defaultdict(lambda: [0] * buckets)
    policy: dict[str, list[int]] = defaultdict(lambda: [0] * buckets)
    latencies: list[list[float]] = [[] for _ in range(buckets)]
    errors = 0
    for created_at, kind, row_flags, state, timings, error in rows:
        index = min(buckets - 1, max(0, _floor(created_at, since, step)))
        # a row without an outcome is a request refused as invalid before routing (it has the error)
        outcomes[kind or ("REJECTED" if error else "ERROR")][index] += 1
        for flag in row_flags or ():
            flags[str(flag)][index] += 1
        policy[state or "NONE"][index] += 1
        total_ms = (timings or {}).get("total")
        if isinstance(total_ms, int | float):
            latencies[index].append(float(total_ms))
        errors += bool(error)
    starts = [since + step * i for i in range(buckets)]
    local = [timezone.localtime(s) for s in starts]
    every_latency = [x for bucket in latencies for x in bucket]
    return DashboardData(
        window=window,
        bucket_starts=starts,
        bucket_labels=[moment.strftime(label_format) for moment in local],
        total=len(rows),
        truncated=truncated,
        outcomes=dict(sorted(outcomes.items())),
        flags=dict(sorted(flags.items())),
        policy=dict(sorted(policy.items())),
        latency_p50=[_percentile(b, 50) for b in latencies],
        latency_p95=[_percentile(b, 95) for b in latencies],
        outcome_totals=_totals(outcomes),
        flag_totals=_totals(flags),
        policy_totals=_totals(policy),
        p50_ms=_percentile(every_latency, 50),
        p95_ms=_percentile(every_latency, 95),
        errors=errors,
    )


def _bucket_end(now: datetime, step: timedelta) -> datetime:
    epoch = datetime(2000, 1, 1, tzinfo=now.tzinfo)
    passed = (now - epoch) // step
    return epoch + step * (passed + 1)


def _percentile(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), 2) if values else None


def _totals(series: dict[str, list[int]]) -> list[tuple[str, int]]:
    return sorted(((name, sum(counts)) for name, counts in series.items()), key=lambda x: (-x[1], x[0]))


# --- inline SVG ------------------------------------------------------------------------------------


def svg_line_chart(
    series: Mapping[str, Sequence[float | None]],
    labels: list[str],
    *,
    title: str,
    unit: str = "",
    width: int = 760,
    height: int = 240,
) -> SafeString:
    """A line chart of ``series`` over ``labels`` as an accessible inline ``<svg>`` (no script).

    ``None`` is a bucket without data (e.g. no request, so no latency): the line breaks there.
    """
    left, right, top, bottom = 64, 200, 16, 36
    plot_w, plot_h = width - left - right, height - top - bottom
    count = max(len(labels), 1)
    peak = max((v for values in series.values() for v in values if v is not None), default=0.0)
    y_max = _nice_ceiling(peak)

    def x(i: int) -> float:
        return left + (plot_w * i / (count - 1) if count > 1 else plot_w / 2)

    def y(value: float) -> float:
        return top + plot_h - (plot_h * value / y_max if y_max else 0)

    parts = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="100%" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
    ]
    for fraction in (0.0, 0.5, 1.0):  # horizontal grid with y labels
        value = y_max * fraction
        parts.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{y(value):.1f}" y2="{y(value):.1f}" '
            f'stroke="#e5e7eb" stroke-width="1"/>'
            f'<text x="{left - 6}" y="{y(value) + 4:.1f}" text-anchor="end" font-size="11" '
            f'fill="#6b7280">{_fmt(value)}{escape(unit)}</text>'
        )
    tick_every = max(1, count // 8)
    for i, label in enumerate(labels):
        if i % tick_every == 0 or i == count - 1:
            parts.append(
                f'<text x="{x(i):.1f}" y="{height - 12}" text-anchor="middle" font-size="10" '
                f'fill="#6b7280">{escape(label)}</text>'
            )
    if not series or not peak:
        parts.append(
            f'<text x="{left + plot_w / 2}" y="{top + plot_h / 2}" text-anchor="middle" font-size="13" '
            f'fill="#6b7280">no requests in this window</text>'
        )
    for n, (name, values) in enumerate(series.items()):
        color = PALETTE[n % len(PALETTE)]
        for run in _runs(values):  # one polyline per stretch of buckets with data
            points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in run)
            parts.append(
                f'<polyline class="series" data-series="{escape(name)}" fill="none" stroke="{color}" '
                f'stroke-width="2" points="{points}"/>'
            )
        for i, v in enumerate(values):
            if v:
                parts.append(
                    f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="2.5" fill="{color}">'
                    f"<title>{escape(name)} · {escape(labels[i])}: {_fmt(v)}{escape(unit)}</title></circle>"
                )
        known = [v for v in values if v is not None]
        figure = _fmt(sum(known)) if not unit else _fmt(max(known, default=0.0)) + unit
        short = name if len(name) <= 20 else name[:19] + "…"
        legend_y = top + 14 * n + 6
        parts.append(
            f'<rect x="{left + plot_w + 12}" y="{legend_y - 8}" width="10" height="10" fill="{color}"/>'
            f'<text x="{left + plot_w + 27}" y="{legend_y + 1}" font-size="11" fill="#374151">'
            f"<title>{escape(name)}</title>{escape(short)} ({figure})</text>"
        )
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every interpolated string is escaped above


def _runs(values: Sequence[float | None]) -> list[list[tuple[int, float]]]:
    runs: list[list[tuple[int, float]]] = [[]]
    for i, v in enumerate(values):
        if v is None:
            if runs[-1]:
                runs.append([])
        else:
            runs[-1].append((i, v))
    return [run for run in runs if run]


def _nice_ceiling(value: float) -> float:
    if value <= 0:
        return 1.0
    magnitude = 10 ** int(np.floor(np.log10(value)))
    for factor in (1, 2, 2.5, 5, 10):
        if value <= factor * magnitude:
            return float(factor * magnitude)
    return float(10 * magnitude)


def _fmt(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() or value >= 100 else f"{value:.1f}"


def top_series(series: dict[str, list[int]], limit: int = 8) -> dict[str, list[float]]:
    """The ``limit`` largest series; the rest summed as "other" (a chart stays readable)."""
    ranked = sorted(series.items(), key=lambda item: (-sum(item[1]), item[0]))
    kept: dict[str, list[float]] = {name: [float(v) for v in values] for name, values in ranked[:limit]}
    rest = ranked[limit:]
    if rest:
        kept["other"] = [float(sum(values)) for values in zip(*(v for _, v in rest), strict=True)]
    return kept


def counter_rows(totals: list[tuple[str, int]], whole: int | None = None) -> list[tuple[str, int, float]]:
    """(name, count, % of ``whole`` — by default of the counts' sum)."""
    whole = whole or sum(n for _, n in totals) or 1
    return [(name, n, round(100.0 * n / whole, 1)) for name, n in totals]
