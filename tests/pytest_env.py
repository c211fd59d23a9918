"""Loaded with ``-p tests.pytest_env`` before pytest-django reads the settings.

Every test session gets its own data folder (test SQLite file, broker queue, heartbeat), so two
sessions never share a database file and tests never touch the developer's embedded ``var/``.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
if "ARG_DATA_DIR" not in os.environ:  # a folder of this session's own (hundreds of MB): removed at its end
    os.environ["ARG_DATA_DIR"] = tempfile.mkdtemp(prefix="arg-test-data-")
    atexit.register(shutil.rmtree, os.environ["ARG_DATA_DIR"], ignore_errors=True)
# The demo pack's action handlers, as ``make run`` registers them: tests route requests to its Actions.
os.environ.setdefault("ARG_ACTION_HANDLER_MODULES", "packs.demo.handlers")
