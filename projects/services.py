"""Writes for projects, memberships and API tokens."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from arg_platform.errors import RuleViolation, Violation

from .models import ApiToken, Membership, PlatformRole, Project


def _hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


@transaction.atomic
def project_create(*, slug: str, name: str, description: str = "") -> Project:
    """Create an empty project (workspace)."""
    project = Project(slug=slug, name=name, description=description)
    try:
        project.full_clean()
    except Exception as exc:
        from django.core.exceptions import ValidationError

        if isinstance(exc, ValidationError):
            raise RuleViolation(
                [Violation("project.valid", "; ".join(msgs), field=f) for f, msgs in exc.message_dict.items()]
            ) from exc
        raise
    project.save()
    return project


@transaction.atomic
def membership_set(*, project: Project, user: Any, role: str) -> Membership:
    """Give ``user`` the platform ``role`` in ``project`` (replacing any earlier one)."""
    if role not in PlatformRole.values:
        raise RuleViolation(Violation("membership.role", f"unknown role {role!r}", field="role"))
    membership, _ = Membership.objects.update_or_create(user=user, project=project, defaults={"role": role})
    return membership


@transaction.atomic
def api_token_create(
    *,
    project: Project,
    name: str,
    role: Any = None,
    user: Any = None,
    expires_at: datetime | None = None,
) -> tuple[ApiToken, str]:
    """Create a token and return it with its full key — the only time the key is available."""
    if role is not None and role.project_id != project.pk:
        raise RuleViolation(
            Violation("token.role_project", "the role belongs to another project", field="role")
        )
    prefix = secrets.token_hex(4)
    secret = secrets.token_urlsafe(32)
    key = f"arg_{prefix}_{secret}"
    token = ApiToken.objects.create(
        project=project,
        name=name,
        prefix=prefix,
        key_hash=_hash_key(key),
        role=role,
        user=user,
        expires_at=expires_at,
    )
    return token, key


def api_token_revoke(*, token: ApiToken) -> ApiToken:
    """Revoke a token at once; later requests with it get 401."""
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


@transaction.atomic
def api_token_rotate(
    *, token: ApiToken, grace: timedelta | None = None, expires_at: datetime | None = None
) -> tuple[ApiToken, str]:
    """Replace ``token`` by a new one with the same project, name, policy role and user.

    The old token stops working at once, or at the end of ``grace`` (so that clients can switch over);
    it keeps its row, renamed ``<name>~<prefix>``, for the logs that name it. Returns the new token and
    its key (shown once).
    """
    token = ApiToken.objects.select_for_update().get(pk=token.pk)
    if token.revoked_at is not None:
        raise RuleViolation(Violation("token.revoked", "a revoked token cannot be rotated", field="token"))
    name = token.name
    now = timezone.now()
    token.name = f"{name[: 100 - len(token.prefix) - 1]}~{token.prefix}"
    if grace:
        token.expires_at = min(token.expires_at or now + grace, now + grace)
    else:
        token.revoked_at = now
    token.save(update_fields=["name", "expires_at", "revoked_at"])
    return api_token_create(
        project=token.project,
        name=name,
        role=token.role,
        user=token.user,
        expires_at=expires_at,
    )


def api_token_authenticate(*, key: str) -> ApiToken | None:
    """The live token matching ``key``, or None (unknown, revoked or expired)."""
    parts = key.split("_", 2)
    if len(parts) != 3 or parts[0] != "arg":
        return None
    token = ApiToken.objects.select_related("project", "user", "role").filter(prefix=parts[1]).first()
    if token is None or not secrets.compare_digest(token.key_hash, _hash_key(key)):
        return None
    now = timezone.now()
    if token.revoked_at is not None or (token.expires_at is not None and token.expires_at <= now):
        return None
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token
