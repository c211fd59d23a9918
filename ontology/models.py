"""Tables of the ``sql`` graph backend: the ontology graph as node / edge / attachment / alias rows.

This is an "edge table" applied to the ontology: one typed, weighted edge row per
(source, target, type), no self-loops, indexed by source, target and type. Every row belongs to one
project. Models are thin; every write goes through the graph store
(``ontology.store.sql_backend``), which runs the graph validator first.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from arg_platform.vocabulary import EdgeType, NodeStatus, NodeType, RiskLevel


class OntologyNode(models.Model):
    """An ontology node (ARG §0.1): a leaf carrying operational truth — title, chunk, embedding, type,
    risk level — reached through its attachments to labels and clusters.

    Three texts, three readers: ``chunk`` is the client text (answers show and cite only it),
    ``staff_notes`` instruct staff, ``description`` tells curators what the node is or does.

    ``node_id`` is the stable id every other structure references (edges, aliases, memory, logs).
    ``status`` follows the lifecycle ACTIVE → DEPRECATED → REMOVED (§3.5) with the reason and date of
    the last move. ``preconditions``, ``parameters`` and ``handler`` describe Actions.
    ``products`` lists the product keys the node is specific to (empty: it holds for every product); a
    request naming another product in ``context.product`` is not routed to it.
    ``embedding`` holds float64 values packed little-endian (``array("d")``), or nothing.
    """

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="ontology_nodes")
    node_id = models.CharField(max_length=128)
    type = models.CharField(max_length=32, choices=[(t.value, t.value) for t in NodeType])
    title = models.CharField(max_length=200)
    chunk = models.TextField(
        max_length=10_000, blank=True, help_text="client text: the only text an answer may show the asker"
    )
    staff_notes = models.TextField(
        max_length=10_000, blank=True, default="", help_text="instructions for staff; never shown to a client"
    )
    description = models.TextField(
        max_length=2_000, blank=True, default="", help_text="what the node is or does, for curators"
    )
    risk = models.CharField(
        max_length=8, choices=[(r.value, r.value) for r in RiskLevel], default=RiskLevel.LOW
    )
    status = models.CharField(
        max_length=12, choices=[(s.value, s.value) for s in NodeStatus], default=NodeStatus.ACTIVE
    )
    status_reason = models.CharField(max_length=500, blank=True)
    status_changed_at = models.DateTimeField(null=True, blank=True)
    preconditions = models.JSONField(
        default=list, blank=True, help_text="checks that must hold before an Action"
    )
    parameters = models.JSONField(
        default=list, blank=True, help_text="[{name, type, required, description}] an Action needs"
    )
    handler = models.CharField(
        max_length=200, blank=True, help_text='registered handler, e.g. "python:billing.x"'
    )
    products = models.JSONField(
        default=list, blank=True, help_text="product keys the node is specific to; empty: every product"
    )
    embedding = models.BinaryField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["node_id"]
        constraints = [models.UniqueConstraint(fields=["project", "node_id"], name="ontology_node_unique_id")]
        indexes = [
            models.Index(fields=["project", "type"], name="ontology_node_type_idx"),
            models.Index(fields=["project", "status"], name="ontology_node_status_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.node_id} ({self.type})"


class OntologyEdge(models.Model):
    """A typed directed edge — the "movement grammar" between two nodes of one project.

    ``weight`` is in [-1, 1] (a negative weight is inhibitory), ``semantics`` says in words what the
    movement means. At most one edge per (source, target, type); never a self-loop.
    """

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="ontology_edges")
    source = models.ForeignKey(OntologyNode, on_delete=models.CASCADE, related_name="out_edges")
    target = models.ForeignKey(OntologyNode, on_delete=models.CASCADE, related_name="in_edges")
    type = models.CharField(max_length=32, choices=[(t.value, t.value) for t in EdgeType])
    weight = models.FloatField(default=1.0)
    semantics = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["source", "target", "type"], name="ontology_edge_unique"),
            models.CheckConstraint(
                condition=~models.Q(source=models.F("target")), name="ontology_edge_no_self_loop"
            ),
        ]
        indexes = [
            models.Index(fields=["project", "type"], name="ontology_edge_type_idx"),
            models.Index(fields=["source", "type"], name="ontology_edge_source_type_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.source_id} -[{self.type}]-> {self.target_id}"


class NodeLabel(models.Model):
    """A node ↔ label attachment, by the label's stable LabelID (not a foreign key: LabelIDs are the
    contract between the taxonomy and the graph, and survive renames and moves of the label)."""

    node = models.ForeignKey(OntologyNode, on_delete=models.CASCADE, related_name="label_links")
    label_id = models.CharField(max_length=16)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["node", "label_id"], name="ontology_node_label_unique")
        ]
        indexes = [models.Index(fields=["label_id"], name="ontology_node_label_idx")]

    def __str__(self) -> str:
        return f"{self.node_id} ↔ {self.label_id}"


class NodeCluster(models.Model):
    """A node ↔ cluster attachment, by the cluster's stable key."""

    node = models.ForeignKey(OntologyNode, on_delete=models.CASCADE, related_name="cluster_links")
    cluster_key = models.CharField(max_length=63)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["node", "cluster_key"], name="ontology_node_cluster_unique")
        ]
        indexes = [models.Index(fields=["cluster_key"], name="ontology_node_cluster_idx")]

    def __str__(self) -> str:
        return f"{self.node_id} ↔ {self.cluster_key}"


