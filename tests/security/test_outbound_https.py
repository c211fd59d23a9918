"""The outbound-HTTP helper over HTTPS: the call connects to the address it checked, and TLS (SNI and
the certificate check) uses the URL's host name — never the pinned address. A TLS listener on loopback
with a certificate for ``hook.test`` stands in for an internal HTTPS service; the name resolution is
replaced so that ``hook.test`` and ``other.test`` resolve to that listener."""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from arg_platform import outbound


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for ``hook.test`` (and its key), made with the openssl command."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-keyout", str(key), "-out", str(cert),
            "-subj", "/CN=hook.test", "-addext", "subjectAltName=DNS:hook.test",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


@contextmanager
def tls_listener(cert: Path, key: Path) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """An HTTPS server on a free loopback port recording each POST's path and headers."""
    received: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            received.append({"path": self.path, "headers": dict(self.headers)})
            payload = json.dumps({"ok": True}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], received
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def to_loopback(monkeypatch: pytest.MonkeyPatch, certificate: tuple[Path, Path]) -> None:
    """Every name resolves to 127.0.0.1, and the test certificate is the one trusted root."""
    monkeypatch.setattr(
        socket,
        "getaddrinfo",
        lambda host, port, *a, **k: [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))],
    )
    trusted = ssl.create_default_context

    def only_the_test_root(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        return trusted(cafile=str(certificate[0]))

    monkeypatch.setattr(ssl, "create_default_context", only_the_test_root)


def test_https_connects_to_the_checked_address_and_verifies_the_urls_host(
    to_loopback: None, certificate: tuple[Path, Path], settings: Any
) -> None:
    settings.OUTBOUND_ALLOW = ["hook.test"]
    with tls_listener(*certificate) as (port, received):
        response = outbound.request(
            "POST", f"https://hook.test:{port}/in", body=b"{}", timeout_s=5, max_bytes=1000
        )

    assert response.status == 200
    (request,) = received
    assert request["path"] == "/in" and request["headers"]["Host"] == f"hook.test:{port}"


def test_https_refuses_a_certificate_for_another_name(
    to_loopback: None, certificate: tuple[Path, Path], settings: Any
) -> None:
    settings.OUTBOUND_ALLOW = ["other.test"]
    with tls_listener(*certificate) as (port, received), pytest.raises(outbound.OutboundError) as refused:
        outbound.request("POST", f"https://other.test:{port}/in", body=b"{}", timeout_s=5, max_bytes=1000)

    assert not isinstance(refused.value, outbound.OutboundRefused)  # it connected; TLS refused the name
    assert received == []


def test_https_to_a_name_resolving_to_loopback_is_refused_before_connecting(
    to_loopback: None, certificate: tuple[Path, Path], settings: Any
) -> None:
    settings.OUTBOUND_ALLOW = []
    refused = pytest.raises(outbound.OutboundRefused, match="resolves to 127.0.0.1")
    with tls_listener(*certificate) as (port, received), refused:
        outbound.request("POST", f"https://hook.test:{port}/in", body=b"{}", timeout_s=5, max_bytes=1000)

    assert received == []
