"""gunicorn settings of the web workers (``gunicorn --config python:arg_platform.gunicorn_conf``).

The embedded supervisor passes it; command-line options (bind, workers, threads, timeouts) still win.

**One torch thread per worker.** A request embeds one short prompt: a forward pass of a few
milliseconds whose weights are streamed from memory, which a second thread barely speeds up, while
two workers each running two threads on two cores fight over them (and over OpenMP's spinning
threads) and every request gets slower. Workers, not threads, are how the web server uses the cores;
batching concurrent prompts (``arg_platform.embedder``) is how one worker uses its core well.

**Warm start.** A worker warms up (``inference.runtime.warm_up_steps``: the URL modules, the encoder,
every active release's snapshot, runtime and indexes, the PII tables, the lexicon) before it accepts
its first connection: the listening socket is shared, so while one worker warms up the others take
the requests, and no request ever waits for a load. ``ARG_WARM_UP=0`` turns it off (loads on first use).
"""

from __future__ import annotations

from typing import Any

TORCH_THREADS_PER_WORKER = 1


def post_worker_init(worker: Any) -> None:
    """After the worker has loaded the application, before it serves: pin torch's thread pool, warm up
    (telling the master after each step that the worker is alive, so a slow load on a busy host is not
    taken for a hung worker), then start the snapshot refresher (it loads each newly published release
    as it becomes active, so no request builds it)."""
    import torch
    from django.conf import settings

    # late: gunicorn's master reads this module before Django is set up; the worker has loaded the apps
    from arg_platform.health import warm_up_run
    from inference.runtime import warm_up_steps
    from ontology.snapshot_registry import registry

    torch.set_num_threads(TORCH_THREADS_PER_WORKER)
    worker.log.info("torch threads per worker: %d", torch.get_num_threads())
    if settings.WARM_UP:

        def alive(name: str, ms: float) -> None:
            worker.notify()
            worker.log.info("warm-up: %s %.0f ms", name, ms)

        state = warm_up_run(warm_up_steps(), after_step=alive)
        worker.log.info("warm-up %s in %.1f s", state.state, state.seconds or 0.0)
    else:
        import threading

        from memory.lexicon import lexicon

        threading.Thread(target=lexicon, name="lexicon-warm-up", daemon=True).start()
    registry.refresher_start()
