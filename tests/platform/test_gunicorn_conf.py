"""What each gunicorn web worker does before it serves (``arg_platform.gunicorn_conf``)."""

from __future__ import annotations

import logging
import threading
from typing import Any

import torch

from arg_platform import gunicorn_conf
from ontology.snapshot_registry import SnapshotRegistry


class _Worker:
    log = logging.getLogger("gunicorn.test")


def test_a_worker_pins_torch_to_one_thread_and_starts_the_snapshot_refresher(monkeypatch: Any) -> None:
    started: list[threading.Thread] = []
    threads = torch.get_num_threads()

    def refresher_start(self: SnapshotRegistry, **_kwargs: Any) -> threading.Thread:
        thread = threading.Thread(target=lambda: None)
        started.append(thread)
        return thread

    monkeypatch.setattr(SnapshotRegistry, "refresher_start", refresher_start)
    try:
        gunicorn_conf.post_worker_init(_Worker())
        assert torch.get_num_threads() == gunicorn_conf.TORCH_THREADS_PER_WORKER
    finally:
        torch.set_num_threads(threads)
    assert len(started) == 1
