"""Core knowledge of ARG v1 (§0.1): the taxonomy (cluster ↔ label), context typologies and policies.

Models are thin: fields, named constraints and docstrings. Every write goes through
``taxonomy.services``, which runs the deterministic validator first.
"""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

KEY_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,62}$"
KEY_VALIDATOR = RegexValidator(KEY_PATTERN, "lowercase letters, digits, '_' and '-', ≤ 63 characters")
LABEL_ID_PATTERN = r"^L\d{5,}$"


class Cluster(models.Model):
    """A stable top-level domain of the taxonomy (ARG §0.1: "cluster = top-level parent domain")."""

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="clusters")
    key = models.CharField(max_length=63, validators=[KEY_VALIDATOR])
    name = models.CharField(max_length=120)
    description = models.TextField(blank=True, max_length=2000)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["key"]
        constraints = [
            models.UniqueConstraint(fields=["project", "key"], name="cluster_unique_key"),
            models.UniqueConstraint(fields=["project", "name"], name="cluster_unique_name"),
        ]

    def __str__(self) -> str:
        return self.name


class LabelStatus(models.TextChoices):
    """Lifecycle of a label: CANDIDATE → SHADOW → ACTIVE → DEPRECATED (terminal).

    A SHADOW label is evaluated on live traffic without affecting routing; only ACTIVE labels route.
    """

    CANDIDATE = "CANDIDATE"
    SHADOW = "SHADOW"
    ACTIVE = "ACTIVE"
    DEPRECATED = "DEPRECATED"


class Label(models.Model):
    """A routing branch in the chain root → parent → child (ARG §0.1).

    ``label_id`` is the stable LabelID: issued once per project, never reused or renumbered, and the
    only thing other structures (attachments, policies, InfoKeys) reference. ``path`` is the label's
    current path ("Cluster › root › … › label"), kept as metadata only — it changes when a label is
    renamed or moved, which is why nothing keys on it.
    """

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="labels")
    label_id = models.CharField(
        max_length=16, validators=[RegexValidator(LABEL_ID_PATTERN, "LabelID is 'L' + digits")]
    )
    name = models.CharField(max_length=80)
    description = models.TextField(blank=True, max_length=2000)
    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, related_name="labels")
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="children"
    )
    status = models.CharField(max_length=12, choices=LabelStatus.choices, default=LabelStatus.ACTIVE)
    status_changed_at = models.DateTimeField(null=True, blank=True)
    status_changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    status_reason = models.CharField(max_length=500, blank=True)
    synonyms = models.JSONField(default=list, blank=True, help_text="validated synonyms (strings)")
    examples = models.JSONField(default=list, blank=True, help_text="validated example utterances (strings)")
    path = models.CharField(max_length=1000, blank=True, help_text="current path, metadata only")
    depth = models.PositiveSmallIntegerField(default=0, help_text="0 for a root label")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["path", "label_id"]
        constraints = [models.UniqueConstraint(fields=["project", "label_id"], name="label_unique_label_id")]
        indexes = [models.Index(fields=["project", "status"], name="label_status_idx")]

    def __str__(self) -> str:
        return f"{self.label_id} {self.name}"


class LabelIncompatibility(models.Model):
    """An explicit pair of labels that may not co-occur in one request's final label set.

    Stored once per pair with ``label_a.label_id < label_b.label_id``.
    """

    project = models.ForeignKey(
        "projects.Project", on_delete=models.CASCADE, related_name="incompatibilities"
    )
    label_a = models.ForeignKey(Label, on_delete=models.CASCADE, related_name="+")
    label_b = models.ForeignKey(Label, on_delete=models.CASCADE, related_name="+")
    reason = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["label_a", "label_b"], name="incompat_unique_pair")]

    def __str__(self) -> str:
        return f"{self.label_a.label_id} ⟂ {self.label_b.label_id}"


class ResponseStyle(models.TextChoices):
    CONCISE = "concise"
    DETAILED = "detailed"
    STEP_BY_STEP = "step_by_step"
    FORMAL = "formal"


