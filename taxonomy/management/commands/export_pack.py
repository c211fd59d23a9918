"""``manage.py export_pack SLUG [--out FILE]`` — export a project as a knowledge pack."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from projects.models import Project
from taxonomy.packs import pack_dump, pack_export


class Command(BaseCommand):
    help = "Export a project's taxonomy, typologies, policies, roles and graph as a knowledge pack."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("project", help="project slug")
        parser.add_argument("--out", help="file to write (.yaml or .json); stdout when omitted")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"project {options['project']!r} not found")
        out = options.get("out")
        text = pack_dump(
            pack_export(project=project), fmt="json" if out and out.endswith(".json") else "yaml"
        )
        if out:
            Path(out).write_text(text, encoding="utf-8")
            self.stderr.write(f"wrote {out}")
        else:
            self.stdout.write(text, ending="")
