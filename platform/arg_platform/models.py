"""Cross-cutting records: background jobs and the audit trail."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Job(models.Model):
    """A background (Celery) or command run that users can watch: status, progress and a log.

    Tasks take the job id, write progress here, and the UI polls it. ``idempotency_key`` lets a retried
    or duplicated request find the job that already ran instead of applying twice.
    """

    class Status(models.TextChoices):
        QUEUED = "QUEUED"
        RUNNING = "RUNNING"
        SUCCEEDED = "SUCCEEDED"
        FAILED = "FAILED"

    project = models.ForeignKey(
        "projects.Project", null=True, blank=True, on_delete=models.CASCADE, related_name="jobs"
    )
    kind = models.CharField(max_length=64)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    progress = models.FloatField(default=0.0, help_text="0..1")
    message = models.CharField(max_length=500, blank=True)
    params = models.JSONField(default=dict, blank=True)
    result = models.JSONField(default=dict, blank=True)
    log = models.TextField(blank=True)
    idempotency_key = models.CharField(max_length=128, blank=True, default="")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["kind", "idempotency_key"],
                condition=~models.Q(idempotency_key=""),
                name="job_unique_idempotency_key",
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind}#{self.pk} {self.status}"


class AuditEvent(models.Model):
    """Who changed what, when and why — one row per write of curated knowledge.

    ``object_type`` is a protocol term (``label``, ``cluster``, ``typology``, ``policy``, ``role``…),
    ``object_key`` the stable id (LabelID, cluster key…), ``before``/``after`` JSON snapshots of the
    fields that changed.
    """

    # PROTECT: a project with an audit trail cannot be deleted (it is archived instead), so no delete
    # anywhere can take its trail with it.
    project = models.ForeignKey("projects.Project", on_delete=models.PROTECT, related_name="audit_events")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    actor_name = models.CharField(max_length=150, blank=True, help_text="kept when the user is deleted")
    action = models.CharField(max_length=32)
    object_type = models.CharField(max_length=32)
    object_key = models.CharField(max_length=128)
    before = models.JSONField(default=dict, blank=True)
    after = models.JSONField(default=dict, blank=True)
    reason = models.CharField(max_length=500, blank=True)
    request_id = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["project", "object_type", "object_key"], name="audit_object_idx")]

    def __str__(self) -> str:
        return f"{self.actor_name} {self.action} {self.object_type}:{self.object_key}"
