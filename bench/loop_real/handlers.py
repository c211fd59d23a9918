"""The Action handlers of the benchmark's worlds, registered in this process only.

The answers behind a Decision (the detour and the obsolete-procedure defects) are Action nodes — a
Decision leads to things to do, and a semantic jump (informational nodes only) cannot bypass the
planted route. Running one does nothing outside the benchmark: ``done`` returns a receipt. The
retired-action defect's node runs ``retired``, which always fails (the procedure it called is gone), so
every request that reaches it ends as a failed action.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.loop_real.world import FAILING_HANDLER, HANDLER
from inference.actions.registry import PYTHON_PREFIX, ActionContext, ActionFailed, action_handler

HANDLER_NAME = HANDLER[len(PYTHON_PREFIX) :]
FAILING_HANDLER_NAME = FAILING_HANDLER[len(PYTHON_PREFIX) :]


@action_handler(HANDLER_NAME)
def done(params: Mapping[str, Any], context: ActionContext) -> dict[str, Any]:
    return {"done": True, "node": context.node_id, "simulated": True}


@action_handler(FAILING_HANDLER_NAME)
def retired(params: Mapping[str, Any], context: ActionContext) -> dict[str, Any]:
    raise ActionFailed("the service desk form this procedure used no longer exists")
