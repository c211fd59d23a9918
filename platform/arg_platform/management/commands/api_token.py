"""``manage.py api_token create|list|rotate|revoke`` — API tokens of client apps, from the shell.

    manage.py api_token create acme-support mobile-app --role customer --expires-in-days 90
    manage.py api_token list acme-support
    manage.py api_token rotate acme-support mobile-app --grace-minutes 60
    manage.py api_token revoke acme-support mobile-app

``create`` and ``rotate`` print the full key once, on stdout, alone on its line (so it can be piped
into a secret store); only its SHA-256 is kept. A token is scoped to one project and, through its
policy role, to one Policy; with ``--user`` it is a person's token and carries that person's platform
role instead of the client capabilities (read + infer).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import IntegrityError
from django.utils import timezone

from arg_platform.audit import audit_record
from arg_platform.errors import RuleViolation
from projects.models import ApiToken, Project
from projects.services import api_token_create, api_token_revoke, api_token_rotate


class Command(BaseCommand):
    help = "Create, list, rotate or revoke the API tokens of a project."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="verb", required=True)
        create = sub.add_parser("create", help="create a token and print its key once")
        create.add_argument("project")
        create.add_argument("name")
        create.add_argument("--role", default="", help="policy role key (selects the Policy)")
        create.add_argument("--user", default="", help="username: a person's token instead of a client's")
        create.add_argument("--expires-in-days", type=int, default=0, help="0 = never expires")
        listing = sub.add_parser("list", help="the project's tokens (never their keys)")
        listing.add_argument("project")
        listing.add_argument("--all", action="store_true", help="include revoked and expired tokens")
        rotate = sub.add_parser("rotate", help="replace a token by a new one; print the new key once")
        rotate.add_argument("project")
        rotate.add_argument("name")
        rotate.add_argument(
            "--grace-minutes",
            type=int,
            default=0,
            help="the old key keeps working this long (0 = revoked now)",
        )
        rotate.add_argument(
            "--expires-in-days", type=int, default=0, help="expiry of the new token; 0 = never"
        )
        revoke = sub.add_parser("revoke", help="revoke a token now (later requests get 401)")
        revoke.add_argument("project")
        revoke.add_argument("name", help="token name or its prefix")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"project {options['project']!r} not found")
        verb = options["verb"]
        try:
            getattr(self, f"_{verb}")(project, options)
        except RuleViolation as exc:
            raise CommandError(exc.message) from exc

    def _token(self, project: Project, name: str) -> ApiToken:
        live = ApiToken.objects.filter(project=project, revoked_at__isnull=True)
        token = live.filter(name=name).first() or live.filter(prefix=name).first()
        if token is None:
            raise CommandError(f"no live token {name!r} in project {project.slug}")
        return token

    def _create(self, project: Project, options: dict[str, Any]) -> None:
        role = None
        if options["role"]:
            role = project.roles.filter(key=options["role"]).first()
            if role is None:
                raise CommandError(f"project {project.slug} has no policy role {options['role']!r}")
        user = None
        if options["user"]:
            user = get_user_model().objects.filter(username=options["user"]).first()
            if user is None:
                raise CommandError(f"no user {options['user']!r}")
        days = options["expires_in_days"]
        try:
            token, key = api_token_create(
                project=project,
                name=options["name"],
                role=role,
                user=user,
                expires_at=timezone.now() + timedelta(days=days) if days > 0 else None,
            )
        except IntegrityError as exc:
            raise CommandError(
                f"project {project.slug} already has a token named {options['name']!r}"
            ) from exc
        audit_record(
            project=project,
            actor=None,
            action="create",
            object_type="api_token",
            object_key=token.prefix,
            after={
                "name": token.name,
                "role": role.key if role else None,
                "expires_at": str(token.expires_at),
            },
        )
        self.stderr.write(self._describe(token) + " — the key below is shown only now:")
        self.stdout.write(key)

    def _list(self, project: Project, options: dict[str, Any]) -> None:
        tokens = ApiToken.objects.filter(project=project).select_related("role", "user").order_by("name")
        now = timezone.now()
        for token in tokens:
            dead = token.revoked_at is not None or (token.expires_at is not None and token.expires_at <= now)
            if dead and not options["all"]:
                continue
            self.stdout.write(self._describe(token))

    def _rotate(self, project: Project, options: dict[str, Any]) -> None:
        old = self._token(project, options["name"])
        grace = timedelta(minutes=options["grace_minutes"]) if options["grace_minutes"] > 0 else None
        days = options["expires_in_days"]
        token, key = api_token_rotate(
            token=old, grace=grace, expires_at=timezone.now() + timedelta(days=days) if days > 0 else None
        )
        audit_record(
            project=project,
            actor=None,
            action="rotate",
            object_type="api_token",
            object_key=token.prefix,
            before={"prefix": old.prefix},
            after={"name": token.name, "grace_minutes": options["grace_minutes"]},
        )
        until = f"keeps working until {timezone.now() + grace:%Y-%m-%d %H:%M} UTC" if grace else "is revoked"
        self.stderr.write(
            f"old key {old.prefix} {until}; new {self._describe(token)} — new key, shown only now:"
        )
        self.stdout.write(key)

    def _revoke(self, project: Project, options: dict[str, Any]) -> None:
        token = api_token_revoke(token=self._token(project, options["name"]))
        audit_record(
            project=project,
            actor=None,
            action="revoke",
            object_type="api_token",
            object_key=token.prefix,
            after={"name": token.name},
        )
        self.stdout.write(f"revoked {self._describe(token)}")

    @staticmethod
    def _describe(token: ApiToken) -> str:
        role = token.role.key if token.role is not None else "-"
        who = f"user={token.user.get_username()}" if token.user is not None else "client"
        if token.revoked_at is not None:
            state = f"revoked {token.revoked_at:%Y-%m-%d %H:%M}"
        elif token.expires_at is not None:
            state = f"expires {token.expires_at:%Y-%m-%d %H:%M}"
        else:
            state = "no expiry"
        used = f"last used {token.last_used_at:%Y-%m-%d %H:%M}" if token.last_used_at else "never used"
        return f"{token.name} prefix={token.prefix} role={role} {who} {state} {used}"
