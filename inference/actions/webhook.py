"""The webhook action integration: one HTTP POST of JSON, with a timeout, never raising.

The receiver gets ``{"action", "handler", "parameters", "context", "idempotency_key"}`` and the
``Idempotency-Key`` header, so it can deduplicate retries itself. A 2xx answer is success; its JSON body
(an object, or any value wrapped as ``{"response": value}``) becomes the action's result. Any other
status, a connection error or an unreadable answer is FAILED; no answer within the timeout is TIMEOUT
(the side effect may or may not have happened).
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

MAX_RESPONSE_BYTES = 1_000_000
USER_AGENT = "arg-platform-action/1"


@dataclass(frozen=True)
class WebhookReply:
    """What one POST produced: ``status`` is SUCCEEDED, FAILED or TIMEOUT."""

    status: str
    result: dict[str, Any] = field(default_factory=dict)
    explanation: str = ""
    duration_ms: float = 0.0


def webhook_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a webhook target, or None (only absolute http(s) URLs are allowed)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return f"unsupported webhook URL scheme {parts.scheme or '(none)'!r}; use http or https"
    if not parts.hostname:
        return "the webhook URL has no host"
    return None


def webhook_request(url: str, body: dict[str, Any], *, idempotency_key: str) -> dict[str, Any]:
    """The request a call would send (what a dry run shows)."""
    return {
        "method": "POST",
        "url": url,
        "headers": {"Content-Type": "application/json", "Idempotency-Key": idempotency_key},
        "body": body,
    }


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def webhook_post(url: str, body: dict[str, Any], *, idempotency_key: str, timeout_s: float) -> WebhookReply:
    """POST ``body`` as JSON to ``url``; every failure becomes a FAILED or TIMEOUT reply."""
    started = time.perf_counter()

    def reply(status: str, result: dict[str, Any], explanation: str) -> WebhookReply:
        return WebhookReply(status, result, explanation, round((time.perf_counter() - started) * 1000, 3))

    problem = webhook_url_problem(url)
    if problem:
        return reply("FAILED", {"error": problem}, problem)
    data = json.dumps(body, default=str).encode("utf-8")
    request = urllib.request.Request(
        url,
        data=data,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json",
            "Idempotency-Key": idempotency_key,
            "User-Agent": USER_AGENT,
        },
    )
    # Loopback receivers (a sidecar, the tests) never go through an HTTP proxy from the environment.
    handlers = [urllib.request.ProxyHandler({})] if _is_loopback(urlsplit(url).hostname or "") else []
    opener = urllib.request.build_opener(*handlers)
    try:
        with opener.open(request, timeout=timeout_s) as response:
            status_code = response.status
            raw = response.read(MAX_RESPONSE_BYTES + 1)
    except urllib.error.HTTPError as exc:
        detail = _error_body(exc)
        message = f"the webhook answered HTTP {exc.code}" + (f": {detail}" if detail else "")
        return reply("FAILED", {"error": message, "http_status": exc.code}, message)
    except TimeoutError:
        return reply("TIMEOUT", {"error": f"no answer within {timeout_s:g} s"}, _timeout_text(timeout_s))
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            return reply("TIMEOUT", {"error": f"no answer within {timeout_s:g} s"}, _timeout_text(timeout_s))
        message = f"the webhook could not be reached: {exc.reason}"
        return reply("FAILED", {"error": message}, message)
    except (OSError, ValueError, http.client.HTTPException) as exc:  # reset, malformed answer, bad URL
        message = f"the webhook call failed: {exc}"
        return reply("FAILED", {"error": message}, message)
    if len(raw) > MAX_RESPONSE_BYTES:
        message = f"the webhook answer is larger than {MAX_RESPONSE_BYTES} bytes"
        return reply("FAILED", {"error": message, "http_status": status_code}, message)
    return reply("SUCCEEDED", _result_of(raw, status_code), f"the webhook answered HTTP {status_code}")


def _timeout_text(timeout_s: float) -> str:
    return f"the webhook did not answer within {timeout_s:g} s; whether the action happened is unknown"


def _error_body(exc: urllib.error.HTTPError) -> str:
    try:
        text = exc.read(2_000).decode("utf-8", "replace").strip()
    except OSError:
        return ""
    try:
        parsed = json.loads(text)
    except ValueError:
        return text[:300]
    if isinstance(parsed, dict):
        for key in ("error", "detail", "message"):
            if isinstance(parsed.get(key), str):
                return parsed[key][:300]
    return text[:300]


def _result_of(raw: bytes, status_code: int) -> dict[str, Any]:
    text = raw.decode("utf-8", "replace")
    if not text.strip():
        return {"http_status": status_code}
    try:
        parsed = json.loads(text)
    except ValueError:
        return {"http_status": status_code, "text": text[:2_000]}
    return parsed if isinstance(parsed, dict) else {"response": parsed}
