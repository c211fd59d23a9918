"""The one way the platform calls out over HTTP (action webhooks, the review webhook, the LLM client).

The network rules live here, so no caller can forget one:

* **http(s) only**, with a host;
* **no internal targets**: every address the host resolves to must be globally routable — loopback,
  private (RFC 1918, IPv6 ULA), shared (100.64/10), link-local (169.254/16, where cloud metadata
  answers at 169.254.169.254), multicast, reserved and unspecified addresses are refused, unless the
  operator's allow-list ``OUTBOUND_ALLOW`` (``ARG_OUTBOUND_ALLOW``: host names, IP addresses, CIDRs)
  names the host or the address;
* **checked where it connects**: the host is resolved once, every address is checked, and the socket
  connects to that checked address while the request keeps the original ``Host`` header (and, over
  https, the original name for SNI and certificate checks) — a DNS answer that changes between the
  check and the connection (DNS rebinding) cannot move the call to an internal address;
* **no redirects**: a 3xx comes back as a response like any other status; callers treat it as a failure;
* **bounded**: ``timeout_s`` bounds the connection and each read, and the whole exchange; at most
  ``max_bytes`` of the body are read, and a larger body is an ``OutboundTooLarge`` error;
* **no environment proxies**: ``HTTP_PROXY`` / ``HTTPS_PROXY`` are never used (a proxy would resolve
  the host itself, out of reach of the address check).
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
READ_CHUNK = 65_536


class OutboundError(Exception):
    """The call did not produce a response (refused target, network failure, oversized body)."""


class OutboundRefused(OutboundError):
    """The target is not one the platform may call: bad scheme, no host, or an internal address."""


class OutboundTimeout(OutboundError):
    """No connection or no complete answer within the time allowed."""


class OutboundTooLarge(OutboundError):
    """The response body is larger than the caller accepts."""


@dataclass(frozen=True)
class OutboundResponse:
    """What the target answered: any status (3xx included: redirects are not followed)."""

    status: int
    headers: Mapping[str, str]  # lower-case names
    body: bytes


@dataclass(frozen=True)
class AllowList:
    """Targets the operator declared legitimate although internal: host names and networks."""

    hosts: frozenset[str] = frozenset()
    networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def parse(cls, entries: Iterable[str]) -> AllowList:
        hosts: set[str] = set()
        networks: list[IPNetwork] = []
        for entry in entries:
            entry = entry.strip().lower().strip("[]")
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                hosts.add(entry.rstrip("."))
        return cls(frozenset(hosts), tuple(networks))

    def admits_host(self, host: str) -> bool:
        return host.lower().rstrip(".") in self.hosts

    def admits_address(self, address: IPAddress) -> bool:
        return any(address in network for network in self.networks)


def allow_list() -> AllowList:
    """The ``OUTBOUND_ALLOW`` setting, parsed (read on every call: tests and operators may change it)."""
    return AllowList.parse(getattr(settings, "OUTBOUND_ALLOW", ()) or ())


def address_problem(address: IPAddress) -> str | None:
    """Why ``address`` is internal (the kind of address), or None for a globally routable one."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_unspecified:
        return "unspecified"
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local (cloud metadata)"
    if address.is_multicast:
        return "multicast"
    if address.is_private:
        return "private"
    if address.is_reserved:
        return "reserved"
    if not address.is_global:
        return "not globally routable"
    return None


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _resolve(host: str, port: int) -> list[IPAddress]:
    literal = _literal(host)
    if literal is not None:
        return [literal]
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise OutboundError(f"cannot resolve {host!r}: {exc}") from exc
    addresses: list[IPAddress] = []
    for *_, sockaddr in infos:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise OutboundError(f"cannot resolve {host!r}")
    return addresses


@dataclass(frozen=True)
class _Target:
    scheme: str
    host: str
    port: int
    path: str
    addresses: tuple[IPAddress, ...]


def _parse(url: str) -> tuple[str, str, int, str]:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise OutboundRefused(f"unsupported URL scheme {parts.scheme or '(none)'!r}; use http or https")
    if not parts.hostname:
        raise OutboundRefused("the URL has no host")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise OutboundRefused(f"the URL has an invalid port: {exc}") from exc
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return parts.scheme, parts.hostname, port, path