class ContextTypology(models.Model):
    """A context typology: an inference profile outside the graph (ARG §0.1, §2.1.3).

    It parameterizes inference — access constraints, preferred node types, complexity budget, max
    depth/hops, beam width, response style, fast-path eligibility and the composite-score weights
    α (S_struct), β (S_sem), γ (S_taxo), δ (S_typology), ε (S_memory) — and carries no knowledge.
    ``project`` is empty for shared templates, which are copied into a project to be used.
    """

    project = models.ForeignKey(
        "projects.Project", null=True, blank=True, on_delete=models.CASCADE, related_name="typologies"
    )
    key = models.CharField(max_length=63, validators=[KEY_VALIDATOR])
    name = models.CharField(max_length=120)
    description = models.TextField(blank=True, max_length=2000)
    access_constraints = models.JSONField(default=dict, blank=True)
    preferred_node_types = models.JSONField(default=list, blank=True)
    complexity_budget = models.PositiveSmallIntegerField(
        default=3, validators=[MinValueValidator(1), MaxValueValidator(10)]
    )
    max_depth = models.PositiveSmallIntegerField(
        default=3, validators=[MinValueValidator(1), MaxValueValidator(20)]
    )
    max_hops = models.PositiveSmallIntegerField(
        default=4, validators=[MinValueValidator(1), MaxValueValidator(20)]
    )
    beam_width = models.PositiveSmallIntegerField(
        default=3, validators=[MinValueValidator(1), MaxValueValidator(32)]
    )
    response_style = models.CharField(
        max_length=16, choices=ResponseStyle.choices, default=ResponseStyle.CONCISE
    )
    fast_path_eligible = models.BooleanField(default=True)
    weight_alpha = models.FloatField(default=0.25, validators=[MinValueValidator(0), MaxValueValidator(1)])
    weight_beta = models.FloatField(default=0.35, validators=[MinValueValidator(0), MaxValueValidator(1)])
    weight_gamma = models.FloatField(default=0.2, validators=[MinValueValidator(0), MaxValueValidator(1)])
    weight_delta = models.FloatField(default=0.1, validators=[MinValueValidator(0), MaxValueValidator(1)])
    weight_epsilon = models.FloatField(default=0.1, validators=[MinValueValidator(0), MaxValueValidator(1)])
    is_default = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["key"]
        verbose_name_plural = "context typologies"
        constraints = [
            models.UniqueConstraint(fields=["project", "key"], name="typology_unique_key"),
            models.UniqueConstraint(
                fields=["key"], condition=models.Q(project__isnull=True), name="typology_template_unique_key"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class MemoryScope(models.TextChoices):
    USER = "USER"
    ORG = "ORG"
    GLOBAL = "GLOBAL"


class Policy(models.Model):
    """Governance of a project for the roles that use it (ARG §2.1.2–2.1.3, the Policy Manager).

    Label rules name stable LabelIDs and cover each label's whole subtree; an empty allow-list means
    every label. Content rules (blocked terms and patterns) BLOCK; sensitive topics RESTRICT or
    REFOCUS; the scope statement drives ALLOW_WITH_REFOCUS; ``memory_scopes`` bounds MemoryWrite.
    """

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="policies")
    key = models.CharField(max_length=63, validators=[KEY_VALIDATOR])
    name = models.CharField(max_length=120)
    description = models.TextField(blank=True, max_length=2000)
    allowed_labels = models.JSONField(default=list, blank=True)
    forbidden_labels = models.JSONField(default=list, blank=True)
    allowed_node_types = models.JSONField(default=list, blank=True)
    forbidden_node_types = models.JSONField(default=list, blank=True)
    max_hops = models.PositiveSmallIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1), MaxValueValidator(20)]
    )
    blocked_terms = models.JSONField(default=list, blank=True)
    blocked_patterns = models.JSONField(default=list, blank=True)
    sensitive_topics = models.JSONField(default=list, blank=True)
    scope_statement = models.TextField(blank=True, max_length=2000)
    refusal_template = models.TextField(blank=True, max_length=2000)
    refocus_template = models.TextField(blank=True, max_length=2000)
    # ISO 639-1 code (or "default") → the answer to a prompt in a language the release does not cover
    language_messages = models.JSONField(default=dict, blank=True)
    memory_scopes = models.JSONField(default=list, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["key"]
        verbose_name_plural = "policies"
        constraints = [models.UniqueConstraint(fields=["project", "key"], name="policy_unique_key")]

    def __str__(self) -> str:
        return self.name


class Role(models.Model):
    """A policy role: maps people and API clients to a Policy (and a default context typology)."""

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="roles")
    key = models.CharField(max_length=63, validators=[KEY_VALIDATOR])
    name = models.CharField(max_length=120)
    policy = models.ForeignKey(Policy, on_delete=models.PROTECT, related_name="roles")
    default_typology = models.ForeignKey(
        ContextTypology, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )

    class Meta:
        ordering = ["key"]
        constraints = [models.UniqueConstraint(fields=["project", "key"], name="role_unique_key")]

    def __str__(self) -> str:
        return self.name
