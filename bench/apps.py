from django.apps import AppConfig


class BenchConfig(AppConfig):
    """The bench app: management commands only (no models, no URLs)."""

    name = "bench"
    verbose_name = "Benchmarks"
