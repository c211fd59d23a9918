"""Projects are the isolation unit: every row and every graph element belongs to exactly one project.

Each project owns its taxonomy, typologies, policies, ontology graph, releases, logs and memory.
People reach a project through a ``Membership`` with a platform role; client apps through an
``ApiToken``, whose policy role (``taxonomy.Role``) selects the Policy applied to its requests.
"""

from __future__ import annotations

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models

SLUG_VALIDATOR = RegexValidator(
    r"^[a-z0-9][a-z0-9-]{1,62}$", "lowercase letters, digits and dashes, 2–63 characters"
)


class Project(models.Model):
    """A workspace: one agent or product with its own knowledge, graph, releases, logs and memory."""

    slug = models.SlugField(max_length=63, unique=True, validators=[SLUG_VALIDATOR])
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, max_length=5000)
    label_seq = models.PositiveIntegerField(
        default=0, help_text="highest LabelID number ever issued here; LabelIDs are never reused"
    )
    knowledge_revision = models.PositiveIntegerField(
        default=0,
        help_text="bumped by every write of core knowledge; releases record the revision they froze",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    archived_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="set when an admin archives the project: it disappears from every page and API, its "
        "tokens stop working, and all its rows (audit trail included) are kept; restoring clears it",
    )
    webhook_secret = models.CharField(
        max_length=64,
        blank=True,
        default="",
        help_text="HMAC key signing the project's outgoing webhooks (X-ARG-Signature); generated on first "
        "use, rotated with `manage.py webhook_secret <project> --rotate`",
    )

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    @property
    def is_archived(self) -> bool:
        return self.archived_at is not None


class PlatformRole(models.TextChoices):
    """What a person may do in a project's web UI and API.

    * ADMIN: everything, including publish/rollback and memberships.
    * EXPERT (domain expert): curates taxonomy, typologies, policies and the graph draft.
    * REVIEWER: reads the taxonomy, decides on proposals.
    """

    ADMIN = "admin", "Admin"
    EXPERT = "expert", "Domain expert"
    REVIEWER = "reviewer", "Reviewer"


class Membership(models.Model):
    """A person's platform role in one project."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=PlatformRole.choices)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "project"], name="membership_unique_user_project")
        ]

    def __str__(self) -> str:
        return f"{self.user} @ {self.project}: {self.role}"


class ApiToken(models.Model):
    """A bearer credential of a client app (or of a person, when ``user`` is set), scoped to one project.

    Only a SHA-256 of the secret is stored; the full key (``arg_<prefix>_<secret>``) is shown once at
    creation. ``role`` is the policy role: it selects the Policy applied to the token's requests.
    A token is usable while not revoked and not expired.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=12, unique=True)
    key_hash = models.CharField(max_length=64)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="api_tokens",
        help_text="set for personal tokens of people",
    )
    role = models.ForeignKey(
        "taxonomy.Role", null=True, blank=True, on_delete=models.PROTECT, related_name="api_tokens"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="apitoken_unique_project_name")
        ]

    def __str__(self) -> str:
        return f"{self.project}:{self.name} ({self.prefix})"


class PublishRequest(models.Model):
    """A member who may not publish (an expert) asking the project's administrators to publish the
    draft. It is *open* until a release is published after it or an administrator dismisses it; open
    requests show on the Releases page and as a badge beside "Releases" for the people who publish."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="publish_requests")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    note = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    dismissed_at = models.DateTimeField(null=True, blank=True)
    dismissed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["project", "created_at"], name="publishrequest_project_time")]

    def __str__(self) -> str:
        return f"{self.project}: publish asked by {self.requested_by} at {self.created_at:%Y-%m-%d %H:%M}"
