"""Per-project webhook secrets: the HMAC key that signs every webhook the project sends.

A receiver checks ``X-ARG-Signature: t=<unix time>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`` (see
docs/security.md). The secret is generated the first time the project sends a webhook, printed by
``manage.py webhook_secret <project>`` and replaced by ``--rotate``.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time

from projects.models import Project

SIGNATURE_HEADER = "X-ARG-Signature"


def project_webhook_secret(*, project: Project) -> str:
    """The project's webhook secret, generated (once, race-free) if it has none yet."""
    if not project.webhook_secret:
        # Only the first writer sets it; a concurrent caller then reads the stored one.
        Project.objects.filter(pk=project.pk, webhook_secret="").update(webhook_secret=secrets.token_hex(32))
        project.webhook_secret = Project.objects.values_list("webhook_secret", flat=True).get(pk=project.pk)
    return project.webhook_secret


def project_webhook_secret_rotate(*, project: Project) -> str:
    """Replace the project's webhook secret; the old one stops verifying at once. Returns the new one."""
    project.webhook_secret = secrets.token_hex(32)
    Project.objects.filter(pk=project.pk).update(webhook_secret=project.webhook_secret)
    return project.webhook_secret


def webhook_signature(*, secret: str, body: bytes, timestamp: int | None = None) -> str:
    """The ``X-ARG-Signature`` value for ``body`` sent at ``timestamp`` (now by default)."""
    t = int(time.time()) if timestamp is None else timestamp
    digest = hmac.new(secret.encode("utf-8"), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={t},v1={digest}"