def _checked(url: str, allowed: AllowList, *, resolve: bool = True) -> _Target:
    scheme, host, port, path = _parse(url)
    literal = _literal(host)
    if not resolve and literal is None:
        return _Target(scheme, host, port, path, ())
    addresses = _resolve(host, port)
    if not allowed.admits_host(host):
        for address in addresses:
            problem = address_problem(address)
            if problem and not allowed.admits_address(address):
                via = "" if literal is not None else f"{host} resolves to "
                raise OutboundRefused(
                    f"{via}{address} is a {problem} address; internal targets are refused unless "
                    "ARG_OUTBOUND_ALLOW names them"
                )
    return _Target(scheme, host, port, path, tuple(addresses))


def target_problem(url: str, *, resolve: bool = True) -> str | None:
    """Why ``url`` may not be called, or None — what a form or an API checks when a target is saved.

    With ``resolve`` the host name is resolved and its addresses checked; a name that does not resolve
    (yet) is not a refusal here: the call itself checks again where it connects."""
    try:
        _checked(url, allow_list(), resolve=resolve)
    except OutboundRefused as exc:
        return str(exc)
    except OutboundError:
        return None
    return None


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """An HTTP connection to a checked address, with the URL's host in the ``Host`` header."""

    def __init__(self, host: str, port: int, address: IPAddress, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self.pinned_address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((str(self.pinned_address), self.port), self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """An HTTPS connection to a checked address; SNI and the certificate check use the URL's host."""

    def __init__(self, host: str, port: int, address: IPAddress, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self.pinned_address = address

    def connect(self) -> None:
        sock = socket.create_connection((str(self.pinned_address), self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)  # type: ignore[attr-defined]


def request(
    method: str,
    url: str,
    *,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    timeout_s: float,
    max_bytes: int,
) -> OutboundResponse:
    """Send one request under the rules of the module doc and return the answer, whatever its status.

    Raises ``OutboundRefused`` before anything is sent to a refused target, ``OutboundTimeout``,
    ``OutboundTooLarge``, or ``OutboundError`` for any other failure (connection refused, TLS, a
    malformed answer)."""
    target = _checked(url, allow_list())
    deadline = time.monotonic() + timeout_s
    last_error: OSError | None = None
    for address in target.addresses:
        connection_class = _PinnedHTTPSConnection if target.scheme == "https" else _PinnedHTTPConnection
        connection = connection_class(target.host, target.port, address, timeout_s)
        try:
            try:
                connection.connect()
            except TimeoutError as exc:
                raise OutboundTimeout(f"no connection within {timeout_s:g} s") from exc
            except OSError as exc:  # refused, unreachable: try the next address
                last_error = exc
                continue
            return _exchange(connection, method, target.path, body, headers or {}, deadline, max_bytes)
        finally:
            connection.close()
    raise OutboundError(f"cannot connect to {target.host}: {last_error}")


def _exchange(
    connection: http.client.HTTPConnection,
    method: str,
    path: str,
    body: bytes | None,
    headers: Mapping[str, str],
    deadline: float,
    max_bytes: int,
) -> OutboundResponse:
    try:
        connection.request(method, path, body=body, headers=dict(headers))
        response = connection.getresponse()
        length = response.getheader("Content-Length")
        if length and length.isdigit() and int(length) > max_bytes:
            raise OutboundTooLarge(f"the answer is larger than {max_bytes} bytes")
        chunks: list[bytes] = []
        size = 0
        while True:
            if time.monotonic() > deadline:
                raise OutboundTimeout("the answer did not arrive in time")
            chunk = response.read(min(READ_CHUNK, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > max_bytes:
                raise OutboundTooLarge(f"the answer is larger than {max_bytes} bytes")
        return OutboundResponse(
            status=response.status,
            headers={name.lower(): value for name, value in response.getheaders()},
            body=b"".join(chunks),
        )
    except TimeoutError as exc:
        raise OutboundTimeout("the answer did not arrive in time") from exc
    except (OSError, http.client.HTTPException) as exc:
        raise OutboundError(f"{type(exc).__name__}: {exc}") from exc
