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

- ``sqlite`` (the default without ``ARG_CACHE_URL``, i.e. the embedded setup): one small SQLite file,
  ``ARG_DATA_DIR/ratelimit.sqlite3``, shared by the gunicorn workers and the CLI; a check is one atomic
  UPSERT statement (≈ 11 µs), so no count is ever lost. (Django's file cache, used before, cost
  0.3–1.4 ms a check: a temp file written and renamed over the old one on every request; the first
  version of this store, a Python read-modify-write inside ``BEGIN
  IMMEDIATE``, could hold the lock while waiting for the GIL.)
- ``cache`` (the default with ``ARG_CACHE_URL``: Redis in production): Django's cache. Read and write
  are not one atomic step there, so simultaneous requests of one token may read the same count and the
  budget can be overshot by the number of requests in flight at once — acceptable for a safety limit.
"""

from __future__ import annotations

import math
import random
import re
import sqlite3
import threading
import time
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


State = tuple[int, int, int]  # (window index, count in it, count in the window before)


def _shift(stored: State | None, window: int) -> tuple[int, int]:
    """``(current, previous)`` counts as seen from ``window`` (an older entry moves back or expires)."""
    stored_window, current, previous = stored or (window, 0, 0)
    if stored_window == window:
        return current, previous
    return 0, (current if stored_window == window - 1 else 0)


def _refusal(rate: Rate, elapsed: float, current: int, previous: int) -> Verdict | None:
    """The refusal when the sliding estimate has reached the limit, else None."""
    if previous * (1.0 - elapsed / rate.period_s) + current >= rate.limit:
        return Verdict(False, _retry_after(rate, elapsed, current, previous))
    return None


class CacheCounterStore:
    """Counters in Django's cache (files or Redis): read, decide, write — not one atomic step."""

    def check(self, key: str, rate: Rate, window: int, elapsed: float) -> Verdict:
        from django.core.cache import cache

        cache_key = f"rl:{key}"
        stored = cache.get(cache_key)
        current, previous = _shift(tuple(stored) if stored else None, window)
        refused = _refusal(rate, elapsed, current, previous)
        if refused is not None:
            return refused
        cache.set(cache_key, (window, current + 1, previous), timeout=2 * rate.period_s + 1)
        return Verdict(True)


class SqliteCounterStore:
    """Counters in one SQLite file shared by every process; a check is **one** UPSERT statement.

    The statement moves the entry to the current window, and counts the request only where the sliding
    estimate is still under the limit (``ON CONFLICT … DO UPDATE … WHERE``): SQLite takes and releases
    its write lock inside that one call, in C, so no Python code — which could wait for the GIL while a
    sibling thread runs — ever holds the lock, and no count is ever lost between processes. A refusal
    (no row changed) then reads the entry to tell the client when to retry. One connection per thread
    (opened lazily, never inherited across a fork); WAL with ``synchronous=OFF``: a power cut may lose
    the last counts, which only a rate limiter could mind. SQLite's own busy handler waits in sleeps of
    1, 2, 5 … 100 ms — long against a lock held for microseconds — so the connection does not wait
    (``busy_timeout=0``) and a refused statement is retried after 50–250 µs, for at most ``LOCK_WAIT_S``.
    """

    LOCK_WAIT_S = 5.0
    _SHIFTED_PREVIOUS = "(CASE WHEN window = :w THEN previous WHEN window = :w - 1 THEN current ELSE 0 END)"
    _SHIFTED_CURRENT = "(CASE WHEN window = :w THEN current ELSE 0 END)"
    UPSERT = (
        "INSERT INTO rate_counter (key, window, current, previous) VALUES (:key, :w, 1, 0) "
        "ON CONFLICT(key) DO UPDATE SET "
        f"previous = {_SHIFTED_PREVIOUS}, current = {_SHIFTED_CURRENT} + 1, window = :w "
        f"WHERE {_SHIFTED_PREVIOUS} * :overlap + {_SHIFTED_CURRENT} < :limit"
    )

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()

    def _connection(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=0, isolation_level=None, check_same_thread=False)
            # Processes opening a new file at once contend for the lock that switching to WAL and creating
            # the table take; SQLite refuses one of them at once (a deadlock, no busy wait): retried too.
            self._execute(conn, "PRAGMA journal_mode=WAL", {})
            self._execute(conn, "PRAGMA synchronous=OFF", {})
            self._execute(
                conn,
                "CREATE TABLE IF NOT EXISTS rate_counter (key TEXT PRIMARY KEY, window INTEGER NOT NULL, "
                "current INTEGER NOT NULL, previous INTEGER NOT NULL)",
                {},
            )
            self._local.conn = conn
        return conn

    def _execute(self, conn: sqlite3.Connection, sql: str, params: dict[str, Any]) -> sqlite3.Cursor:
        deadline = time.monotonic() + self.LOCK_WAIT_S
        while True:
            try:
                return conn.execute(sql, params)
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc) or time.monotonic() > deadline:
                    raise
            time.sleep(random.uniform(50e-6, 250e-6))

    def check(self, key: str, rate: Rate, window: int, elapsed: float) -> Verdict:
        conn = self._connection()
        params = {"key": key, "w": window, "overlap": 1.0 - elapsed / rate.period_s, "limit": rate.limit}
        if self._execute(conn, self.UPSERT, params).rowcount == 1:
            return Verdict(True)
        row = self._execute(
            conn, "SELECT window, current, previous FROM rate_counter WHERE key = :key", {"key": key}
        ).fetchone()
        current, previous = _shift(tuple(row) if row else None, window)
        return _refusal(rate, elapsed, current, previous) or Verdict(False, 1)


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
    """Count one request against ``key``'s budget (only allowed requests are counted).

    One entry per token and scope: [window index, count in it, count in the window before]."""
    now = time.time() if now is None else now
    window = int(now // rate.period_s)
    return counter_store().check(key, rate, window, now - window * rate.period_s)


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
        # late: settings import this module before the app registry is ready
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