class NodeAlias(models.Model):
    """One arrow of the split redirection / alias table A → {B, C} (ARG §3.5.5).

    When node A is split into B and C (or merged into AB), A keeps its id as DEPRECATED or REMOVED and
    the table says where it lives on; MemoryRead follows it so that a memory pointing at A is
    redirected instead of orphaned. One row per (source, target), in the order the targets were given.
    """

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="ontology_aliases")
    source = models.CharField(max_length=128, help_text="node_id of the split or merged node")
    target = models.CharField(max_length=128, help_text="node_id it lives on in")
    reason = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["source", "id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "source", "target"], name="ontology_alias_unique"),
            models.CheckConstraint(
                condition=~models.Q(source=models.F("target")), name="ontology_alias_not_self"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.source} → {self.target}"


class Release(models.Model):
    """A versioned, frozen release of a project's knowledge: what clients are served, never edited.

    Publishing freezes taxonomy + graph + aliases + structural signals + indexes into a bundle under
    ``version`` with a ``checksum``; exactly one release per project is active and the online path
    serves from it. Rolling back re-activates an earlier release. Releases are never edited.

    Lineage: ``parent`` is the release that was active when this one was built and ``source`` says what
    it froze — the expert draft (an admin's publication), or ``parent`` + the changesets of the
    proposals whose ``applied_release`` it is (an approval, the nightly auto-commit). ``content_digest``
    identifies the curated knowledge it froze (``ontology.releases.knowledge_digest``), so publishing
    a draft identical to the active release is recognised as a no-op.
    """

    class Source(models.TextChoices):
        DRAFT = "DRAFT", "draft publication"
        CHANGESETS = "CHANGESETS", "parent + approved changesets"

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="releases")
    version = models.PositiveIntegerField()
    checksum = models.CharField(max_length=64)
    content_digest = models.CharField(max_length=64, blank=True, default="")
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.DRAFT)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children"
    )
    is_active = models.BooleanField(default=False)
    knowledge_revision = models.PositiveIntegerField(
        help_text="the draft revision whose content this release equals (0: none, e.g. built beside a draft)"
    )
    notes = models.CharField(max_length=500, blank=True)
    counts = models.JSONField(default=dict, blank=True)
    ask_threshold = models.JSONField(
        default=dict,
        blank=True,
        help_text="the ask threshold in force, its source and held-out curve (ontology.ask_threshold)",
    )
    languages = models.JSONField(
        default=list,
        blank=True,
        help_text="ISO 639-1 codes of the languages its label examples are written in",
    )
    timings = models.JSONField(default=dict, blank=True, help_text="seconds spent per publication stage")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    job = models.OneToOneField(
        "arg_platform.Job",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="release",
        help_text="the job that published it (a retried job finds its release here and publishes once)",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    activated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-version"]
        constraints = [
            models.UniqueConstraint(fields=["project", "version"], name="release_unique_version"),
            models.UniqueConstraint(
                fields=["project"], condition=models.Q(is_active=True), name="release_one_active_per_project"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project_id} v{self.version}{' (active)' if self.is_active else ''}"


RELEASE_SOURCE_CHOICES = Release.Source.choices  # named for the OpenAPI schema (ENUM_NAME_OVERRIDES)


class ReleaseBundle(models.Model):
    """The frozen content of a release: one ``.npz`` blob (graph columns, matrices, JSON documents)."""

    release = models.OneToOneField(Release, on_delete=models.CASCADE, related_name="bundle")
    blob = models.BinaryField()
    size_bytes = models.PositiveBigIntegerField(default=0)

    def __str__(self) -> str:
        return f"bundle of release {self.release_id} ({self.size_bytes} bytes)"


class AskThresholdOverride(models.Model):
    """A curator's ask threshold for the project's draft (``ontology.ask_threshold``): it replaces the
    calibrated one in every release published after it is set; no row means "calibrated"."""

    project = models.OneToOneField(
        "projects.Project", on_delete=models.CASCADE, related_name="ask_threshold_override"
    )
    value = models.FloatField(help_text="the confidence below which a request is asked about, in [0, 1)")
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.project_id}: ask below {self.value}"
