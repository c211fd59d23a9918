"""``manage.py run_offline_loop <project> [--key K] [--window-days D] [--set section.key=value]`` — one night now.

Runs every step of the offline loop (ARG §3 A–E) for one project in this process, with a progress bar
per step, and prints what each step did. The run is recorded like a nightly one (OfflineRun + Job);
``--key`` makes it idempotent (running the command twice with the same key runs the night once).
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from projects.models import Project
from review.loop.run import STEPS, offline_loop_run


def _override(pairs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        key, _, raw = pair.partition("=")
        if not raw:
            raise CommandError(f"--set expects section.key=value, got {pair!r}")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        section, _, name = key.partition(".")
        if name:
            out.setdefault(section, {})[name] = value
        else:
            out[section] = value
    return out


class Command(BaseCommand):
    help = "Run one night of the offline refinement loop for a project now (progress bar per step)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("project", help="project slug")
        parser.add_argument("--key", default="", help="idempotency key (the same key runs once)")
        parser.add_argument("--window-days", type=float, default=None, help="logs of the last D days")
        parser.add_argument(
            "--set",
            action="append",
            default=[],
            metavar="SECTION.KEY=VALUE",
            help="override an OFFLINE_LOOP value for this run (JSON value)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"no project {options['project']!r}")
        overrides = _override(options["set"])
        if options["window_days"] is not None:
            overrides["window_days"] = options["window_days"]
        bar = tqdm(total=len(STEPS), unit="step", file=self.stderr._out, dynamic_ncols=True)
        done: set[str] = set()

        def progress(step: str, fraction: float, message: str) -> None:
            bar.set_description(f"{step}: {message}"[:70])
            if fraction >= 1.0 and step not in done:
                done.add(step)
                bar.update(1)

        run = offline_loop_run(
            project=project, idempotency_key=options["key"], overrides=overrides, progress=progress
        )
        bar.close()
        steps = run.stats.get("steps", {})
        for step in STEPS:
            info = {k: v for k, v in steps.get(step, {}).items() if k not in ("done", "timings")}
            self.stdout.write(f"{step:11s} {json.dumps(info, default=str)[:400]}")
        if run.status != "SUCCEEDED":
            raise CommandError(f"offline run #{run.pk} {run.status}: {run.job.message if run.job else ''}")
        release = run.published_release.version if run.published_release else None
        self.stdout.write(
            self.style.SUCCESS(
                f"offline run #{run.pk} {run.status}: {run.proposals.count()} proposal(s), "
                f"bins {steps.get('bin', {}).get('bins', {})}, published release {release}"
            )
        )
