"""The webhook action integration: one signed HTTP POST of JSON, with a timeout, never raising.

The receiver gets ``{"action", "handler", "parameters", "context", "idempotency_key"}``, the
``Idempotency-Key`` header, so it can deduplicate retries itself, and ``X-ARG-Signature:
t=<unix time>,v1=<hex HMAC-SHA256(project secret, "<t>.<body>")>`` so it can check the call comes from
this platform (docs/security.md). The call goes through ``arg_platform.outbound``: public addresses
only unless ``ARG_OUTBOUND_ALLOW`` names the target, no redirects, bounded time and size.

A 2xx answer is success. What the caller of the action receives from it is the reply's **result
fields**: the top-level keys of a JSON object whose values are scalars (text of at most
``MAX_RESULT_TEXT`` characters, numbers, booleans, null), at most ``MAX_RESULT_FIELDS`` of them; any
other body (text, HTML, nested structures) is not relayed — the raw reply body never reaches a client.
Any other status (3xx included), a refused target, a connection error or an oversized answer is FAILED,
explained without the reply's body; no answer within the timeout is TIMEOUT (the side effect may or may
not have happened).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from arg_platform import outbound

MAX_RESPONSE_BYTES = 1_000_000
MAX_RESULT_FIELDS = 50
MAX_RESULT_TEXT = 1_000
USER_AGENT = "arg-platform-action/1"
SIGNATURE_HEADER = "X-ARG-Signature"


@dataclass(frozen=True)
class WebhookReply:
    """What one POST produced: ``status`` is SUCCEEDED, FAILED or TIMEOUT."""

    status: str
    result: dict[str, Any] = field(default_factory=dict)
    explanation: str = ""
    duration_ms: float = 0.0


WEBHOOK_TARGET_REFUSED = "action.webhook_target_refused"


def webhook_url_problem(url: str, *, resolve: bool = False) -> str | None:
    """Why ``url`` cannot be a webhook target, or None: only http(s) URLs to a host that is not
    internal (see ``arg_platform.outbound``); with ``resolve`` a host name's addresses are checked too."""
    problem = outbound.target_problem(url, resolve=resolve)
    return problem and problem.replace("the URL", "the webhook URL").replace(
        "URL scheme", "webhook URL scheme"
    )


def webhook_request(url: str, body: dict[str, Any], *, idempotency_key: str) -> dict[str, Any]:
    """The request a call would send (what a dry run shows)."""
    return {
        "method": "POST",
        "url": url,
        "headers": {
            "Content-Type": "application/json",
            "Idempotency-Key": idempotency_key,
            SIGNATURE_HEADER: "t=<unix time>,v1=<HMAC-SHA256>",
        },
        "body": body,
    }


def webhook_post(
    url: str,
    body: dict[str, Any],
    *,
    idempotency_key: str,
    timeout_s: float,
    sign: Callable[[bytes], str] | None = None,
) -> WebhookReply:
    """POST ``body`` as JSON to ``url``; every failure becomes a FAILED or TIMEOUT reply. ``sign``
    maps the encoded body to the ``X-ARG-Signature`` value (no header without it)."""
    started = time.perf_counter()

    def reply(status: str, result: dict[str, Any], explanation: str) -> WebhookReply:
        return WebhookReply(status, result, explanation, round((time.perf_counter() - started) * 1000, 3))

    data = json.dumps(body, default=str).encode("utf-8")
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "Idempotency-Key": idempotency_key,
        "User-Agent": USER_AGENT,
    }
    if sign is not None:
        headers[SIGNATURE_HEADER] = sign(data)
    try:
        response = outbound.request(
            "POST", url, body=data, headers=headers, timeout_s=timeout_s, max_bytes=MAX_RESPONSE_BYTES
        )
    except outbound.OutboundRefused as exc:
        message = f"the webhook target is refused: {exc}"
        return reply("FAILED", {"error": message}, message)
    except outbound.OutboundTimeout:
        return reply("TIMEOUT", {"error": f"no answer within {timeout_s:g} s"}, _timeout_text(timeout_s))
    except outbound.OutboundTooLarge:
        message = f"the webhook answer is larger than {MAX_RESPONSE_BYTES} bytes"
        return reply("FAILED", {"error": message}, message)
    except outbound.OutboundError as exc:
        message = f"the webhook could not be reached: {exc}"
        return reply("FAILED", {"error": message}, message)
    if 300 <= response.status < 400:
        message = f"the webhook answered HTTP {response.status} (redirects are not followed)"
        return reply("FAILED", {"error": message, "http_status": response.status}, message)
    if not 200 <= response.status < 300:
        message = f"the webhook answered HTTP {response.status}"
        return reply("FAILED", {"error": message, "http_status": response.status}, message)
    return reply("SUCCEEDED", result_fields(response.body), f"the webhook answered HTTP {response.status}")


def _timeout_text(timeout_s: float) -> str:
    return f"the webhook did not answer within {timeout_s:g} s; whether the action happened is unknown"


def result_fields(raw: bytes) -> dict[str, Any]:
    """The result fields of a 2xx reply (see the module doc): scalar top-level keys of a JSON object."""
    try:
        parsed = json.loads(raw.decode("utf-8"))
    except ValueError:
        return {}
    if not isinstance(parsed, dict):
        return {}
    fields: dict[str, Any] = {}
    for key, value in parsed.items():
        if len(fields) >= MAX_RESULT_FIELDS:
            break
        if not isinstance(key, str) or len(key) > 64:
            continue
        scalar = value is None or isinstance(value, bool | int | float)
        if scalar or (isinstance(value, str) and len(value) <= MAX_RESULT_TEXT):
            fields[key] = value
    return fields
