"""The per-process registry of active-release snapshots.

``pin_snapshot(project_id)`` returns the frozen ``GraphSnapshot`` of the project's active release.
A request pins it once and uses that object to the end, so a release published or rolled back
meanwhile cannot change what the request sees. The registry checks which release is active at most
every ``ARG_SNAPSHOT_CHECK_S`` seconds (one indexed query) and, when it changed, loads the new bundle
and replaces the entry with a single reference assignment — readers see the old snapshot or the new
one, never a mixture. Every web and worker process holds its own registry. A web worker also runs
the registry's refresher (``refresher_start``, from ``arg_platform.gunicorn_conf``): it loads each newly
active release, and runs the ``LOAD_HOOKS`` that build what the online path needs from it, in the
background, so requests find the snapshot ready instead of building it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings

from .graph_snapshot import GraphSnapshot

logger = logging.getLogger(__name__)

SnapshotLoader = Callable[[int, int], GraphSnapshot]
_default_loader: SnapshotLoader | None = None
# What other apps prepare from a snapshot when it loads, before any request sees it (the online
# pipeline builds the release's runtime: ``inference.runtime.runtime_for``).
LOAD_HOOKS: list[Callable[[GraphSnapshot], object]] = []


def default_loader_set(loader: SnapshotLoader) -> None:
    """The loader of every registry built without one: (project id, release id) → its frozen snapshot
    (``ontology.releases.release_snapshot_load``, registered by ``OntologyConfig.ready``)."""
    global _default_loader
    _default_loader = loader


@dataclass(frozen=True)
class _Entry:
    snapshot: GraphSnapshot | None
    checked_at: float


class SnapshotRegistry:
    def __init__(
        self,
        *,
        check_interval_s: float | None = None,
        loader: SnapshotLoader | None = None,
    ) -> None:
        self.check_interval_s = check_interval_s
        self._loader = loader
        self._entries: dict[int, _Entry] = {}
        self._locks: dict[int, threading.Lock] = {}
        self._guard = threading.Lock()
        self.loads = 0

    def _interval(self) -> float:
        if self.check_interval_s is not None:
            return self.check_interval_s
        return float(getattr(settings, "SNAPSHOT_CHECK_S", 1.0))

    def _lock(self, project_id: int) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(project_id, threading.Lock())

    @staticmethod
    def _active(project_id: int) -> tuple[int, str] | None:
        """(id, checksum) of the active release. The checksum matters as much as the id: SQLite reuses
        the id of a deleted or rolled-back row, so an id alone could pass a stale snapshot for current."""
        from .models import Release

        return (
            Release.objects.filter(project_id=project_id, is_active=True)
            .values_list("pk", "checksum")
            .first()
        )

    @staticmethod
    def _is(snapshot: GraphSnapshot | None, active: tuple[int, str] | None) -> bool:
        return (
            snapshot is not None
            and active is not None
            and (snapshot.release_id, snapshot.checksum) == (active[0], active[1])
        )

    def _load(self, project_id: int, release_id: int) -> GraphSnapshot:
        loader = self._loader or _default_loader
        if loader is None:
            raise RuntimeError("no snapshot loader: the ontology app registers one when it is ready")
        return loader(project_id, release_id)

    def pin(self, project_id: int, *, force_check: bool = False) -> GraphSnapshot | None:
        """The active release's snapshot (None when the project has no release)."""
        entry = self._entries.get(project_id)
        now = time.monotonic()
        if entry is not None and not force_check and now - entry.checked_at < self._interval():
            return entry.snapshot
        active = self._active(project_id)
        if entry is not None and self._is(entry.snapshot, active):
            self._entries[project_id] = _Entry(entry.snapshot, now)
            return entry.snapshot
        if active is None:
            self._entries[project_id] = _Entry(None, now)
            return None
        with self._lock(project_id):
            entry = self._entries.get(project_id)
            if entry is not None and self._is(entry.snapshot, active):
                return entry.snapshot
            snapshot = self._load(project_id, active[0])
            for hook in LOAD_HOOKS:
                hook(snapshot)
            self.loads += 1
            self._entries[project_id] = _Entry(snapshot, time.monotonic())  # the atomic swap
            return snapshot

    def refresh(self) -> int:
        """Load the snapshot of every active release this registry does not hold yet, before any request
        asks for it (one query for all projects); the number loaded. A project's entry is replaced as a
        pin replaces it: the old snapshot or the new one, never a mixture."""
        from .models import Release

        loaded = 0
        active = Release.objects.filter(is_active=True, project__archived_at__isnull=True).values_list(
            "project_id", "pk", "checksum"
        )
        for project_id, release_id, checksum in active:
            entry = self._entries.get(project_id)
            if entry is None or not self._is(entry.snapshot, (release_id, checksum)):
                before = self.loads
                self.pin(project_id, force_check=True)
                loaded += self.loads - before
        return loaded

    def refresher_start(
        self, *, interval_s: float | None = None, stop: threading.Event | None = None
    ) -> threading.Thread:
        """A daemon thread that calls ``refresh`` every ``interval_s`` (default ``ARG_SNAPSHOT_CHECK_S``)
        until ``stop`` is set, so a web process builds a published release's snapshot and runtime in the
        background and its requests find them ready. A failed refresh (database away) is logged and
        tried again."""
        stopped = stop or threading.Event()

        def run() -> None:
            from django.db import close_old_connections

            while not stopped.is_set():
                try:
                    self.refresh()
                except Exception:  # the next round tries again; requests still pin on their own
                    logger.exception("snapshot refresh failed")
                finally:
                    close_old_connections()
                stopped.wait(interval_s if interval_s is not None else self._interval())

        thread = threading.Thread(target=run, name="snapshot-refresher", daemon=True)
        thread.start()
        return thread

    def invalidate(self, project_id: int) -> None:
        """Forget the check time so the next pin looks at the active release again (this process only;
        other processes notice within the check interval)."""
        entry = self._entries.get(project_id)
        if entry is not None:
            self._entries[project_id] = _Entry(entry.snapshot, float("-inf"))

    def clear(self) -> None:
        self._entries.clear()


registry = SnapshotRegistry()


def pin_snapshot(project_id: int, *, force_check: bool = False) -> GraphSnapshot | None:
    """Pin the active snapshot of a project for the duration of one request."""
    return registry.pin(project_id, force_check=force_check)
