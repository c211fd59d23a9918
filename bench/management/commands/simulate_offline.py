"""``manage.py simulate_offline --seed N --nights K [--requests R]`` — the seeded hidden-domain simulation.

Builds the hidden domain with its planted defects (``bench.simulation.domain``), generates traffic and
outcomes through the real pipeline, runs K nights of the offline loop (with a simulated expert
reviewing the MID_CONF queue) plus the slow-poisoning scenario, and reports per proposal kind the
precision and recall of proposals, what was auto-committed vs sent to review, and routing accuracy
before/after. The last line is::

    SUMMARY proposal_precision=<x> proposal_recall=<x> autocommits=<n> silence_autocommits=<n>
    poisoning_autocommits=<n> accuracy_before=<pct> accuracy_after=<pct>

Run it on an empty data folder (``ARG_DATA_DIR=$(mktemp -d)``; migrations are applied first).
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand

from bench.simulation.runner import simulate


class Command(BaseCommand):
    help = "Seeded end-to-end simulation of the offline loop; prints a SUMMARY line."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("--nights", type=int, default=3)
        parser.add_argument("--requests", type=int, default=500, help="logged requests per night")
        parser.add_argument(
            "--poison-episodes", type=int, default=40, help="weak poisoning episodes per night"
        )
        parser.add_argument(
            "--no-review", action="store_true", help="no simulated expert on the MID_CONF queue"
        )
        parser.add_argument("--json", action="store_true", help="print the full report as JSON too")

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("migrate", verbosity=0)
        report = simulate(
            seed=options["seed"],
            nights=options["nights"],
            requests=options["requests"],
            poison_episodes=options["poison_episodes"],
            review=not options["no_review"],
            progress=lambda message: self.stdout.write(message),
        )
        self.stdout.write("")
        header = ("kind", "proposals", "precision", "recall", "auto", "review", "backlog")
        self.stdout.write("{:14s} {:>9s} {:>9s} {:>7s} {:>5s} {:>6s} {:>7s}".format(*header))
        for kind, row in sorted(report.per_kind.items()):
            self.stdout.write(
                f"{kind:14s} {row.get('proposals', 0):9.0f} {row.get('precision', 0):9.2f} {row.get('recall', 0):7.2f} "
                f"{row.get('autocommitted', 0):5.0f} {row.get('reviewed', 0):6.0f} {row.get('backlog', 0):7.0f}"
            )
        for night in report.nights:
            self.stdout.write(
                f"night {night.night}: {night.requests} requests, {night.feedback} signals, bins {night.bins}, "
                f"auto {night.autocommitted}, reviewed {night.reviewed}, release {night.release}"
            )
        self.stdout.write(f"defects matched: {json.dumps(report.matched)}")
        self.stdout.write(f"poisoning project: {json.dumps(report.poisoning_proposals)}")
        self.stdout.write(
            f"path length (held-out prompts): {report.path_length_before:.2f} → {report.path_length_after:.2f}"
        )
        if options["json"]:
            self.stdout.write(json.dumps(report.proposals, indent=1, default=str))
        self.stdout.write(report.summary_line())
