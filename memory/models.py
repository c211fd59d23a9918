"""Memory tables (ARG §2.10, §4): episodic memory items, the Info Registry (InfoKeys, InfoUnits,
evidence, attempts, history) and the typed memory edges between episodic items.

Models are thin; every write goes through ``memory.services``. Nothing here is structural: online memory
never creates nodes, edges, clusters or labels (§4.1); the offline loop decides what becomes structure.
"""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone

from .canonical import InfoType
from .merge_bar import MAX_SLACK


class Scope(models.TextChoices):
    """Who a memory belongs to (§2.10.5.3): one user, one organization, or everyone in the project."""

    USER = "USER"
    ORG = "ORG"
    GLOBAL = "GLOBAL"


INFO_TYPE_CHOICES = [(t, t) for t in InfoType.ALL]


class MemoryFlag(models.TextChoices):
    """Flags of a memory write (§2.10.5.10), read by the offline loop."""

    MISSING_LABEL_CANDIDATE = "MISSING_LABEL_CANDIDATE"  # no validated label: episodic only
    NEW_INTENT_CANDIDATE = "NEW_INTENT_CANDIDATE"
    LOW_CONFIDENCE_INFO_WRITE = "LOW_CONFIDENCE_INFO_WRITE"
    PII_SCRUBBED = "PII_SCRUBBED"
    CORRECTION = "CORRECTION"


class Signal(models.TextChoices):
    """Strength of the evidence a write brings (§2.10.5.9.1): repeated use is not truth."""

    WEAK = "weak"  # a mention, a silent outcome, repetition
    STRONG = "strong"  # an explicit, reliable confirmation (user confirmed, operator verified, reviewer)


class EpisodicMemory(models.Model):
    """An episodic memory item (ARG §4.1): one event, preference, incident or usage pattern, captured online.

    Attached to an existing node (``node_id``, never changed) or to none. ``node_ids_current`` is where
    that node lives on after splits and merges — MemoryRead follows the alias table A → {B, C} and
    soft-updates it, so a memory is never orphaned. ``text`` is PII-scrubbed at write time (``pii`` keeps
    only the types found). ``subject`` is the user id (USER scope), the org id (ORG) or empty (GLOBAL).
    ``semantic_candidate`` is the label-gated eligibility for offline consolidation (§2.10.3); without a
    validated label the item is episodic only and flagged MISSING_LABEL_CANDIDATE.
    ``embedding`` is the float32 vector of the canonical statement.
    """

    class Source(models.TextChoices):
        PIPELINE = "pipeline"
        API = "api"
        BENCH = "bench"
        OFFLINE = "offline"  # a consolidation episode (``memory.services.consolidation``)

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="memories")
    scope = models.CharField(max_length=8, choices=Scope.choices)
    subject = models.CharField(max_length=128, blank=True)
    user_id = models.CharField(max_length=128, blank=True)
    org_id = models.CharField(max_length=128, blank=True)
    session_id = models.CharField(max_length=128, blank=True)
    request_id = models.CharField(max_length=64, blank=True)
    info_type = models.CharField(max_length=24, choices=INFO_TYPE_CHOICES)
    text = models.TextField(max_length=2000)
    pii = models.JSONField(default=list, blank=True, help_text="PII types scrubbed (never the values)")
    node_id = models.CharField(max_length=128, blank=True, help_text="node attached at write time")
    node_ids_current = models.JSONField(default=list, blank=True, help_text="where that node lives on now")
    redirected_at = models.DateTimeField(null=True, blank=True)
    redirect_release_version = models.PositiveIntegerField(null=True, blank=True)
    label_ids = models.JSONField(default=list, blank=True, help_text="validated LabelIDs")
    label_signature = models.CharField(max_length=200, blank=True)
    label_path_current = models.CharField(max_length=1000, blank=True, help_text="metadata only")
    flags = models.JSONField(default=list, blank=True)
    semantic_candidate = models.BooleanField(default=False)
    signal = models.CharField(max_length=8, choices=Signal.choices, default=Signal.WEAK)
    source = models.CharField(max_length=12, choices=Source.choices, default=Source.API)
    provenance = models.JSONField(default=dict, blank=True)
    embedding = models.BinaryField(null=True, blank=True)
    info_unit = models.ForeignKey(
        "InfoUnit", null=True, blank=True, on_delete=models.SET_NULL, related_name="episodes"
    )
    corrects = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="corrections"
    )
    occurred_at = models.DateTimeField(default=timezone.now)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["project", "scope", "subject"], name="memory_ep_scope_idx"),
            models.Index(fields=["project", "session_id", "occurred_at"], name="memory_ep_session_idx"),
            models.Index(fields=["project", "info_type"], name="memory_ep_type_idx"),
            models.Index(fields=["project", "label_signature"], name="memory_ep_label_idx"),
            models.Index(fields=["project", "node_id"], name="memory_ep_node_idx"),
        ]

    def __str__(self) -> str:
        return f"memory #{self.pk} {self.scope}:{self.subject} {self.info_type}"


