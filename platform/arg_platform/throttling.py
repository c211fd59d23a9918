"""Per-token rate limits for the REST API, answered with a clear 429.

Each API token has its own budget per *scope*: ``infer`` (``POST /api/v1/infer``), ``feedback``
(``POST /api/v1/feedback``) and ``api`` (every other endpoint). Budgets come from settings
(``ARG_RATE_LIMIT_INFER``, ``ARG_RATE_LIMIT_FEEDBACK``, ``ARG_RATE_LIMIT_API``, e.g. ``600/min``).
People signed in to the web UI are not throttled: the limit protects the platform from runaway
client apps, not its own curators.

The counter is a *sliding window* estimate over two fixed windows (the previous window's count
weighted by how much of it still overlaps, plus the current count): O(1) per request — one read and
one write of a single entry per token and scope — and no burst of twice the budget at a window edge as
a plain fixed window allows. The counts must be shared by every process; where they live is the
*counter store* (``ARG_RATE_LIMIT_STORE``):

- ``cache`` (the default): Django's cache — files under ``ARG_DATA_DIR`` in the embedded setup (≈ 0.3 ms
  a check: a small file read and an atomic rename), Redis in production (``ARG_CACHE_URL``). Read and
  write are not one atomic step, so simultaneous requests of one token may read the same count and the
  budget can be overshot by the number of requests in flight at once — acceptable for a safety limit;
- ``sqlite``: one small SQLite file, ``ARG_DATA_DIR/ratelimit.sqlite3``, shared by every process; each
  check is one ``BEGIN IMMEDIATE`` transaction, so no count is ever lost (≈ 40 µs alone). Not the
  default: a worker thread holding that cross-process write lock can lose the GIL to a sibling thread
  for milliseconds while the other worker's requests wait, and ``bench_load --rate 150`` runs with it
  (infer P95 30–86 ms over three runs) did not show it better than the cache (30–33 ms).
"""

from __future__ import annotations

import math
import random
import re
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

_RATE = re.compile(r"^\s*(\d+)\s*/\s*(\d*)\s*(s|sec|second|m|min|minute|h|hour|d|day)\s*$")
_PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}

SCOPE_BY_URL_NAME = {"infer": "infer", "feedback": "feedback"}


@dataclass(frozen=True)
class Rate:
    limit: int
    period_s: int
    text: str

    def describe(self) -> str:
        unit = {1: "second", 60: "minute", 3600: "hour", 86400: "day"}.get(self.period_s)
        return f"{self.limit} requests per {unit}" if unit else f"{self.limit} requests per {self.period_s} s"


def rate_parse(text: str, *, name: str = "rate") -> Rate:
    """``"600/min"``, ``"10/s"``, ``"5000/hour"``, ``"100/5min"`` → Rate; anything else is refused."""
    match = _RATE.match(text or "")
    if not match or int(match.group(1)) <= 0:
        raise ImproperlyConfigured(f"{name}={text!r}: write it as <count>/<period>, e.g. 600/min or 10/s")
    multiple = int(match.group(2) or 1)
    return Rate(int(match.group(1)), multiple * _PERIODS[match.group(3)[0]], text.strip())


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    retry_after_s: int = 0
    count: float = 0.0


State = tuple[int, int, int]  # (window index, count in it, count in the window before)


class CacheCounterStore:
    """Counters in Django's cache (Redis in production); read-modify-write is not atomic."""

    def update(self, key: str, change: Callable[[State | None], State | None], timeout_s: int) -> None:
        from django.core.cache import cache

        cache_key = f"rl:{key}"
        stored = cache.get(cache_key)
        new = change(tuple(stored) if stored else None)  # type: ignore[arg-type]
        if new is not None:
            cache.set(cache_key, new, timeout=timeout_s)


