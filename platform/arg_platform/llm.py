"""The client of the optional LLM: one call to an OpenAI-compatible chat-completions endpoint
(``ARG_LLM_URL``, ``ARG_LLM_MODEL``, ``ARG_LLM_API_KEY``), bounded in time (``ARG_LLM_TIMEOUT_S``) and in
the size of the reply read. Callers decide what a failure means (an extractive answer, an UNSURE)."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Sequence

from django.conf import settings


class LlmError(RuntimeError):
    """The LLM gave no usable answer: network, HTTP status, reply shape, or an answer the caller refuses."""


def chat_completions_url(base: str) -> str:
    """The chat-completions URL of ``base``, which may name the host, its ``/v1`` or the full path."""
    base = base.rstrip("/")
    if base.endswith("/chat/completions"):
        return base
    return f"{base}/chat/completions" if base.endswith("/v1") else f"{base}/v1/chat/completions"


def chat_complete(
    messages: Sequence[dict[str, str]], *, max_tokens: int | None = None, max_reply_bytes: int
) -> str:
    """The content of the first choice (stripped) for ``messages`` at temperature 0; ``LlmError`` on any
    failure. At most ``max_reply_bytes`` of the reply are read."""
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
    request = urllib.request.Request(
        chat_completions_url(settings.LLM_URL), data=json.dumps(body).encode("utf-8"), headers=headers
    )
    try:
        with urllib.request.urlopen(request, timeout=float(settings.LLM_TIMEOUT_S)) as response:  # noqa: S310
            payload = json.loads(response.read(max_reply_bytes))
        return str(payload["choices"][0]["message"]["content"] or "").strip()
    except Exception as exc:  # network, HTTP status, JSON shape
        raise LlmError(f"{type(exc).__name__}: {exc}") from exc
