"""Prometheus metrics of the platform, shared by every gunicorn worker and Celery process.

prometheus_client runs in *multiprocess mode*: each process writes its samples to small mmap files in
``PROMETHEUS_MULTIPROC_DIR`` (settings put it under ``ARG_DATA_DIR``; it must be in the environment
before ``prometheus_client`` is first imported, which settings take care of), and ``GET /metrics``
adds them up. Recording a sample is a dictionary lookup and an mmap write — a few microseconds —
so the hot path pays nothing measurable: one ``inference_observe`` call per request.

Files are named ``<kind>_<host>-<pid>.db`` rather than by pid alone, so that containers sharing one
metrics volume (web and worker in docker compose) never write to the same file.

What is exported (all names start with ``arg_``):

* ``http_requests_total`` / ``http_request_duration_seconds`` — per URL name, method (and status);
* ``inference_step_duration_seconds`` — per pipeline step, from the timings every request records;
* ``inference_outcomes_total``, ``inference_flags_total``, ``inference_policy_total`` — per project;
* ``inference_proposer_total`` — escalations to the bounded label proposer, per project and result
  (chosen, abstained, unknown, error, budget); over ``inference_outcomes_total`` it is the escalation rate;
* ``rate_limited_total`` — 429 answers per rate-limit scope;
* ``task_duration_seconds`` / ``tasks_total`` — Celery tasks by name and final state;
* collected when scraped, from the database and the broker: ``queue_depth`` (broker messages waiting),
  ``broker_up``, ``jobs`` (Job rows by kind and status), ``review_proposals`` (proposals by status)
  and ``release_active`` (the active release id and version of each project).
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from django.conf import settings
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    values,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector

# '_' separates the parts of the file name prometheus_client parses; keep it out of the identity.
_HOST = socket.gethostname().replace("_", "-")


def _process_identity() -> str:
    # called on every sample (prometheus_client checks for a fork): no system call but getpid here
    return f"{_HOST}-{os.getpid()}"


MULTIPROCESS = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))
if MULTIPROCESS:
    values.ValueClass = values.MultiProcessValue(process_identifier=_process_identity)

# Latency buckets (seconds): the online path lives between 1 ms and a few hundred ms.
STEP_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.0)
HTTP_BUCKETS = (0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.0, 10.0, 30.0)
TASK_BUCKETS = (0.1, 0.5, 1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0)

HTTP_REQUESTS = Counter(
    "arg_http_requests", "HTTP requests answered", ["view", "method", "status"], registry=None
)
HTTP_DURATION = Histogram(
    "arg_http_request_duration_seconds",
    "Wall time of HTTP requests from the first middleware to the response",
    ["view", "method"],
    buckets=HTTP_BUCKETS,
    registry=None,
)
STEP_DURATION = Histogram(
    "arg_inference_step_duration_seconds",
    "Wall time of each step of the online pipeline (step=total is the whole pipeline)",
    ["step"],
    buckets=STEP_BUCKETS,
    registry=None,
)
OUTCOMES = Counter(
    "arg_inference_outcomes",
    "Inference requests by outcome kind and status",
    ["project", "kind", "status"],
    registry=None,
)
FLAGS = Counter(
    "arg_inference_flags",
    "Flags raised by the Context Weaver and landing",
    ["project", "flag"],
    registry=None,
)
PROPOSER = Counter(
    "arg_inference_proposer",
    "Escalations to the bounded label proposer, by result",
    ["project", "result"],
    registry=None,
)
POLICY = Counter("arg_inference_policy", "Policy pre-check states", ["project", "state"], registry=None)
RATE_LIMITED = Counter(
    "arg_rate_limited", "Requests refused with 429 by the per-token limit", ["scope"], registry=None
)
TASK_DURATION = Histogram(
    "arg_task_duration_seconds",
    "Celery task run time by task name and final state",
    ["task", "state"],
    buckets=TASK_BUCKETS,
    registry=None,
)
TASKS = Counter(
    "arg_tasks", "Celery tasks finished, by task name and final state", ["task", "state"], registry=None
)


def inference_observe(
    *,
    project: str,
    timings_ms: dict[str, float],
    outcome_kind: str,
    status: str,
    policy_state: str,
    flags: Iterable[str],
) -> None:
    """Record one request of the online pipeline (called once per request by the log book)."""
    for step, ms in timings_ms.items():
        _child(STEP_DURATION, step).observe(ms / 1000.0)
    _child(OUTCOMES, project, outcome_kind or "NONE", status or "NONE").inc()
    _child(POLICY, project, policy_state or "NONE").inc()
    for flag in flags:
        _child(FLAGS, project, flag).inc()


def proposer_observe(*, project: str, result: str) -> None:
    """Record one escalation to the bounded label proposer (``inference.steps.proposer``)."""
    _child(PROPOSER, project, result).inc()


_children: dict[tuple[object, ...], Any] = {}


def _child(metric: Any, *labels: str) -> Any:
    """``metric.labels(*labels)``, memoized (``labels()`` validates and locks on every call)."""
    key = (id(metric), *labels)
    child = _children.get(key)
    if child is None:
        child = _children[key] = metric.labels(*labels)
    return child


def task_observe(*, task: str, state: str, seconds: float) -> None:
    TASK_DURATION.labels(task, state).observe(seconds)
    TASKS.labels(task, state).inc()


# --- collected at scrape time ---------------------------------------------------------------------


def _broker_queue_depth() -> dict[str, int]:
    url = settings.CELERY_BROKER_URL
    if url.startswith("filesystem://"):
        from pathlib import Path

        folder = Path(str(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"]))
        depth: dict[str, int] = {}
        for entry in folder.iterdir() if folder.exists() else ():
            # kombu names the files <timestamp>_<uuid>.<queue>.msg
            parts = entry.name.split(".")
            if len(parts) >= 3 and parts[-1] == "msg":
                depth[parts[-2]] = depth.get(parts[-2], 0) + 1
        depth.setdefault("celery", 0)
        return depth
    if url.startswith(("redis://", "rediss://")):
        import redis

        client = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)
        # redis-py types a command's result as the sync or the async client's; this client is sync
        return {"celery": int(client.llen("celery"))}  # type: ignore[arg-type]
    return {}


class PlatformCollector:
    """Gauges read when ``/metrics`` is scraped: queue depths, jobs, review queue, active releases."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        from django.db.models import Count

        from arg_platform.models import Job
        from ontology.models import Release  # late: upward import (ignore list), read when scraped

        queue = GaugeMetricFamily("arg_queue_depth", "Broker messages waiting per queue", labels=["queue"])
        broker_up = GaugeMetricFamily("arg_broker_up", "1 when the broker answered the depth query")
        try:
            for name, depth in sorted(_broker_queue_depth().items()):
                queue.add_metric([name], depth)
            broker_up.add_metric([], 1)
        except Exception:  # the scrape reports a down broker, it does not fail
            broker_up.add_metric([], 0)
        yield queue
        yield broker_up

        jobs = GaugeMetricFamily("arg_jobs", "Background jobs by kind and status", labels=["kind", "status"])
        for row in Job.objects.values("kind", "status").annotate(n=Count("id")).order_by("kind", "status"):
            jobs.add_metric([row["kind"], row["status"]], row["n"])
        yield jobs

        yield from self._review()

        active = GaugeMetricFamily(
            "arg_release_active",
            "The active release of each project (value: release version)",
            labels=["project", "release_id"],
        )
        for release in Release.objects.filter(is_active=True).select_related("project"):
            active.add_metric([release.project.slug, str(release.pk)], release.version)
        yield active

    def _review(self) -> Iterator[GaugeMetricFamily]:
        try:
            from django.db.models import Count

            from review.models import Proposal  # late: upward import (ignore list), read when scraped
        except ImportError:  # pragma: no cover - review app always installed
            return
        proposals = GaugeMetricFamily(
            "arg_review_proposals", "Offline-loop proposals by status", labels=["status"]
        )
        for row in Proposal.objects.values("status").annotate(n=Count("id")).order_by("status"):
            proposals.add_metric([row["status"]], row["n"])
        yield proposals


