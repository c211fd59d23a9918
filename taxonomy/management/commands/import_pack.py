"""``manage.py import_pack FILE`` — import a knowledge pack, all-or-nothing, with a progress bar."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from arg_platform.errors import RuleViolation
from taxonomy.packs import pack_import, pack_read


class Command(BaseCommand):
    help = (
        "Import a knowledge pack (YAML/JSON, format arg-pack/1) into its project; nothing changes on error."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("path", help="pack file (.yaml, .yml or .json)")
        parser.add_argument("--project", help="import into this project slug instead of the pack's own")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args: Any, **options: Any) -> None:
        bars: dict[str, tqdm] = {}

        def progress(step: str, done: int, total: int) -> None:
            if options["no_progress"]:
                return
            bar = bars.get(step)
            if bar is None:
                bar = bars[step] = tqdm(
                    total=total, desc=f"{step:>8}", unit="item", file=self.stderr._out, leave=True
                )
            bar.n = done
            bar.refresh()
            if done >= total:
                bar.close()

        try:
            doc = pack_read(options["path"])
            result = pack_import(doc, project_slug=options.get("project"), progress=progress)
        except RuleViolation as exc:
            lines = [
                f"  [{v.rule}] {v.location + ': ' if v.location else ''}{v.message}" for v in exc.violations
            ]
            raise CommandError("pack refused, nothing was changed:\n" + "\n".join(lines)) from exc
        self.stdout.write(self.style.SUCCESS(result.summary()))
