"""Step A metrics page (ARG §3.1.2) and the live progress of the offline runs.

``metrics_page`` shows, per node and per edge, ConfirmedSuccessRate_info, UncertainSuccessRate_info,
LowConfidenceRate_info and ActiveCheckCoverage, from the latest offline run's collection (or, with
``?live=1`` or before any run, computed now from the last ``window_days`` of logs). Nodes that look
successful mainly because of silence are marked; the confidence-boost zones of the latest run too.
``runs_panel`` is the htmx fragment of the recent runs and their Job progress (polled while one runs);
a curator can start a run from it (queued on commit to the Celery worker, like the nightly one).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from arg_platform.ui import project_view, render_page
from ontology.snapshot_registry import pin_snapshot
from projects.access import ProjectAccess
from review.models import OfflineRun

SORTS = {
    "traffic": ("interactions", True),
    "confirmed": ("ConfirmedSuccessRate_info", False),
    "uncertain": ("UncertainSuccessRate_info", True),
    "lowconf": ("LowConfidenceRate_info", True),
    "coverage": ("ActiveCheckCoverage", False),
}
LIVE_MAX_LOGS = 20_000


def _latest_run(project: Any) -> OfflineRun | None:
    return (
        OfflineRun.objects.filter(
            project=project, status=OfflineRun.Status.SUCCEEDED, stats__has_key="metrics"
        )
        .order_by("-started_at", "-id")
        .first()
    )


def _live_metrics(project: Any) -> dict[str, Any]:
    from review.loop.collection import collect
    from review.loop.params import loop_params

    collection = collect(project=project, window_days=loop_params().window_days, max_logs=LIVE_MAX_LOGS)
    nodes = sorted(collection.node_metrics.values(), key=lambda m: -m.interactions)
    edges = sorted(collection.edge_metrics.values(), key=lambda e: -e.traversals)
    return {
        "nodes": [m.as_json() for m in nodes[:500]],
        "edges": [e.as_json() for e in edges[:500]],
        "window_start": collection.window_start,
        "window_end": collection.window_end,
        "interactions": collection.size,
        "languages": collection.uncovered_languages(),
    }


def _titles(project: Any) -> dict[str, str]:
    snapshot = pin_snapshot(project.pk)
    if snapshot is None:
        return {}
    return {node_id: snapshot.titles[i] for i, node_id in enumerate(snapshot.node_ids)}


@project_view("GET")
def metrics_page(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    """Per node / per edge Step A metrics, sortable, with the silence-dominated nodes marked."""
    project = access.project
    run = None if request.GET.get("live") else _latest_run(project)
    if run is not None:
        data = run.stats.get("metrics", {})
        source: dict[str, Any] = {"run": run, "window_start": run.window_start, "window_end": run.window_end}
        collected = run.stats.get("steps", {}).get("collect", {})
        source["interactions"] = collected.get("interactions", 0)
        source["languages"] = collected.get("languages") or {}
        boosted = run.stats.get("confidence_boost") or {}
    else:
        data = _live_metrics(project)
        source = {
            "run": None,
            **{k: data[k] for k in ("window_start", "window_end", "interactions", "languages")},
        }
        boosted = {}
    sort = request.GET.get("sort", "traffic")
    key, reverse = SORTS.get(sort, SORTS["traffic"])
    silent_only = request.GET.get("silent") == "1"
    titles = _titles(project)
    nodes = [
        {**row, "title": titles.get(row["node_id"], ""), "boosted": row["node_id"] in boosted}
        for row in data.get("nodes", [])
        if not silent_only or row.get("silence_dominated")
    ]
    nodes.sort(key=lambda row: (row.get(key, 0) * (-1 if reverse else 1), row["node_id"]))
    edges = list(data.get("edges", []))[:100]
    return render_page(
        request,
        "review/metrics/metrics.html",
        {
            "nav": "metrics",
            "nodes": nodes,
            "edges": edges,
            "source": source,
            "sort": sort,
            "sorts": list(SORTS),
            "silent_only": silent_only,
            "silence_count": sum(1 for row in data.get("nodes", []) if row.get("silence_dominated")),
            "boosted": boosted,
            "runs": _runs(project),
        },
    )


def _runs(project: Any) -> list[OfflineRun]:
    return list(OfflineRun.objects.filter(project=project).select_related("job", "published_release")[:5])


@project_view("GET", "POST")
def runs_panel(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    """The recent offline runs with their live Job progress; POST (curators) queues a run now."""
    from review.loop.run import NoActiveRelease, offline_run_get_or_open
    from review.loop.tasks import offline_run_enqueue

    error = ""
    if request.method == "POST":
        try:
            run, created = offline_run_get_or_open(
                project=access.project,
                idempotency_key=f"manual:{timezone.now():%Y%m%dT%H%M}",
                actor=request.user,
            )
            if created:
                offline_run_enqueue(run)
        except NoActiveRelease as exc:
            error = exc.message
    runs = _runs(access.project)
    return render_page(
        request,
        "review/metrics/partials/runs.html",
        {"runs": runs, "running": any(r.status == OfflineRun.Status.RUNNING for r in runs), "error": error},
    )
