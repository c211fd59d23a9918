"""Records of the online pipeline: one InferenceLog per authenticated request, feedback, action runs."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class InferenceLog(models.Model):
    """Everything ARG v1 requires to be logged for one request (§2.2, §2.8, §2.9.6, §3.1).

    Written exactly once per request that passed authentication — including refused, blocked and
    failed ones — and never updated except by explicit feedback (``outcome_status``, ``feedback``).
    What a person typed (the prompt, the conversation history, action parameters and results, the
    answer, the error) is stored as the Memory Guard scrubbed it, and ``pii`` lists the kinds it found.
    """

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="inference_logs")
    request_id = models.CharField(max_length=64, unique=True, help_text="minted by the server")
    correlation_id = models.CharField(
        max_length=64, blank=True, db_index=True, help_text="the client's X-Request-ID (not unique)"
    )
    release = models.ForeignKey(
        "ontology.Release", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    release_version = models.PositiveIntegerField(null=True, blank=True)
    token = models.ForeignKey(
        "projects.ApiToken", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    role_key = models.CharField(max_length=63, blank=True)
    typology_key = models.CharField(max_length=63, blank=True)
    session_id = models.CharField(max_length=128, blank=True, db_index=True)
    user_id = models.CharField(
        max_length=128, blank=True, help_text="the client's context.user_id: what erasure by user id finds"
    )
    prompt = models.TextField(help_text="as sent, with PII replaced by the Memory Guard's placeholders")
    language = models.CharField(max_length=8, blank=True)
    context = models.JSONField(default=dict, blank=True)
    policy_state = models.CharField(max_length=24, blank=True)
    policy_constraints = models.JSONField(default=dict, blank=True)
    policy_reasons = models.JSONField(default=list, blank=True)
    labels_raw = models.JSONField(default=dict, blank=True, help_text="L_raw (lexical)")
    labels_blocked = models.JSONField(default=list, blank=True, help_text="labels blocked by policy")
    weaver = models.JSONField(default=dict, blank=True, help_text="top-K, classifier, proposer, rejected")
    labels_final = models.JSONField(default=dict, blank=True, help_text="L_final")
    confidence = models.FloatField(null=True, blank=True, help_text="confidence_global")
    flags = models.JSONField(default=list, blank=True)
    landing = models.JSONField(default=dict, blank=True)
    path_nodes = models.JSONField(default=list, blank=True)
    path_edges = models.JSONField(default=list, blank=True)
    target_node = models.CharField(max_length=128, blank=True)
    fast_path = models.BooleanField(default=False)
    outcome_kind = models.CharField(max_length=16, blank=True, db_index=True)
    action = models.JSONField(default=dict, blank=True)
    c_info = models.FloatField(null=True, blank=True)
    active_check = models.JSONField(default=dict, blank=True)
    outcome_status = models.CharField(max_length=32, blank=True, db_index=True)
    silent_outcome = models.BooleanField(default=True, help_text="no explicit user signal received yet")
    answer = models.TextField(blank=True)
    outcome_details = models.JSONField(
        default=dict, blank=True, help_text="C_info parts, context nodes, answer mode"
    )
    timings_ms = models.JSONField(default=dict, blank=True, help_text="per-step wall time")
    error = models.CharField(max_length=500, blank=True)
    pii = models.JSONField(
        default=list, blank=True, help_text="kinds of PII replaced in what this row stores (never the values)"
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["project", "created_at"], name="inferencelog_project_time"),
            models.Index(fields=["project", "user_id"], name="inferencelog_project_user"),
        ]

    def __str__(self) -> str:
        return f"{self.request_id} {self.outcome_kind}"


class Feedback(models.Model):
    """An explicit user signal about one request: helpfulness, a disambiguation choice, an action result.

    Only explicit signals move an Info outcome out of UNCERTAIN (§2.9.7); silence never confirms.
    ``source`` tells the user's own signal from a reviewer's label of a sampled silent success
    (§3.4.2): a reviewer label feeds C_info and threshold recalibration but leaves the request's
    outcome (still silent, still UNCERTAIN) untouched.
    """

    class Kind(models.TextChoices):
        HELPFUL = "helpful"
        DISAMBIGUATION = "disambiguation"
        ACTION_OUTCOME = "action_outcome"

    class Source(models.TextChoices):
        USER = "user"
        REVIEWER = "reviewer"

    log = models.ForeignKey(InferenceLog, on_delete=models.CASCADE, related_name="feedback")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.USER, db_index=True)
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    helpful = models.BooleanField(null=True, blank=True)
    choice = models.CharField(max_length=200, blank=True)
    action_succeeded = models.BooleanField(null=True, blank=True)
    comment = models.CharField(max_length=1000, blank=True)
    idempotency_key = models.CharField(max_length=128, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["log", "idempotency_key"],
                condition=~models.Q(idempotency_key=""),
                name="feedback_unique_idempotency",
            )
        ]

    def __str__(self) -> str:
        return f"{self.log.request_id} {self.kind}"


class ActionExecution(models.Model):
    """One execution of an Action node through a registered handler; the idempotency key makes a
    retried request return the first result instead of acting twice.

    A key belongs to its caller and its node: the same key sent by another caller (another token, another
    person) or for another node is another key. ``request_digest`` records the parameters it was first
    used with, so a caller reusing a key for different parameters is refused (409)."""

    class Status(models.TextChoices):
        SUCCEEDED = "SUCCEEDED"
        FAILED = "FAILED"
        DRY_RUN = "DRY_RUN"
        TIMEOUT = "TIMEOUT"

    project = models.ForeignKey(
        "projects.Project", on_delete=models.CASCADE, related_name="action_executions"
    )
    idempotency_key = models.CharField(max_length=128)
    caller = models.CharField(
        max_length=64, blank=True, help_text="whose key it is: token:<id> or user:<id> ('' for none)"
    )
    request_digest = models.CharField(
        max_length=64, blank=True, help_text="SHA-256 of the parameters the key was first used with"
    )
    request_id = models.CharField(max_length=64)
    node_id = models.CharField(max_length=128)
    handler = models.CharField(max_length=200)
    parameters = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=12, choices=Status.choices)
    result = models.JSONField(default=dict, blank=True)
    duration_ms = models.FloatField(default=0.0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "caller", "node_id", "idempotency_key"], name="action_unique_caller_key"
            )
        ]

    def __str__(self) -> str:
        return f"{self.handler} {self.status}"
