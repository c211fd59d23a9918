"""The bounded label proposer of the Context Weaver (ARG v1 §2.3.2): on escalation only, the configured
LLM reads the request and the candidate labels and must choose one of them or ABSTAIN.

Terms:

* *escalation* — the cascade is unsure and not out of domain: LOW_MARGIN, VECTOR_AMBIGUITY,
  ABSTAIN_RECOMMENDED or cold start (NEW_INTENT_CANDIDATE). An OOD request is never escalated: no label
  is close, and asking a model to pick among distant labels would only force an answer.
* *candidates* — the label-index Top-K and the classifier's best labels, ACTIVE and admitted by the
  caller's policy; the model sees their ids, names, clusters and descriptions, and the request with its
  PII replaced by placeholders.
* *strict shape* — the reply is one JSON object ``{"label": "<candidate id>"}`` or
  ``{"label": "ABSTAIN"}``. A label outside the candidates is a *proposal*: the weaver raises
  UNKNOWN_LABEL_CANDIDATE and the log keeps the proposed name for the offline loop. Anything else — not
  JSON, other keys, a timeout, an HTTP error, no budget left — is an abstention.
* *budget* — at most ``LLM_PROPOSER_PER_MINUTE`` calls per process in any sliding minute; over it the
  request is not escalated (result ``budget``). ``0`` disables the proposer.

The taxonomy validator still has the last word on whatever the model chose. With no LLM configured
(``ARG_LLM_URL`` empty) ``proposer_for`` returns ``None`` and the hot path is unchanged.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings

from arg_platform.llm import LlmError, chat_complete
from arg_platform.metrics import proposer_observe
from memory.pii import redact_text
from taxonomy.validator import TaxonomyView

logger = logging.getLogger(__name__)

ABSTAIN = "ABSTAIN"
MAX_PROPOSED_NAME = 80  # characters of an unknown label's name kept in the log
MAX_REPLY_BYTES = 20_000

INSTRUCTIONS = (
    "You route a user's request to one label of a support assistant's taxonomy. Choose only among the "
    "candidate labels listed, or ABSTAIN when none of them fits. Reply with exactly one JSON object and "
    'nothing else: {"label": "<label id>"} or {"label": "ABSTAIN"}.'
)


class Result:
    """What one escalation came to (the ``result`` label of the ``arg_inference_proposer`` metric)."""

    CHOSEN = "chosen"  # a candidate: the weaver routes to it if the validator agrees
    ABSTAINED = "abstained"  # the model answered ABSTAIN
    UNKNOWN = "unknown"  # the model named a label outside the candidates
    ERROR = "error"  # no usable answer: network, timeout, HTTP status, reply shape
    BUDGET = "budget"  # not asked: the per-minute budget was spent


@dataclass(frozen=True)
class Proposal:
    """The proposer's answer for one request."""

    result: str  # a ``Result`` value
    label_id: str | None = None  # the chosen candidate (result ``chosen``)
    proposed_name: str = ""  # the label the model named outside the candidates (result ``unknown``)
    error: str = ""  # why the answer was not usable (result ``error``)

    def as_log(self) -> dict[str, str]:
        """The JSON-safe record kept with the request's log row."""
        record = {"result": self.result}
        if self.label_id:
            record["label"] = self.label_id
        if self.proposed_name:
            record["proposed_name"] = self.proposed_name
        if self.error:
            record["error"] = self.error
        return record


class _Budget:
    """A sliding one-minute window of call times, shared by the threads of one process."""

    def __init__(self) -> None:
        self._calls: deque[float] = deque()
        self._lock = threading.Lock()

    def take(self, per_minute: int) -> bool:
        now = time.monotonic()
        with self._lock:
            while self._calls and now - self._calls[0] >= 60.0:
                self._calls.popleft()
            if len(self._calls) >= per_minute:
                return False
            self._calls.append(now)
            return True

    def reset(self) -> None:
        with self._lock:
            self._calls.clear()


budget = _Budget()


def parse_reply(text: str, candidates: Sequence[str]) -> Proposal:
    """The proposal a reply stands for (the module docstring's *strict shape*)."""
    try:
        payload = json.loads(text)
    except ValueError:
        return Proposal(Result.ERROR, error="the reply is not JSON")
    if not isinstance(payload, dict) or set(payload) != {"label"} or not isinstance(payload["label"], str):
        return Proposal(Result.ERROR, error='the reply is not {"label": "…"}')
    label = payload["label"].strip()
    if label == ABSTAIN:
        return Proposal(Result.ABSTAINED)
    if label in candidates:
        return Proposal(Result.CHOSEN, label_id=label)
    if not label:
        return Proposal(Result.ERROR, error="the reply names no label")
    name = redact_text(" ".join(label.split())[:MAX_PROPOSED_NAME]).value
    return Proposal(Result.UNKNOWN, proposed_name=name)


class LabelProposer:
    """Asks the configured LLM to choose among candidate labels for one request."""

    def __init__(self, *, prompt: str, taxonomy: TaxonomyView, project: str) -> None:
        self.prompt = prompt
        self.taxonomy = taxonomy
        self.project = project

    def __call__(self, candidates: Sequence[str]) -> Proposal:
        proposal = self._ask(candidates)
        proposer_observe(project=self.project, result=proposal.result)
        return proposal

    def _ask(self, candidates: Sequence[str]) -> Proposal:
        if not budget.take(settings.LLM_PROPOSER_PER_MINUTE):
            return Proposal(Result.BUDGET)
        lines = []
        for label_id in candidates:
            record = self.taxonomy.labels[label_id]
            about = f" — {record.description}" if record.description else ""
            lines.append(f"- {label_id}: {record.name} (cluster {record.cluster}){about}")
        question = redact_text(self.prompt).value  # the provider sees placeholders, not the user's PII
        try:
            text = chat_complete(
                [
                    {"role": "system", "content": INSTRUCTIONS},
                    {
                        "role": "user",
                        "content": "Candidate labels:\n" + "\n".join(lines) + f"\n\nRequest: {question}",
                    },
                ],
                max_tokens=50,
                max_reply_bytes=MAX_REPLY_BYTES,
                timeout_s=settings.LLM_PROPOSER_TIMEOUT_MS / 1000.0,
            )
        except LlmError as exc:
            logger.warning("label proposer: no usable answer: %s", exc)
            return Proposal(Result.ERROR, error=str(exc)[:200])
        return parse_reply(text, candidates)


def proposer_for(*, prompt: str, taxonomy: TaxonomyView, project: str) -> LabelProposer | None:
    """The proposer of one request, or ``None`` when no LLM is configured or its budget is 0."""
    if not settings.LLM_URL or settings.LLM_PROPOSER_PER_MINUTE <= 0:
        return None
    return LabelProposer(prompt=prompt, taxonomy=taxonomy, project=project)
