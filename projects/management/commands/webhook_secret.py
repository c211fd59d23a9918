"""``manage.py webhook_secret SLUG [--rotate]`` — print (or replace, then print) a project's webhook secret."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from projects.models import Project
from projects.webhook_secrets import project_webhook_secret, project_webhook_secret_rotate


class Command(BaseCommand):
    help = "Print the HMAC secret that signs a project's webhooks; --rotate replaces it first."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("project", help="project slug")
        parser.add_argument(
            "--rotate", action="store_true", help="generate a new secret (the old one stops working)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"project {options['project']!r} not found")
        if options["rotate"]:
            secret = project_webhook_secret_rotate(project=project)
        else:
            secret = project_webhook_secret(project=project)
        self.stdout.write(secret)
