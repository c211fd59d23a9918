"""The offline refinement loop (ARG §3): collection, generators, replay, bins, application, and the
Celery tasks that run them nightly."""
