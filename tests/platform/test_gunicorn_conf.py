"""What each gunicorn web worker does before it serves (``arg_platform.gunicorn_conf``)."""

from __future__ import annotations

import logging
import threading
from typing import Any

import torch

from arg_platform import gunicorn_conf
from ontology.snapshot_registry import SnapshotRegistry


class _Worker:
    """The part of a gunicorn worker the hook uses: its log and the heartbeat to the master."""

    log = logging.getLogger("gunicorn.test")

    def __init__(self) -> None:
        self.heartbeats = 0

    def notify(self) -> None:
        self.heartbeats += 1


def test_a_worker_pins_torch_to_one_thread_warms_up_and_starts_the_snapshot_refresher(
    monkeypatch: Any, settings: Any
) -> None:
    from inference.runtime import warm_up_steps

    settings.WARM_UP = True
    worker = _Worker()
    started: list[threading.Thread] = []
    threads = torch.get_num_threads()

    def refresher_start(self: SnapshotRegistry, **_kwargs: Any) -> threading.Thread:
        thread = threading.Thread(target=lambda: None)
        started.append(thread)
        return thread

    monkeypatch.setattr(SnapshotRegistry, "refresher_start", refresher_start)
    try:
        gunicorn_conf.post_worker_init(worker)
        assert torch.get_num_threads() == gunicorn_conf.TORCH_THREADS_PER_WORKER
    finally:
        torch.set_num_threads(threads)
    assert len(started) == 1
    assert worker.heartbeats == len(warm_up_steps())  # the master hears from it after every step
