"""Benchmarks, simulations, synthetic generators and research prototypes of the ARG platform, with their
data. Not part of the installed product: ``manage.py bench_*`` runs them under ``bench.settings``."""