def metrics_payload() -> tuple[bytes, str]:
    """The exposition text of every process plus the scrape-time gauges."""
    registry = CollectorRegistry()
    if MULTIPROCESS:
        MultiProcessCollector(registry)
    else:  # pragma: no cover - settings always set the multiprocess folder
        from prometheus_client import REGISTRY

        registry = REGISTRY
    registry.register(PlatformCollector())
    return generate_latest(registry), CONTENT_TYPE_LATEST


def metrics_token_ok(header: str) -> bool:
    """``Authorization: Bearer <ARG_METRICS_TOKEN>``, compared in constant time; never true when unset."""
    expected = settings.METRICS_TOKEN
    if not expected:
        return False
    scheme, _, value = header.partition(" ")
    return scheme.lower() == "bearer" and secrets.compare_digest(value.strip().encode(), expected.encode())


# --- HTTP request latency --------------------------------------------------------------------------


class MetricsMiddleware:
    """Times every request and counts it per URL name (bounded label values: never the raw path)."""

    def __init__(self, get_response: Callable[[Any], Any]) -> None:
        self.get_response = get_response

    def __call__(self, request: Any) -> Any:
        import time

        started = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        view = (match.view_name or "unnamed") if match is not None else "unmatched"
        method = request.method if request.method in _METHODS else "other"
        _child(HTTP_DURATION, view, method).observe(time.perf_counter() - started)
        _child(HTTP_REQUESTS, view, method, str(response.status_code)).inc()
        return response


_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})
