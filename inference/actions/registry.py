"""The action handler registry: the integrations an Action node may run through (ARG v1 §2.8, step 3).

An Action node names its integration in ``extras["handler"]``:

* ``python:<dotted.name>`` — a Python callable registered here with ``@action_handler("<dotted.name>")``;
* ``webhook:<url>`` — an HTTP POST of JSON to the URL (``inference.actions.webhook``); no registration.

A Python handler is called as ``handler(parameters, context)`` with the validated parameters and the
``ActionContext`` of the request, and returns a JSON-safe mapping (the action's result). It raises
``ActionFailed`` to report a business failure with a message the user may read.

A registration may also make some of the node's human-readable preconditions *machine-checkable*:

* ``required_context`` — ``ActionContext`` fields that must be present (e.g. ``("user_id",)``);
* ``check_preconditions(context, parameters)`` — returns ``{precondition text: verdict}`` where the
  verdict is ``True`` (met), ``False`` (unmet), ``None`` (cannot tell) or a ``(verdict, reason)`` pair.
  Texts are matched to the node's preconditions case- and whitespace-insensitively; a text the node
  does not list is a safety invariant of the handler and is enforced too.

Preconditions no registration checks are reported as "to confirm" in the action's explanation.

``default_registry()`` is the process-wide registry; it imports the modules of the
``ACTION_HANDLER_MODULES`` setting once (none by default; the demo pack's are ``packs.demo.handlers``) so
their decorators run.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from django.conf import settings

Verdict = bool | None | tuple[bool | None, str]
PreconditionChecker = Callable[["ActionContext", Mapping[str, Any]], Mapping[str, Verdict]]
HandlerFunc = Callable[[Mapping[str, Any], "ActionContext"], Mapping[str, Any]]

logger = logging.getLogger(__name__)

PYTHON_PREFIX = "python:"
WEBHOOK_PREFIX = "webhook:"


class ActionFailed(Exception):
    """Raised by a handler when the action could not be carried out; the message is shown to the user."""


@dataclass(frozen=True)
class ActionContext:
    """What a handler knows about the request it acts for (read from the request envelope)."""

    project_id: int
    request_id: str
    node_id: str
    handler: str
    idempotency_key: str
    dry_run: bool = False
    role: str | None = None
    user_id: str | None = None
    session_id: str | None = None
    channel: str | None = None
    product: str | None = None
    language: str | None = None
    typology: str | None = None
    timestamp: str | None = None  # ISO 8601

    def as_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


CONTEXT_KEYS: frozenset[str] = frozenset(f.name for f in fields(ActionContext))


@dataclass(frozen=True)
class RegisteredHandler:
    """A Python action handler and what it can check before it runs."""

    name: str
    func: HandlerFunc
    required_context: tuple[str, ...] = ()
    check_preconditions: PreconditionChecker | None = None


class HandlerRegistry:
    """Python action handlers by name (the part after ``python:``). Thread-safe."""

    def __init__(self, modules: Iterable[str] = ()) -> None:
        self._handlers: dict[str, RegisteredHandler] = {}
        self._lock = threading.RLock()
        self._modules = tuple(modules)
        self._loaded = not self._modules

    def register(self, handler: RegisteredHandler, *, replace: bool = False) -> None:
        unknown = sorted(set(handler.required_context) - CONTEXT_KEYS)
        if unknown:
            raise ValueError(f"handler {handler.name}: unknown context keys {unknown}")
        with self._lock:
            if handler.name in self._handlers and not replace:
                if self._handlers[handler.name].func is handler.func:
                    return  # the same module imported twice
                raise ValueError(f"an action handler named {handler.name!r} is already registered")
            self._handlers[handler.name] = handler

    def unregister(self, name: str) -> None:
        with self._lock:
            self._handlers.pop(name, None)

    def get(self, name: str) -> RegisteredHandler | None:
        self._load_modules()
        return self._handlers.get(name)

    def names(self) -> frozenset[str]:
        self._load_modules()
        return frozenset(self._handlers)

    def _load_modules(self) -> None:
        # Importing runs the modules' @action_handler decorators, which register into this registry.
        # The lock is re-entrant: the decorators register while the import holds it, and another
        # thread asking meanwhile waits until every module is in.
        if self._loaded:
            return
        with self._lock:
            if self._loaded:
                return
            for module in self._modules:
                try:
                    importlib.import_module(module)
                except ImportError:  # a misconfigured module must not take the other handlers down
                    logger.exception("cannot import the action handler module %s", module)
            self._loaded = True


_default: HandlerRegistry | None = None
_default_lock = threading.Lock()


def default_registry() -> HandlerRegistry:
    """The process-wide registry, loading the ``ACTION_HANDLER_MODULES`` setting on first lookup."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = HandlerRegistry(getattr(settings, "ACTION_HANDLER_MODULES", ()))
    return _default


def action_handler(
    name: str,
    *,
    required_context: Iterable[str] = (),
    check_preconditions: PreconditionChecker | None = None,
    registry: HandlerRegistry | None = None,
    replace: bool = False,
) -> Callable[[HandlerFunc], HandlerFunc]:
    """Register the decorated callable as the Python handler ``python:<name>``."""
    if not name or name.startswith(PYTHON_PREFIX):
        raise ValueError(f"register the handler under its bare name, not {name!r}")

    def decorate(func: HandlerFunc) -> HandlerFunc:
        (registry or default_registry()).register(
            RegisteredHandler(
                name=name,
                func=func,
                required_context=tuple(required_context),
                check_preconditions=check_preconditions,
            ),
            replace=replace,
        )
        return func

    return decorate
