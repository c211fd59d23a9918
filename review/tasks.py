"""The review app's Celery tasks, where the worker's autodiscovery (``<app>.tasks``) finds them: the
offline loop's steps and nightly entry (``review.loop.tasks``) and the review queue's apply job
(``review.queue.apply_jobs``)."""

from review.loop.tasks import (  # noqa: F401 (imported so the worker registers them)
    offline_nightly_task,
)
from review.queue.apply_jobs import proposals_apply_task  # noqa: F401
