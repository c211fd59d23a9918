"""Per-token rate limits: a clear 429 with Retry-After, per token and per scope, nothing routed."""

from __future__ import annotations

import contextlib
import multiprocessing
import sqlite3
import threading
import uuid
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from rest_framework.test import APIClient

from arg_platform.metrics import metrics_payload
from arg_platform.throttling import Rate, SqliteCounterStore, counter_store, rate_check, rate_parse
from inference.models import InferenceLog
from projects.services import api_token_create

pytestmark = pytest.mark.django_db

LIMITS = {"infer": "3/min", "feedback": "2/min", "api": "4/min"}


def _bearer(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def _rate_limited_total(scope: str) -> float:
    text = metrics_payload()[0].decode()
    line = f'arg_rate_limited_total{{scope="{scope}"}} '
    return sum(float(row.split()[-1]) for row in text.splitlines() if row.startswith(line))


def test_infer_over_the_budget_gets_a_clear_429_and_is_not_routed(world, settings):
    settings.RATE_LIMITS = LIMITS
    client = _bearer(world["key"])
    metric_before = _rate_limited_total("infer")
    for _ in range(3):
        assert (
            client.post("/api/v1/infer", {"prompt": "where is my invoice"}, format="json").status_code == 200
        )
    logs = InferenceLog.objects.count()

    response = client.post("/api/v1/infer", {"prompt": "where is my invoice"}, format="json")

    assert response.status_code == 429
    body = response.json()
    assert body["code"] == "rate_limited"
    assert body["scope"] == "infer"
    assert body["limit"] == "3/min"
    assert 1 <= body["retry_after"] <= 120
    assert response["Retry-After"] == str(body["retry_after"])
    assert body["detail"].startswith("rate limit exceeded: this token may send 3 requests per minute")
    assert body["request_id"] == response["X-Request-ID"]
    assert InferenceLog.objects.count() == logs  # a refused request is not routed
    assert _rate_limited_total("infer") == metric_before + 1


def test_budgets_are_per_token_and_per_scope(world, settings):
    settings.RATE_LIMITS = LIMITS
    first = _bearer(world["key"])
    for _ in range(3):
        first.post("/api/v1/infer", {"prompt": "where is my invoice"}, format="json")
    assert first.post("/api/v1/infer", {"prompt": "hi"}, format="json").status_code == 429
    # the same token still reads (scope "api") …
    assert first.get(f"/api/v1/projects/{world['project'].slug}/labels/").status_code == 200
    # … and another token of the same project has its own budget
    _, other_key = api_token_create(project=world["project"], name="other-app", role=world["token"].role)
    assert _bearer(other_key).post("/api/v1/infer", {"prompt": "hi"}, format="json").status_code == 200


def test_feedback_has_its_own_budget(world, settings):
    settings.RATE_LIMITS = LIMITS
    client = _bearer(world["key"])
    request_id = client.post("/api/v1/infer", {"prompt": "where is my invoice"}, format="json").json()[
        "request_id"
    ]
    feedback = {"request_id": request_id, "kind": "helpful", "helpful": True}
    assert [client.post("/api/v1/feedback", feedback, format="json").status_code for _ in range(3)] == [
        200,
        200,
        429,
    ]


def test_people_signed_in_are_not_throttled(world, settings, api_as):
    settings.RATE_LIMITS = LIMITS
    session = api_as(world["people"]["expert"])
    codes = {session.get(f"/api/v1/projects/{world['project'].slug}/labels/").status_code for _ in range(8)}
    assert codes == {200}


@pytest.fixture(params=["sqlite", "cache"])
def counter_store_kind(request, settings):
    settings.RATE_LIMIT_STORE = request.param
    return request.param


def test_sliding_window_counts_the_overlap_of_the_previous_window(counter_store_kind):
    assert type(counter_store()).__name__.lower().startswith(counter_store_kind)
    rate = Rate(10, 60, "10/min")
    key = f"unit:{uuid.uuid4().hex}"
    start = 6000.0  # a window boundary (6000 = 100 × 60)
    assert all(rate_check(key=key, rate=rate, now=start + i).allowed for i in range(10))
    refused = rate_check(key=key, rate=rate, now=start + 30)
    assert not refused.allowed
    # the next window opens in 30 s; 3 s into it the previous 10 weigh 95 % = 9.5 < 10: one more fits
    assert refused.retry_after_s == 30 + 3
    assert rate_check(key=key, rate=rate, now=start + 30 + 33).allowed
    # half-way into the next window the previous one weighs 50 %: with the one above, 4 more fit
    assert [rate_check(key=key, rate=rate, now=start + 90).allowed for _ in range(5)] == [True] * 4 + [False]
    # two windows later everything is forgotten
    assert rate_check(key=key, rate=rate, now=start + 180).allowed


def test_sqlite_counters_lose_no_count_under_concurrent_requests(settings):
    """Threads with their own connections (as gunicorn's workers and threads have) hitting one key at
    once: every check is counted, and exactly ``limit`` are allowed."""
    settings.RATE_LIMIT_STORE = "sqlite"
    rate = Rate(150, 60, "150/min")
    key = f"race:{uuid.uuid4().hex}"
    verdicts: list[bool] = []
    start = threading.Barrier(8)

    def client() -> None:
        start.wait()
        for _ in range(25):
            verdicts.append(rate_check(key=key, rate=rate, now=6001.0).allowed)

    threads = [threading.Thread(target=client) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(verdicts) == 200
    assert verdicts.count(True) == 150  # no lost update: a non-atomic read-modify-write allows more


def _first_check(path: str, start, failures) -> None:  # (in a forked process)
    store = SqliteCounterStore(Path(path))
    start.wait()
    try:
        store.check("k", Rate(100, 60, "100/min"), 100, 1.0)
    except sqlite3.Error as exc:
        failures.put(repr(exc))


def test_sqlite_counters_set_up_a_new_file_from_many_processes_at_once(tmp_path):
    """Gunicorn's workers take their first requests together: each opens the new counter file, switches
    it to WAL and creates the table while the others do. None fails, and every request is counted."""
    fork = multiprocessing.get_context("fork")
    for round_ in range(30):
        path = tmp_path / f"r{round_}" / "ratelimit.sqlite3"
        start, failures = fork.Barrier(8), fork.Queue()
        workers = [fork.Process(target=_first_check, args=(str(path), start, failures)) for _ in range(8)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=60)
        assert [worker.exitcode for worker in workers] == [0] * 8
        assert failures.empty(), failures.get()
        with contextlib.closing(sqlite3.connect(path)) as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
            assert conn.execute("SELECT current FROM rate_counter WHERE key = 'k'").fetchone() == (8,)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("600/min", Rate(600, 60, "600/min")),
        ("10/s", Rate(10, 1, "10/s")),
        ("5/15min", Rate(5, 900, "5/15min")),
    ],
)
def test_rate_parse(text, expected):
    assert rate_parse(text) == expected


@pytest.mark.parametrize("text", ["", "600", "0/min", "ten/min", "5/fortnight"])
def test_rate_parse_refuses_malformed_rates(text):
    with pytest.raises(ImproperlyConfigured, match="write it as <count>/<period>"):
        rate_parse(text, name="ARG_RATE_LIMIT_INFER")
