"""``manage.py skos_export --project SLUG [--out FILE]``: the taxonomy as SKOS (Turtle)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from projects.models import Project
from taxonomy.skos import DEFAULT_LANGUAGE, skos_export


class Command(BaseCommand):
    help = "Export a project's taxonomy as a SKOS concept scheme in Turtle (stdout, or --out FILE)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("--out", help="file to write (default: standard output)")
        parser.add_argument(
            "--base", default=None, help="base of the concept URIs (default: settings.ARG_SKOS_BASE_URI)"
        )
        parser.add_argument("--language", default=DEFAULT_LANGUAGE, help="language tag of the literals")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"project {options['project']!r} not found")
        text = skos_export(project=project, base_uri=options["base"], language=options["language"])
        if options["out"]:
            Path(options["out"]).write_text(text, encoding="utf-8")
            self.stderr.write(f"wrote {options['out']} ({project.labels.count()} labels)")
        else:
            self.stdout.write(text, ending="")
