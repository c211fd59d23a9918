"""Who may see where an Action's webhook goes.

A ``webhook:<url>`` handler names a piece of the operator's infrastructure (an internal host, a path,
sometimes a token in the query). Curators (who write handlers) see it; everybody else — client tokens,
reviewers, people who only read — sees ``webhook``. Every page and API that shows a handler, or an audit
row that recorded one, goes through these functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

WEBHOOK_PREFIX = "webhook:"
HIDDEN = "webhook"


def handler_shown(handler: Any, *, curator: bool) -> Any:
    """``handler`` as this reader may see it (anything but a webhook reference is unchanged)."""
    if not curator and isinstance(handler, str) and handler.strip().startswith(WEBHOOK_PREFIX):
        return HIDDEN
    return handler


def audit_values_shown(values: Mapping[str, Any], *, curator: bool) -> dict[str, Any]:
    """An audit row's ``before`` / ``after`` as this reader may see them."""
    shown = dict(values)
    if "handler" in shown:
        shown["handler"] = handler_shown(shown["handler"], curator=curator)
    return shown
