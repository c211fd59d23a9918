"""``manage.py purge_logs [--days D] [--dry-run]`` — the retention purge now, in this process.

Deletes the request logs (with their feedback) and the action runs older than ``D`` days (default
``ARG_LOG_RETENTION_DAYS``) in every project, like the daily beat task ``inference.logs_purge``, and
prints the counts per kind. ``--dry-run`` prints what would be deleted and deletes nothing. A window
shorter than the offline loop's (``OFFLINE_LOOP["window_days"]``) is refused; 0 deletes nothing.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from arg_platform.errors import RuleViolation
from inference.retention import logs_purge, logs_purge_counts, purge_cutoff, retention_days


class Command(BaseCommand):
    help = "Delete request logs, feedback and action runs older than the retention window (all projects)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--days", type=int, default=None, help="keep this many days (default: ARG_LOG_RETENTION_DAYS)"
        )
        parser.add_argument("--dry-run", action="store_true", help="print the counts, delete nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        days = retention_days() if options["days"] is None else options["days"]
        try:
            cutoff = purge_cutoff(days=days)
        except RuleViolation as exc:
            raise CommandError(exc.message) from exc
        if cutoff is None:
            self.stdout.write("retention is off (0 days): nothing to purge")
            return
        if options["dry_run"]:
            counts = logs_purge_counts(cutoff=cutoff)
            verb = "would delete"
        else:
            counts = logs_purge(days=days)
            verb = "deleted"
        self.stdout.write(f"older than {days} days (before {cutoff.isoformat(timespec='seconds')}): {verb}")
        for name, count in counts.items():
            self.stdout.write(f"  {name}: {count}")
