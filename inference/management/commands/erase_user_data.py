"""``manage.py erase_user_data --project <slug> --user-id <id>`` — erase one end user's data now.

Deletes the project's request logs sent with ``context.user_id`` = the id (with their feedback and
action runs) and the user's memory, in one transaction, like ``POST /api/v1/projects/<slug>/erasures/``
(``inference.erasure.user_data_erase``), records one audit event (the id hashed, never in clear) and
prints the counts per kind. Another project's rows are never touched; running it twice deletes nothing
the second time.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from arg_platform.errors import RuleViolation
from inference.erasure import user_data_erase, user_id_digest
from projects.models import Project


class Command(BaseCommand):
    help = "Erase one end user's request logs and memory in a project (by the client's user id)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("--user-id", required=True, help="the user id clients send as context.user_id")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"no project {options['project']!r}")
        try:
            counts = user_data_erase(
                project=project, user_id=options["user_id"], actor="manage.py erase_user_data"
            )
        except RuleViolation as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(f"erased in {project.slug} for user {user_id_digest(options['user_id'].strip())}:")
        for name, count in counts.items():
            self.stdout.write(f"  {name}: {count}")
