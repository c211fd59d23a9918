"""``manage.py train_registry_comparator`` — train (or reuse) the Info Registry's pair cross-encoder.

The weights go to ``ARG_DATA_DIR/encoders/comparator-<key>/`` (``memory.cross_encoder``; the key is a
sha256 over the development files, the training parameters and the base model). ``--lofo`` first runs
the leave-one-file-out over the development folds and prints the thresholds it chooses
(``bench.registry.train_cross_encoder``).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Train (or reuse) the Info Registry's pair cross-encoder on the development pairs."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--lofo", action="store_true", help="leave-one-file-out report and thresholds first"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        from bench.registry.train_cross_encoder import main

        main(["--lofo"] if options["lofo"] else [], say=self.stdout.write)
