"""Step 8 of the online pipeline — ARG-Action (ARG v1 §2.8): preconditions, clarification, execution
through registered handlers (Python callables and HTTP webhooks) with dry run, timeout and idempotency.

``run_action`` is the entry point; ``action_handler`` registers a Python handler.
"""

from inference.actions.execute import ActionStatus, run_action
from inference.actions.registry import (
    ActionContext,
    ActionFailed,
    HandlerRegistry,
    action_handler,
    default_registry,
)

__all__ = [
    "ActionContext",
    "ActionFailed",
    "ActionStatus",
    "HandlerRegistry",
    "action_handler",
    "default_registry",
    "run_action",
]
