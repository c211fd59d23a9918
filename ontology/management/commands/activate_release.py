"""``manage.py activate_release SLUG VERSION`` — make an earlier (or later) release the active one."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from arg_platform.errors import NotFound
from ontology.releases import release_activate, release_get
from projects.models import Project


class Command(BaseCommand):
    help = "Activate a release by version (rollback = activate an earlier one)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("project", help="project slug")
        parser.add_argument("version", type=int)
        parser.add_argument("--reason", default="")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"project {options['project']!r} not found")
        try:
            release = release_get(project=project, version=options["version"])
        except NotFound as exc:
            raise CommandError(exc.message) from exc
        release_activate(release=release, actor=None, reason=options["reason"])
        self.stdout.write(self.style.SUCCESS(f"release v{release.version} of {project.slug} is active"))
