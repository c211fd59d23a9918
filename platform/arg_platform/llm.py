"""The client of the optional LLM: one call to an OpenAI-compatible chat-completions endpoint
(``ARG_LLM_URL``, ``ARG_LLM_MODEL``, ``ARG_LLM_API_KEY``), bounded in time (``ARG_LLM_TIMEOUT_S``) and in
the size of the reply read, and sent through ``arg_platform.outbound`` (an LLM on an internal address
must be named in ``ARG_OUTBOUND_ALLOW``). Callers decide what a failure means (an extractive answer, an
UNSURE)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from django.conf import settings

from arg_platform import outbound


class LlmError(RuntimeError):
    """The LLM gave no usable answer: network, HTTP status, reply shape, or an answer the caller refuses."""


def chat_completions_url(base: str) -> str:
    """The chat-completions URL of ``base``, which may name the host, its ``/v1`` or the full path."""
    base = base.rstrip("/")
    if base.endswith("/chat/completions"):
        return base
    return f"{base}/chat/completions" if base.endswith("/v1") else f"{base}/v1/chat/completions"


def chat_complete(
    messages: Sequence[dict[str, str]],
    *,
    max_tokens: int | None = None,
    max_reply_bytes: int,
    timeout_s: float | None = None,
) -> str:
    """The content of the first choice (stripped) for ``messages`` at temperature 0; ``LlmError`` on any
    failure. At most ``max_reply_bytes`` of the reply are read; ``timeout_s`` overrides
    ``LLM_TIMEOUT_S`` (a caller on the hot path waits less)."""
    body: dict[str, object] = {
        "model": settings.LLM_MODEL or "default",
        "temperature": 0,
        "messages": list(messages),
    }
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    headers = {"Content-Type": "application/json"}
    if settings.LLM_API_KEY:
        headers["Authorization"] = f"Bearer {settings.LLM_API_KEY}"
    try:
        response = outbound.request(
            "POST",
            chat_completions_url(settings.LLM_URL),
            body=json.dumps(body).encode("utf-8"),
            headers=headers,
            timeout_s=float(settings.LLM_TIMEOUT_S if timeout_s is None else timeout_s),
            max_bytes=max_reply_bytes,
        )
        if not 200 <= response.status < 300:
            raise LlmError(f"HTTPError: the LLM answered HTTP {response.status}")
        payload = json.loads(response.body)
        return str(payload["choices"][0]["message"]["content"] or "").strip()
    except LlmError:
        raise
    except Exception as exc:  # network, refused target, oversized reply, JSON shape
        raise LlmError(f"{type(exc).__name__}: {exc}") from exc
