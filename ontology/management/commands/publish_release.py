"""``manage.py publish_release SLUG`` — freeze the project's draft into a new active release (a draft
identical to the active release publishes nothing and says so)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from arg_platform.errors import RuleViolation
from ontology.releases import PublishOptions, draft_publish
from projects.models import Project


class Command(BaseCommand):
    help = "Publish the draft (taxonomy, policies, typologies, graph, signals, embeddings) as a new release."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("project", help="project slug")
        parser.add_argument("--notes", default="", help="why this release")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"project {options['project']!r} not found")
        self.stdout.write(f"Publishing {project.slug} … (validate, export, embed, analytics, bundle)")
        try:
            release, created = draft_publish(
                project=project, actor=None, options=PublishOptions(notes=options["notes"])
            )
        except RuleViolation as exc:
            lines = [f"  [{v.rule}] {v.message}" for v in exc.violations]
            raise CommandError("the draft cannot be published:\n" + "\n".join(lines)) from exc
        if not created:
            self.stdout.write(f"the draft is identical to the active release v{release.version}: nothing to publish")
            return
        timings = ", ".join(f"{k} {v:.2f}s" for k, v in release.timings.items() if k.endswith("_s"))
        self.stdout.write(
            self.style.SUCCESS(
                f"release v{release.version} active — {release.counts['nodes']} nodes, "
                f"{release.counts['edges']} edges, checksum {release.checksum[:12]} ({timings})"
            )
        )
