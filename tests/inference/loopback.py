"""A tiny HTTP server on 127.0.0.1 for tests of outbound calls (action webhooks, the LLM endpoint).

Outbound calls refuse loopback unless ``OUTBOUND_ALLOW`` names it, so while the server runs
``loopback_server`` allows 127.0.0.1 — the stand-in for a legitimate receiver. Security tests pass
``allow=False`` to keep the default (empty) allow-list: the server then stands in for an internal
service an attacker would like to reach."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from django.conf import settings


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: Any = field(default_factory=dict)  # JSON-encoded unless bytes
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Loopback:
    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)


@contextmanager
def _outbound_allowed(entries: list[str] | None) -> Iterator[None]:
    # Not override_settings: tests change settings (the ``settings`` fixture) inside the block, and
    # popping an override_settings layer under theirs would drop their changes or leak this one.
    # The allow-list is set on the settings layer in force now and restored on that same layer.
    if entries is None:
        yield
        return
    holder = settings._wrapped
    previous = holder.OUTBOUND_ALLOW
    holder.OUTBOUND_ALLOW = entries
    settings.__dict__.pop("OUTBOUND_ALLOW", None)  # LazySettings caches what it read
    try:
        yield
    finally:
        holder.OUTBOUND_ALLOW = previous
        settings.__dict__.pop("OUTBOUND_ALLOW", None)


@contextmanager
def loopback_server(respond: Callable[[dict[str, Any]], Reply], *, allow: bool = True) -> Iterator[Loopback]:
    """Serve POSTs on a free loopback port; ``respond`` gets each request (path, headers, json, raw).
    With ``allow`` (the default) outbound calls may reach it while it runs."""
    record = Loopback(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                parsed = json.loads(raw or b"null")
            except ValueError:
                parsed = None
            request = {"path": self.path, "headers": dict(self.headers), "json": parsed, "raw": raw}
            record.requests.append(request)
            reply = respond(request)
            if reply.delay_s:
                time.sleep(reply.delay_s)
            payload = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
            try:
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except OSError:  # the client gave up (a timeout test)
                pass

        def log_message(self, format: str, *args: Any) -> None:  # keep the test output quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    record.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with _outbound_allowed(["127.0.0.1"] if allow else None):
            yield record
    finally:
        server.shutdown()
        server.server_close()
