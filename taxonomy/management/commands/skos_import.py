"""``manage.py skos_import --project SLUG FILE``: import a SKOS concept scheme, all or nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from arg_platform.errors import RuleViolation
from projects.models import Project
from taxonomy.file_guards import path_read
from taxonomy.skos import DEFAULT_LANGUAGE, skos_format_for, skos_import

ACTOR = "manage.py skos_import"


class Command(BaseCommand):
    help = (
        "Import a SKOS concept scheme (Turtle, RDF/XML, N-Triples, JSON-LD… by file extension) into a "
        "project. Nothing is written unless the whole result passes the taxonomy validator."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="the SKOS file")
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("--format", default=None, help="rdflib parser name (default: from the extension)")
        parser.add_argument("--language", default=DEFAULT_LANGUAGE, help="preferred language of labels")
        parser.add_argument("--scheme", default=None, help="concept scheme URI when the file holds several")
        parser.add_argument("--dry-run", action="store_true", help="validate and report without writing")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"project {options['project']!r} not found")
        path = Path(options["file"])
        try:
            data = path_read(path)
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from exc
        except RuleViolation as exc:
            v = exc.violations[0]
            raise CommandError(
                f"{path.name}: import refused, nothing was written: [{v.rule}] {v.message}"
            ) from exc
        try:
            result = skos_import(
                project=project,
                actor=ACTOR,
                data=data,
                fmt=options["format"] or skos_format_for(path.name),
                language=options["language"],
                scheme=options["scheme"],
                source=path.name,
                dry_run=options["dry_run"],
            )
        except RuleViolation as exc:
            for v in exc.violations:
                self.stderr.write(f"[{v.rule}] {v.message}" + (f" (at {v.location})" if v.location else ""))
            raise CommandError(
                f"{path.name}: import refused, nothing was written ({len(exc.violations)} violation(s))"
            ) from exc
        for warning in result.warnings:
            self.stderr.write(f"warning: {warning}")
        verb = "would import" if result.dry_run else "imported"
        self.stdout.write(
            f"{verb} {path.name} into {project.slug}: clusters {result.clusters_created} created, "
            f"{result.clusters_updated} updated; labels {result.labels_created} created, "
            f"{result.labels_updated} updated, {result.labels_unchanged} unchanged; "
            f"{len(result.warnings)} warning(s)"
        )