class SqliteCounterStore:
    """Counters in one SQLite file shared by every process; each update is one IMMEDIATE transaction.

    A connection per thread (opened lazily, so never inherited across a fork). WAL with
    ``synchronous=OFF``: a power cut may lose the last counts, which only a rate limiter could mind.
    A write holds the lock for tens of microseconds, but SQLite's own busy handler waits in sleeps of
    1, 2, 5 … 100 ms, long against such a lock. So the connection does not wait (``busy_timeout=0``)
    and ``update`` retries a refused ``BEGIN IMMEDIATE`` itself after 50–250 µs, for at most
    ``LOCK_WAIT_S``.
    """

    LOCK_WAIT_S = 5.0

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()

    def _connection(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=10, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")  # (set up with the default busy wait, once)
            conn.execute("PRAGMA synchronous=OFF")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS rate_counter (key TEXT PRIMARY KEY, window INTEGER NOT NULL, "
                "current INTEGER NOT NULL, previous INTEGER NOT NULL)"
            )
            conn.execute("PRAGMA busy_timeout = 0")
            self._local.conn = conn
        return conn

    def _begin(self, conn: sqlite3.Connection) -> None:
        deadline = time.monotonic() + self.LOCK_WAIT_S
        while True:
            try:
                conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc) or time.monotonic() > deadline:
                    raise
            time.sleep(random.uniform(50e-6, 250e-6))

    def update(self, key: str, change: Callable[[State | None], State | None], timeout_s: int) -> None:
        conn = self._connection()
        self._begin(conn)
        try:
            row = conn.execute(
                "SELECT window, current, previous FROM rate_counter WHERE key = ?", (key,)
            ).fetchone()
            new = change(tuple(row) if row else None)  # type: ignore[arg-type]
            if new is not None:
                conn.execute(
                    "INSERT INTO rate_counter (key, window, current, previous) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT(key) DO UPDATE SET window = excluded.window, current = excluded.current, "
                    "previous = excluded.previous",
                    (key, *new),
                )
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")


_stores: dict[str, Any] = {}
_stores_lock = threading.Lock()


def counter_store() -> CacheCounterStore | SqliteCounterStore:
    """The configured store (``settings.RATE_LIMIT_STORE``), one per process and data folder."""
    kind = getattr(settings, "RATE_LIMIT_STORE", "cache")
    name = f"{kind}:{settings.DATA_DIR}"
    with _stores_lock:
        store = _stores.get(name)
        if store is None:
            store = _stores[name] = (
                SqliteCounterStore(Path(settings.DATA_DIR) / "ratelimit.sqlite3")
                if kind == "sqlite"
                else CacheCounterStore()
            )
        return store


def rate_check(*, key: str, rate: Rate, now: float | None = None) -> Verdict:
    """Count one request against ``key``'s budget (only allowed requests are counted)."""
    now = time.time() if now is None else now
    window = int(now // rate.period_s)
    elapsed = now - window * rate.period_s
    verdict: list[Verdict] = []

    def change(stored: State | None) -> State | None:
        # one entry per token and scope: [window index, count in it, count in the one before]
        stored_window, current, previous = stored or (window, 0, 0)
        if stored_window != window:
            previous = current if stored_window == window - 1 else 0
            current = 0
        overlap = 1.0 - elapsed / rate.period_s
        estimate = previous * overlap + current
        if estimate >= rate.limit:
            verdict.append(Verdict(False, _retry_after(rate, elapsed, current, previous), estimate))
            return None
        verdict.append(Verdict(True, 0, estimate + 1))
        return (window, current + 1, previous)

    counter_store().update(key, change, 2 * rate.period_s + 1)
    return verdict[0]


def _retry_after(rate: Rate, elapsed: float, current: int, previous: int) -> int:
    """Seconds until the sliding estimate falls below the limit (at least 1)."""
    remaining = rate.period_s - elapsed
    if current >= rate.limit or previous == 0:
        # only the next window can help; it still carries this window's count, decaying
        wait = remaining + rate.period_s * max(0.0, 1 - (rate.limit - 0.5) / max(current, 1))
    else:
        # previous * (1 - (elapsed + t) / period) + current < limit
        wait = rate.period_s * (1 - (rate.limit - current) / previous) - elapsed
    return max(1, math.ceil(wait))


class TokenRateThrottle:
    """DRF throttle: the caller's API token (by its public prefix) against the scope's budget.

    (DRF only calls ``allow_request`` and ``wait``; this module imports nothing of DRF so that
    settings can use ``rate_parse`` to refuse a malformed rate at start-up.)
    """

    def allow_request(self, request: Any, view: Any) -> bool:
        from projects.models import ApiToken

        token = request.auth if isinstance(request.auth, ApiToken) else None
        if token is None:
            return True
        match = getattr(request._request, "resolver_match", None)
        scope = SCOPE_BY_URL_NAME.get(match.url_name if match else "", "api")
        rate = rate_parse(settings.RATE_LIMITS[scope], name=f"ARG_RATE_LIMIT_{scope.upper()}")
        verdict = rate_check(key=f"{scope}:{token.prefix}", rate=rate)
        if verdict.allowed:
            return True
        self.wait_s = verdict.retry_after_s
        request._request.arg_rate_limit = {
            "scope": scope,
            "limit": rate.text,
            "retry_after": verdict.retry_after_s,
            "message": (
                f"rate limit exceeded: this token may send {rate.describe()} to the {scope} scope "
                f"({rate.text}); retry in {verdict.retry_after_s} s"
            ),
        }
        from .metrics import RATE_LIMITED

        RATE_LIMITED.labels(scope).inc()
        return False

    def wait(self) -> float | None:
        return float(getattr(self, "wait_s", 1))
