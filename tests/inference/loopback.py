"""A tiny HTTP server on 127.0.0.1 for tests of outbound calls (action webhooks, the LLM endpoint)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: Any = field(default_factory=dict)  # JSON-encoded unless bytes
    delay_s: float = 0.0


@dataclass
class Loopback:
    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)


@contextmanager
def loopback_server(respond: Callable[[dict[str, Any]], Reply]) -> Iterator[Loopback]:
    """Serve POSTs on a free loopback port; ``respond`` gets each request (path, headers, json)."""
    record = Loopback(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            request = {"path": self.path, "headers": dict(self.headers), "json": json.loads(raw or b"null")}
            record.requests.append(request)
            reply = respond(request)
            if reply.delay_s:
                time.sleep(reply.delay_s)
            payload = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
            try:
                self.send_response(reply.status)
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
        yield record
    finally:
        server.shutdown()
        server.server_close()