class InfoKey(models.Model):
    """The primary uniqueness key of the Info Registry (§2.10.5.3): ``(LabelSignature, InfoType, Scope)``.

    ``label_signature`` is built from stable LabelIDs only — the PrimaryLabelID, or the sorted LabelID
    set in multi-label mode — never from a label path. The Scope part names the scope *and* its subject
    (``USER:u-42``) so two users' facts never share a key. ``label_path_current`` is metadata: it follows
    the taxonomy when labels are renamed or moved, and ``key`` does not change. The row is also the lock
    every write in the key takes (``select_for_update``), which makes concurrent writes of one fact a
    single InfoUnit.
    """

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="info_keys")
    key = models.CharField(max_length=400)
    label_signature = models.CharField(max_length=200)
    primary_label_id = models.CharField(max_length=16, blank=True)
    label_ids = models.JSONField(default=list)
    info_type = models.CharField(max_length=24, choices=INFO_TYPE_CHOICES)
    scope = models.CharField(max_length=8, choices=Scope.choices)
    subject = models.CharField(max_length=128, blank=True)
    label_path_current = models.CharField(max_length=1000, blank=True, help_text="metadata only")
    unit_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["key"]
        constraints = [models.UniqueConstraint(fields=["project", "key"], name="memory_infokey_unique")]
        indexes = [
            models.Index(fields=["project", "label_signature"], name="memory_infokey_label_idx"),
            models.Index(fields=["project", "info_type", "scope"], name="memory_infokey_type_idx"),
        ]

    def __str__(self) -> str:
        return self.key


class InfoUnit(models.Model):
    """One unit of information in the Info Registry (§2.10.5): the fact, deduplicated across wordings.

    ``canonical_text`` is the template-bound summary and never holds PII (it is built from the scrubbed
    fact); ``canonical_statement`` is the normalized statement that is embedded; ``founding_text`` is the
    scrubbed text of the first episode (the comparator re-reads it). ``canonical_digest`` only guards
    exact duplicates inside one InfoKey (a unique constraint); it is never the primary key.
    Reliability counts strong and weak signals separately: an InfoUnit is never promoted on weak signals
    alone (§2.10.5.9.1).
    """

    class Status(models.TextChoices):
        ACTIVE = "ACTIVE"
        PROMOTION_CANDIDATE = "PROMOTION_CANDIDATE"  # eligible for offline consolidation (§4.2)
        RETIRED = "RETIRED"

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="info_units")
    info_key = models.ForeignKey(InfoKey, on_delete=models.CASCADE, related_name="units")
    info_type = models.CharField(max_length=24, choices=INFO_TYPE_CHOICES)
    scope = models.CharField(max_length=8, choices=Scope.choices)
    subject = models.CharField(max_length=128, blank=True)
    label_signature = models.CharField(max_length=200)
    label_path_current = models.CharField(max_length=1000, blank=True, help_text="metadata only")
    canonical_text = models.TextField(max_length=4000)
    canonical_statement = models.TextField(max_length=2000)
    canonical_fields = models.JSONField(default=dict, blank=True)
    canonical_digest = models.CharField(max_length=64)
    founding_text = models.TextField(max_length=2000)
    simhash = models.BigIntegerField(default=0)
    embedding = models.BinaryField()
    evidence_count = models.PositiveIntegerField(default=0)
    distinct_sources = models.PositiveIntegerField(default=0)
    strong_signals = models.PositiveIntegerField(default=0)
    weak_signals = models.PositiveIntegerField(default=0)
    reliability = models.FloatField(default=0.0)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.ACTIVE)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    last_evidence_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(fields=["info_key", "canonical_digest"], name="memory_unit_unique_digest")
        ]
        indexes = [
            models.Index(fields=["project", "info_type", "scope"], name="memory_unit_type_idx"),
            models.Index(fields=["project", "label_signature"], name="memory_unit_label_idx"),
            models.Index(fields=["project", "subject"], name="memory_unit_subject_idx"),
        ]

    def __str__(self) -> str:
        return f"InfoUnit #{self.pk} {self.info_key_id}"


