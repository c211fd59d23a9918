"""Proposals of the offline refinement loop (ARG §3) and the decisions taken on them.

A **Proposal** is one typed structural change (split, merge, new edge, edge weight, label, node…)
expressed as a *changeset* against the active release, carrying the generator's evidence, the replay
measurements (§3 step C) and its confidence bin (§3 step D). HIGH_CONF proposals whose gain rests on
confirmed outcomes are auto-committed; MID_CONF ones wait in the human review queue; LOW_CONF ones go
to the backlog. Every transition is a :class:`ProposalDecision` row (who, when, why).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ProposalKind(models.TextChoices):
    """What a proposal changes (§3 step B)."""

    SPLIT = "SPLIT"  # one node serves several intents: children first, parent → DEPRECATED
    MERGE = "MERGE"  # duplicate nodes A + B → new node AB; A, B → DEPRECATED + aliases to AB
    EDGE_ADD = "EDGE_ADD"  # co-activation / detour shortcut
    EDGE_WEIGHT = "EDGE_WEIGHT"  # a weight learned from outcomes
    EDGE_INHIBIT = "EDGE_INHIBIT"  # stale or harmful edge → inhibitory / removed
    LABEL_ADD = "LABEL_ADD"  # child-label-first taxonomy addition (CANDIDATE → SHADOW)
    LABEL_PROMOTE = "LABEL_PROMOTE"  # SHADOW → ACTIVE after shadow evaluation
    NODE_ADD = "NODE_ADD"  # new semantic node from episodic memory (InfoUnit-first)
    OBSOLESCENCE = "OBSOLESCENCE"  # persistent failures or no traffic over a window → DEPRECATED
    NODE_REMOVE = "NODE_REMOVE"  # DEPRECATED past its observation window, no alias traffic → REMOVED
    LABEL_REATTACH = "LABEL_REATTACH"  # a label's traffic sits closer to another cluster → moved there


class ConfidenceBin(models.TextChoices):
    """§3 step D bins."""

    HIGH_CONF = "HIGH_CONF"
    MID_CONF = "MID_CONF"
    LOW_CONF = "LOW_CONF"


class ProposalStatus(models.TextChoices):
    """Lifecycle of a proposal.

    NEW (generated, not yet replayed) → SCORED → one of: AUTO_COMMITTED / PENDING_REVIEW (MID_CONF) /
    BACKLOG (LOW_CONF). A reviewer moves PENDING_REVIEW to APPROVED, REJECTED, CHANGES_REQUESTED or
    DEFERRED; APPROVED and AUTO_COMMITTED become APPLIED once the lifecycle application published them
    (``applied_release``). FAILED records an application that was refused (integrity checks).
    SUPERSEDED marks a proposal replaced by a newer one for the same change.
    """

    NEW = "NEW"
    SCORED = "SCORED"
    PENDING_REVIEW = "PENDING_REVIEW"
    BACKLOG = "BACKLOG"
    AUTO_COMMITTED = "AUTO_COMMITTED"
    APPROVED = "APPROVED"
    CHANGES_REQUESTED = "CHANGES_REQUESTED"
    DEFERRED = "DEFERRED"
    REJECTED = "REJECTED"
    APPLIED = "APPLIED"
    FAILED = "FAILED"
    SUPERSEDED = "SUPERSEDED"


class OfflineRun(models.Model):
    """One run of the offline loop (a "night"): steps A–E over a window of logs for one project."""

    class Status(models.TextChoices):
        RUNNING = "RUNNING"
        SUCCEEDED = "SUCCEEDED"
        FAILED = "FAILED"

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="offline_runs")
    job = models.ForeignKey(
        "arg_platform.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    base_release = models.ForeignKey(
        "ontology.Release", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    published_release = models.ForeignKey(
        "ontology.Release", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    window_start = models.DateTimeField(null=True, blank=True)
    window_end = models.DateTimeField(null=True, blank=True)
    params = models.JSONField(default=dict, blank=True, help_text="thresholds, seeds, sample sizes used")
    stats = models.JSONField(default=dict, blank=True, help_text="per-step counts and timings")
    idempotency_key = models.CharField(max_length=128, blank=True, default="")
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "idempotency_key"],
                condition=~models.Q(idempotency_key=""),
                name="offlinerun_unique_idempotency_key",
            )
        ]

    def __str__(self) -> str:
        return f"offline run #{self.pk} {self.status}"


class Proposal(models.Model):
    """One candidate structural change, scored by replay and binned (§3 steps B–D).

    ``changeset`` is a JSON list of typed operations (``{"op": "node_add", ...}``; see
    ``review/changeset.py``) against ``base_release``. ``fingerprint`` is a content hash of kind +
    canonical changeset: a REJECTED fingerprint is not proposed again unchanged. ``target_keys`` lists
    the node keys and LabelIDs the change touches (for filtering and for affected-memory lookups).
    """

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="proposals")
    run = models.ForeignKey(
        OfflineRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="proposals"
    )
    kind = models.CharField(max_length=16, choices=ProposalKind.choices, db_index=True)
    status = models.CharField(
        max_length=20, choices=ProposalStatus.choices, default=ProposalStatus.NEW, db_index=True
    )
    confidence_bin = models.CharField(max_length=10, choices=ConfidenceBin.choices, blank=True, db_index=True)
    title = models.CharField(max_length=200)
    summary = models.TextField(blank=True)
    fingerprint = models.CharField(max_length=64, db_index=True)
    base_release = models.ForeignKey(
        "ontology.Release", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    changeset = models.JSONField(default=list, help_text="typed operations against base_release")
    target_keys = models.JSONField(default=list, blank=True, help_text="node keys and LabelIDs touched")
    cluster_key = models.CharField(max_length=63, blank=True, db_index=True)
    evidence = models.JSONField(default=dict, blank=True, help_text="generator evidence + log references")
    generator = models.JSONField(default=dict, blank=True, help_text="generator name, version, parameters")
    replay = models.JSONField(
        default=dict, blank=True, help_text="replay metrics before/after, silence penalty, geDIG gauge"
    )
    score = models.FloatField(null=True, blank=True, help_text="Score(C) from replay")
    assignee = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_reason = models.CharField(max_length=1000, blank=True)
    applied_release = models.ForeignKey(
        "ontology.Release", null=True, blank=True, on_delete=models.SET_NULL, related_name="applied_proposals"
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["project", "status", "confidence_bin"], name="proposal_queue_idx")]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} {self.status}"


class ProposalDecision(models.Model):
    """An audited transition of one proposal: who decided what, when and why (reversible by rollback)."""

    class Action(models.TextChoices):
        AUTO_COMMIT = "AUTO_COMMIT"
        APPROVE = "APPROVE"
        REJECT = "REJECT"
        REQUEST_CHANGES = "REQUEST_CHANGES"
        EDIT = "EDIT"
        DEFER = "DEFER"
        CLAIM = "CLAIM"
        APPLY = "APPLY"

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="decisions")
    action = models.CharField(max_length=20, choices=Action.choices)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    actor_name = models.CharField(max_length=150, blank=True, help_text="'system' for the offline loop")
    reason = models.CharField(max_length=1000, blank=True)
    status_before = models.CharField(max_length=20, blank=True)
    status_after = models.CharField(max_length=20, blank=True)
    changes = models.JSONField(default=dict, blank=True, help_text="edits made (request changes / edit)")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.action} on proposal #{self.proposal_id}"
