"""``manage.py seed_demo_traffic SLUG [--file packs/demo/traffic.yaml] [--queue-loop]``

Sends a seeded night of customer traffic (``review.demo_traffic``) to the project's active release and
records the customers' reactions. ``--queue-loop`` then opens one offline-loop run over that night and
queues it for the Celery worker (the first ``make run`` does, so a reviewer finds a queue the loop made
from this traffic); ``manage.py run_offline_loop SLUG`` runs it in the shell instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from arg_platform.errors import RuleViolation
from projects.models import Project
from review.demo_traffic import traffic_read, traffic_seed
from review.loop.run import offline_run_get_or_open
from review.loop.tasks import offline_run_enqueue

DEMO_TRAFFIC = Path(settings.BASE_DIR) / "packs" / "demo" / "traffic.yaml"


class Command(BaseCommand):
    help = "Send a seeded night of demo customer traffic (with feedback) to a project; optionally queue the loop."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("project", help="project slug")
        parser.add_argument("--file", default=str(DEMO_TRAFFIC), help="an arg-demo-traffic/1 file")
        parser.add_argument("--queue-loop", action="store_true", help="queue one offline-loop run afterwards")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"project {options['project']!r} not found")
        try:
            plan = traffic_read(Path(options["file"]))
            self.stdout.write(f"Sending {plan.requests} seeded customer requests to {project.slug} …")
            night = traffic_seed(project=project, plan=plan)
        except RuleViolation as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(f"{night.requests} requests logged, {night.feedback} with explicit feedback.")
        if not options["queue_loop"]:
            return
        with transaction.atomic():
            run, created = offline_run_get_or_open(project=project, idempotency_key="demo-traffic")
            if created:
                offline_run_enqueue(run)
        self.stdout.write(
            f"Offline-loop run #{run.pk} queued: the worker turns the night into proposals "
            f"(progress on /p/{project.slug}/metrics/, the queue on /p/{project.slug}/review/)."
            if created
            else f"The demo night's offline-loop run #{run.pk} exists already."
        )