class InfoEvidence(models.Model):
    """An episodic item attached to an InfoUnit as evidence (§2.10.5.8), with how it was matched."""

    unit = models.ForeignKey(InfoUnit, on_delete=models.CASCADE, related_name="evidence")
    episode = models.ForeignKey(EpisodicMemory, on_delete=models.CASCADE, related_name="evidence")
    attempt = models.ForeignKey(
        "RegistryAttempt", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    similarity = models.FloatField(default=1.0)
    method = models.CharField(max_length=24)
    signal = models.CharField(max_length=8, choices=Signal.choices, default=Signal.WEAK)
    source_key = models.CharField(max_length=200, blank=True, help_text="who/where it came from")
    created_at = models.DateTimeField(auto_now_add=True)
    # Not columns: the Detach form's term hints the unit page sets on the rows it shows.
    unit_words: list[str]
    fact_words: list[str]

    class Meta:
        ordering = ["-id"]
        constraints = [models.UniqueConstraint(fields=["unit", "episode"], name="memory_evidence_unique")]

    def __str__(self) -> str:
        return f"evidence {self.episode_id} → unit {self.unit_id}"


class RegistryAttempt(models.Model):
    """The mandatory log of one Info Registry attempt (§2.10.5.10): InfoKey, LabelPath_current, top-K
    candidates with scores, decision MATCH / NEW / UNSURE, method, flags.

    An UNSURE attempt is the staging item for offline review: ``review_status`` PENDING until a reviewer
    says SAME (the episode becomes evidence of ``candidate_unit``) or DIFFERENT (a new InfoUnit).
    """

    class Decision(models.TextChoices):
        MATCH = "MATCH"
        NEW = "NEW"
        UNSURE = "UNSURE"

    class Review(models.TextChoices):
        NONE = ""
        PENDING = "PENDING"
        SAME = "SAME"
        DIFFERENT = "DIFFERENT"

    project = models.ForeignKey(
        "projects.Project", on_delete=models.CASCADE, related_name="registry_attempts"
    )
    episode = models.ForeignKey(EpisodicMemory, on_delete=models.CASCADE, related_name="attempts")
    info_key = models.ForeignKey(InfoKey, on_delete=models.CASCADE, related_name="attempts")
    label_path_current = models.CharField(max_length=1000, blank=True)
    top_k = models.JSONField(default=list, blank=True)
    decision = models.CharField(max_length=8, choices=Decision.choices)
    method = models.CharField(max_length=24)
    flags = models.JSONField(default=list, blank=True)
    reasons = models.JSONField(default=list, blank=True, help_text="discriminators that fired")
    unit = models.ForeignKey(InfoUnit, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    candidate_unit = models.ForeignKey(
        InfoUnit, null=True, blank=True, on_delete=models.SET_NULL, related_name="unsure_attempts"
    )
    review_status = models.CharField(max_length=10, choices=Review.choices, default=Review.NONE, blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolution_reason = models.CharField(max_length=500, blank=True)
    latency_ms = models.FloatField(default=0.0)
    request_id = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Not columns: the term hints set by ``memory.selectors.term_hints_annotate`` on the rows a list shows.
    unit_words: list[str]
    fact_words: list[str]

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["project", "review_status"], name="memory_attempt_review_idx"),
            models.Index(fields=["project", "decision"], name="memory_attempt_decision_idx"),
        ]

    def __str__(self) -> str:
        return f"attempt #{self.pk} {self.decision}"


class InfoUnitEvent(models.Model):
    """One line of an InfoUnit's history: created, evidence, label path moved, review, promotion."""

    class Kind(models.TextChoices):
        CREATED = "CREATED"
        EVIDENCE = "EVIDENCE"
        LABEL_PATH = "LABEL_PATH"
        REVIEWED = "REVIEWED"
        PROMOTION = "PROMOTION"
        PROMOTION_REFUSED = "PROMOTION_REFUSED"
        DETACHED = "DETACHED"  # a wrong merge undone: evidence taken off one unit, founding another
        CONSOLIDATED = "CONSOLIDATED"  # taken into (or written as) a semantic unit by offline consolidation

    unit = models.ForeignKey(InfoUnit, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    details = models.JSONField(default=dict, blank=True)
    actor_name = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.unit_id} {self.kind}"


class MemoryEdgeType(models.TextChoices):
    """Typed, weighted relations between episodic items (an edge table)."""

    TEMPORAL = "TEMPORAL"  # turn N → turn N+1 of a session, weight decaying with the gap
    CAUSAL = "CAUSAL"  # correction → the item it corrects
    REFERENTIAL = "REFERENTIAL"  # items about the same node, weight = cosine
    CATEGORICAL = "CATEGORICAL"  # items of the same InfoKey (category), weight = cosine
    TRAJECTORY = "TRAJECTORY"  # first → last item of a session


class MemoryEdge(models.Model):
    """A typed, weighted edge between two episodic items of one project; never a self-loop."""

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="memory_edges")
    source = models.ForeignKey(EpisodicMemory, on_delete=models.CASCADE, related_name="out_edges")
    target = models.ForeignKey(EpisodicMemory, on_delete=models.CASCADE, related_name="in_edges")
    type = models.CharField(max_length=12, choices=MemoryEdgeType.choices)
    weight = models.FloatField(default=1.0)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["source", "target", "type"], name="memory_edge_unique"),
            models.CheckConstraint(
                condition=~models.Q(source=models.F("target")), name="memory_edge_no_self_loop"
            ),
        ]
        indexes = [
            models.Index(fields=["source", "type"], name="memory_edge_source_idx"),
            models.Index(fields=["target", "type"], name="memory_edge_target_idx"),
            models.Index(fields=["project", "type"], name="memory_edge_type_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.source_id} -[{self.type}]-> {self.target_id}"


class TermDistinction(models.Model):
    """A reviewer's rule that two terms name different things (``memory.distinctions``): learned when a
    wrong merge is detached or an UNSURE pair is resolved as DIFFERENT, applied by the registry to every
    later pair of the project. ``first`` < ``second`` (normalized), so a pair is stored once."""

    project = models.ForeignKey(
        "projects.Project", on_delete=models.CASCADE, related_name="term_distinctions"
    )
    first = models.CharField(max_length=60)
    second = models.CharField(max_length=60)
    reason = models.CharField(max_length=500, blank=True)
    attempt = models.ForeignKey(
        RegistryAttempt,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="the registry attempt whose wrong verdict taught it",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["first", "second"]
        constraints = [
            models.UniqueConstraint(fields=["project", "first", "second"], name="memory_distinction_unique"),
            models.CheckConstraint(
                condition=models.Q(first__lt=models.F("second")), name="memory_distinction_sorted"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.first} ≠ {self.second}"


class MergeBar(models.Model):
    """A project's *merge bar*: the identity slack its Info Registry merges with on its own
    (``RegistryParams.identity_slack``, ``memory.comparator.identity``) — at most this many content
    words of two statements left unexplained by the other. One row per project at most; no row means
    the code default (``DEFAULT_PARAMS.identity_slack``). Read it with ``selectors.registry_params``,
    set it with ``services.merge_bar_set``."""

    project = models.OneToOneField("projects.Project", on_delete=models.CASCADE, related_name="merge_bar")
    identity_slack = models.PositiveSmallIntegerField(
        validators=[MinValueValidator(0), MaxValueValidator(MAX_SLACK)],
        help_text="content words two statements may leave unexplained for an automatic merge",
    )
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(identity_slack__lte=MAX_SLACK), name="memory_merge_bar_range"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project_id}: at most {self.identity_slack} unexplained words"
