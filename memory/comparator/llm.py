"""The bounded LLM compare (§2.10.5.7.2): for a grey-zone pair the rules leave open, the configured
OpenAI-compatible endpoint (the shared client ``arg_platform.llm``) is asked whether a chunk states the
same fact as an InfoUnit's canonical description, and may answer only SAME, DIFFERENT or UNSURE; an
error or any other answer is UNSURE. It runs only when ``LLM_URL`` is set and ``MEMORY_LLM_COMPARE`` is
true.
"""

from __future__ import annotations

import logging
import re

from django.conf import settings

from arg_platform.llm import LlmError, chat_complete

from .params import Verdict

logger = logging.getLogger(__name__)


LLM_COMPARE_INSTRUCTIONS = (
    "Compare this chunk with the canonical description of InfoUnit X. They are the SAME only if they state "
    "the same fact (same numbers, same polarity, same entities in the same roles). "
    "Respond only with: SAME / DIFFERENT / UNSURE."
)


def llm_compare_enabled() -> bool:
    return bool(settings.LLM_URL) and bool(getattr(settings, "MEMORY_LLM_COMPARE", False))


def llm_compare(chunk: str, canonical: str) -> str:
    """The bounded task of §2.10.5.7.2 on the configured OpenAI-compatible endpoint; any error or any
    answer other than the three words is UNSURE."""
    try:
        answer = chat_complete(
            [
                {"role": "system", "content": LLM_COMPARE_INSTRUCTIONS},
                {"role": "user", "content": f"Chunk: {chunk}\nInfoUnit X: {canonical}"},
            ],
            max_tokens=3,
            max_reply_bytes=100_000,
        ).upper()
    except LlmError as exc:
        logger.warning("LLM compare failed, staging as UNSURE: %s", exc)
        return Verdict.UNSURE
    word = re.sub(r"[^A-Z]", "", answer.split()[0]) if answer else ""
    return word if word in (Verdict.SAME, Verdict.DIFFERENT, Verdict.UNSURE) else Verdict.UNSURE
