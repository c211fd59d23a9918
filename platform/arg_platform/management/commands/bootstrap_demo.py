"""``manage.py bootstrap_demo`` — first-start setup of the embedded platform.

Loads the demo knowledge pack when the platform has no project yet, publishes it, sends it a seeded
night of customer traffic (the ``traffic.yaml`` beside the pack: ``manage.py seed_demo_traffic``) and
queues one offline-loop run for the worker, so a reviewer's queue holds what the loop made of that
night (``--no-traffic`` skips it). It creates the demo people (a domain expert, a reviewer, an admin)
and a client-app API token. Passwords and the token are random and printed once, at creation; later
runs say they exist.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import transaction

from projects.models import ApiToken, Project
from projects.services import api_token_create, membership_set

DEMO_PACK = Path(settings.BASE_DIR) / "packs" / "demo" / "pack.yaml"
DEMO_USERS = (("expert", "expert"), ("reviewer", "reviewer"), ("admin", "admin"))
# the demo token's role: a signed-in customer, the everyday client app (the README's curl example asks
# for an invoice, which the demo's anonymous-visitor policy refocuses); else the project's first role
DEMO_TOKEN_ROLE = "customer"


class Command(BaseCommand):
    help = "Load the demo pack into an empty platform and create demo users and an API token (printed once)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--pack", default=str(DEMO_PACK), help="pack to load when no project exists")
        parser.add_argument("--no-traffic", action="store_true", help="no demo traffic, no first loop run")
        parser.add_argument("--host", default="127.0.0.1", help="the address the platform will serve on")
        parser.add_argument(
            "--port", type=int, default=8000, help="the port it will serve on (make run PORT=…)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        pack = Path(options["pack"])
        if not Project.objects.exists():
            if pack.exists():
                self.stdout.write(f"Loading the demo knowledge pack {pack} …")
                call_command("import_pack", str(pack), stdout=self.stdout, stderr=self.stderr)
                imported = Project.objects.order_by("pk").first()
                if imported is not None:
                    call_command(
                        "publish_release",
                        imported.slug,
                        "--notes",
                        "demo knowledge pack",
                        stdout=self.stdout,
                        stderr=self.stderr,
                    )
                    traffic = pack.parent / "traffic.yaml"
                    if traffic.exists() and not options["no_traffic"]:
                        call_command(
                            "seed_demo_traffic",
                            imported.slug,
                            "--file",
                            str(traffic),
                            "--queue-loop",
                            stdout=self.stdout,
                            stderr=self.stderr,
                        )
            else:
                self.stdout.write(f"No demo pack at {pack}; starting with an empty platform.")
        project = Project.objects.order_by("pk").first()
        lines = self._users(project)
        if project is not None:
            lines += self._token(project, base_url=f"http://{options['host']}:{options['port']}")
        if lines:
            bar = "=" * 72
            self.stdout.write(
                self.style.SUCCESS("\n".join([bar, "Demo access (shown once — note it now):", *lines, bar]))
            )
        else:
            self.stdout.write(
                "Demo users and token already exist (their secrets were printed at first start)."
            )

    @transaction.atomic
    def _users(self, project: Project | None) -> list[str]:
        user_model = get_user_model()
        lines = []
        for username, role in DEMO_USERS:
            if user_model.objects.filter(username=username).exists():
                continue
            password = secrets.token_urlsafe(12)
            if role == "admin":
                user = user_model.objects.create_superuser(
                    username=username, password=password, email="admin@example.invalid"
                )
            else:
                user = user_model.objects.create_user(username=username, password=password)
            if project is not None:
                membership_set(project=project, user=user, role=role)
            lines.append(f"  {role:<9} user: {username:<9} password: {password}")
        return lines

    @transaction.atomic
    def _token(self, project: Project, *, base_url: str) -> list[str]:
        if ApiToken.objects.filter(project=project, name="demo-client").exists():
            return []
        role = project.roles.filter(key=DEMO_TOKEN_ROLE).first() or project.roles.order_by("key").first()
        _, key = api_token_create(project=project, name="demo-client", role=role)
        return [
            f"  API token for project {project.slug} (role {role.key if role else '-'}): {key}",
            f"  try: curl -H 'Authorization: Bearer {key}' {base_url}/api/v1/projects/",
            f"  API reference: {base_url}/api/v1/docs/ (Swagger UI), {base_url}/api/v1/redoc/ (Redoc)",
        ]
