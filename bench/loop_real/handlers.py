"""The Action handler of the benchmark's worlds: a no-op integration, registered in this process only.

The answers behind a Decision (the detour and the obsolete-procedure defects) are Action nodes — a
Decision leads to things to do, and a semantic jump (informational nodes only) cannot bypass the
planted route. Running one does nothing outside the benchmark: the handler returns a receipt.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.loop_real.world import HANDLER
from inference.actions.registry import PYTHON_PREFIX, ActionContext, action_handler

HANDLER_NAME = HANDLER[len(PYTHON_PREFIX) :]


@action_handler(HANDLER_NAME)
def done(params: Mapping[str, Any], context: ActionContext) -> dict[str, Any]:
    return {"done": True, "node": context.node_id, "simulated": True}
