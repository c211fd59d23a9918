"""Typed readers for configuration taken from the environment.

Every setting the platform reads from the environment goes through one of these helpers, and
``ENV_VARS`` records each name read, so tests can check that docker-compose sets only variables the
settings actually know.
"""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured

ENV_VARS: dict[str, str] = {}


def env_str(name: str, default: str = "", *, doc: str = "") -> str:
    """The variable's value; unset or empty means ``default``, as for the other readers."""
    ENV_VARS[name] = doc
    return os.environ.get(name) or default


def env_bool(name: str, default: bool, *, doc: str = "") -> bool:
    ENV_VARS[name] = doc
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use true/false)")


def env_int(name: str, default: int, *, doc: str = "") -> int:
    ENV_VARS[name] = doc
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from exc


def env_list(name: str, default: list[str], *, doc: str = "") -> list[str]:
    ENV_VARS[name] = doc
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]
