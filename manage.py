#!/usr/bin/env python
"""Django's command-line utility for the ARG knowledge platform.

The commands of the bench app (``bench/management/commands/``: benchmarks, simulations, training of the
optional learned models) run under ``bench.settings``, the product's settings with that app installed;
every other command runs under the product's settings. ``bench/`` is not part of the installed package.
"""

import os
import sys
from pathlib import Path

BENCH_COMMANDS = Path(__file__).resolve().parent / "bench" / "management" / "commands"


def settings_module(argv: list[str]) -> str:
    """``bench.settings`` when ``argv`` names a command of the bench app, else ``arg_platform.settings``."""
    command = argv[1] if len(argv) > 1 else ""
    is_bench = bool(command) and not command.startswith("_") and (BENCH_COMMANDS / f"{command}.py").is_file()
    return "bench.settings" if is_bench else "arg_platform.settings"


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", settings_module(sys.argv))
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
