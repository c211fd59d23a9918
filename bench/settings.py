"""The product's settings with the bench app installed, so ``manage.py bench_*`` finds its commands."""

from arg_platform.settings import *  # noqa: F403
from arg_platform.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "bench.apps.BenchConfig"]
