"""gunicorn settings of the web workers (``gunicorn --config python:arg_platform.gunicorn_conf``).

The embedded supervisor passes it; command-line options (bind, workers, threads, timeouts) still win.

**One torch thread per worker.** A request embeds one short prompt: a forward pass of a few
milliseconds whose weights are streamed from memory, which a second thread barely speeds up, while
two workers each running two threads on two cores fight over them (and over OpenMP's spinning
threads) and every request gets slower. Workers, not threads, are how the web server uses the cores;
batching concurrent prompts (``arg_platform.embedder``) is how one worker uses its core well.
"""

from __future__ import annotations

from typing import Any

TORCH_THREADS_PER_WORKER = 1


def post_worker_init(worker: Any) -> None:
    """After the worker has loaded the application, before it serves: pin torch's thread pool, start the
    snapshot refresher (it loads every active release's snapshot and runtime now, and each newly
    published one as it becomes active, so no request builds them), and read the registry comparator's
    WordNet lexicon in the background (≈ 1 s once per worker; otherwise the worker's first memory write
    would wait for it)."""
    import threading

    import torch

    # late: gunicorn's master reads this module before Django is set up; the worker has loaded the apps
    from memory.lexicon import lexicon
    from ontology.snapshot_registry import registry

    torch.set_num_threads(TORCH_THREADS_PER_WORKER)
    worker.log.info("torch threads per worker: %d", torch.get_num_threads())
    registry.refresher_start()
    threading.Thread(target=lexicon, name="lexicon-warm-up", daemon=True).start()
