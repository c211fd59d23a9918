"""``manage.py publish_release SLUG`` — freeze the project's draft into a new active release.

Synchronous by default: the publication job runs in this process with a progress bar (the job row is
recorded like one a worker runs, so the browser and the API see it too). ``--queue`` hands it to the
Celery worker instead and prints the job id. A draft identical to the active release publishes
nothing and says so; a draft the validator refuses exits non-zero with each rule.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from tqdm import tqdm

from arg_platform.jobs import job_enqueue, job_run_inline
from arg_platform.models import Job
from ontology.models import Release
from ontology.publish_jobs import publish_job_open, publish_job_work
from ontology.tasks import release_publish_task
from projects.models import Project


class Command(BaseCommand):
    help = "Publish the draft (taxonomy, policies, typologies, graph, signals, embeddings) as a new release."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("project", help="project slug")
        parser.add_argument("--notes", default="", help="why this release")
        parser.add_argument("--queue", action="store_true", help="queue the job for the worker and return")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"project {options['project']!r} not found")
        with transaction.atomic():
            job = publish_job_open(project=project, actor=None, notes=options["notes"])
            if options["queue"]:
                job_enqueue(job, release_publish_task)
        if options["queue"]:
            self.stdout.write(f"publication queued as job #{job.pk}")
            return
        bar = tqdm(total=100, unit="%", file=self.stderr._out, dynamic_ncols=True)

        def progress(fraction: float, message: str) -> None:
            bar.set_description(message[:60])
            bar.update(round(fraction * 100) - bar.n)

        try:
            job = job_run_inline(job, publish_job_work, progress)
        finally:
            bar.close()
        if job.status != Job.Status.SUCCEEDED:
            rules = job.result.get("rules") or []
            detail = "".join(f"\n  [{rule}]" for rule in rules)
            raise CommandError(
                f"the draft cannot be published: {job.result.get('error', job.message)}{detail}"
            )
        if not job.result["published"]:
            self.stdout.write(job.result["detail"])
            return
        release = Release.objects.get(pk=job.result["release_id"])
        timings = ", ".join(f"{k} {v:.2f}s" for k, v in release.timings.items() if k.endswith("_s"))
        self.stdout.write(
            self.style.SUCCESS(
                f"release v{release.version} active — {release.counts['nodes']} nodes, "
                f"{release.counts['edges']} edges, checksum {release.checksum[:12]} ({timings})"
            )
        )
