"""The Django project of the ARG knowledge platform.

It lives in ``platform/arg_platform`` so that the top-level ``platform/`` folder of the design card is
never importable as ``platform`` (which would shadow the standard library module). Importing this
package loads the Celery app so that ``@shared_task`` binds to it in every process.
"""

from .celery import app as celery_app

__all__ = ["celery_app"]
