"""The LLM-written Info answer: the configured OpenAI-compatible endpoint (``arg_platform.llm``)
writes the answer from the context nodes only and must cite at least one of them by node id; anything
else is an ``LlmError`` and the step keeps its extractive answer."""

from __future__ import annotations

from collections.abc import Sequence

from arg_platform.llm import LlmError, chat_complete
from ontology.graph_snapshot import NodeView

LLM_INSTRUCTIONS = (
    "You answer a user's question for a support assistant. Answer only from the context below; if it "
    "does not contain the answer, say so. Cite the node ids you used in square brackets, e.g. [N-x]. "
    "Be brief."
)


def llm_answer(prompt: str, context: Sequence[NodeView]) -> tuple[str, tuple[str, ...]]:
    """Ask the configured OpenAI-compatible endpoint; the answer and the context node ids it cites."""
    blocks = "\n\n".join(f"[{n.node_id}] {n.title}\n{n.chunk}" for n in context)
    text = chat_complete(
        [
            {"role": "system", "content": LLM_INSTRUCTIONS},
            {"role": "user", "content": f"Context:\n{blocks}\n\nQuestion: {prompt}"},
        ],
        max_reply_bytes=2_000_000,
    )
    if not text:
        raise LlmError("the LLM returned an empty answer")
    cited = tuple(n.node_id for n in context if n.node_id in text)
    if not cited:
        raise LlmError("the LLM answer cites no context node")
    return text, cited
