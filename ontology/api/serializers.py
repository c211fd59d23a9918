"""Serializers of the ontology API (nodes, edges, aliases, releases)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from arg_platform.vocabulary import EDGE_TYPE_CHOICES, NODE_STATUS_CHOICES, NODE_TYPE_CHOICES, RiskLevel
from ontology.ask_threshold import threshold_in_force
from ontology.models import Release
from ontology.releases import release_snapshot


class ParameterSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    type = serializers.CharField(max_length=32, default="string")
    # a declared field, not the Field.required attribute the DRF stubs see on a serializer
    required = serializers.BooleanField(default=True)  # type: ignore[assignment]
    description = serializers.CharField(max_length=500, allow_blank=True, default="")
    pattern = serializers.CharField(
        max_length=300, required=False, help_text="identifier/string: a regular expression values match"
    )
    values = serializers.ListField(
        child=serializers.CharField(max_length=100), required=False, max_length=100, help_text="enum values"
    )
    synonyms = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField(max_length=100), max_length=50),
        required=False,
        help_text="enum: other words for a value, {value: [word, …]}",
    )
    # a declared field, not the Field.source attribute the DRF stubs see on a serializer
    source = serializers.ChoiceField(  # type: ignore[assignment]
        choices=["prompt", "context"],
        required=False,
        help_text="prompt: the user may give it (default); context: only the calling application gives it",
    )


class NodeSerializer(serializers.Serializer):
    """An ontology node (draft or release) in the knowledge-pack shape."""

    node_id = serializers.CharField(max_length=128)
    type = serializers.ChoiceField(choices=NODE_TYPE_CHOICES)
    title = serializers.CharField(max_length=200)
    chunk = serializers.CharField(
        max_length=10_000,
        allow_blank=True,
        default="",
        help_text="client text: what an answer may show the asker (the only text answers use)",
    )
    staff_notes = serializers.CharField(
        max_length=10_000,
        allow_blank=True,
        default="",
        help_text="instructions for staff; never in an answer, shown to curators and reviewers only",
    )
    description = serializers.CharField(
        max_length=2_000,
        allow_blank=True,
        default="",
        help_text="what the node is or does, for curators; never in an answer",
    )
    risk = serializers.ChoiceField(choices=[r.value for r in RiskLevel], default="low")
    status = serializers.CharField(read_only=True)
    status_reason = serializers.CharField(read_only=True)
    labels = serializers.ListField(child=serializers.CharField(max_length=16), default=list, max_length=50)
    clusters = serializers.ListField(child=serializers.CharField(max_length=63), default=list, max_length=20)
    products = serializers.ListField(
        child=serializers.CharField(max_length=63),
        default=list,
        max_length=20,
        help_text="product keys the node is specific to; empty: every product (context.product narrows routing)",
    )
    preconditions = serializers.ListField(
        child=serializers.CharField(max_length=500), default=list, max_length=50
    )
    parameters = ParameterSerializer(many=True, default=list)
    handler = serializers.CharField(max_length=200, allow_blank=True, default="")


class NodeSavedSerializer(NodeSerializer):
    """A node as saved, with the validator's warnings about it (it was saved anyway)."""

    warnings = serializers.ListField(
        child=serializers.DictField(),
        read_only=True,
        help_text="e.g. graph.client_text_staff_voice: a client-text sentence reads like staff instructions",
    )


class NodeUpdateSerializer(serializers.Serializer):
    type = serializers.ChoiceField(choices=NODE_TYPE_CHOICES, required=False)
    title = serializers.CharField(max_length=200, required=False)
    chunk = serializers.CharField(max_length=10_000, allow_blank=True, required=False)
    staff_notes = serializers.CharField(max_length=10_000, allow_blank=True, required=False)
    description = serializers.CharField(max_length=2_000, allow_blank=True, required=False)
    risk = serializers.ChoiceField(choices=[r.value for r in RiskLevel], required=False)
    labels = serializers.ListField(child=serializers.CharField(max_length=16), required=False, max_length=50)
    clusters = serializers.ListField(
        child=serializers.CharField(max_length=63), required=False, max_length=20
    )
    products = serializers.ListField(
        child=serializers.CharField(max_length=63), required=False, max_length=20
    )
    preconditions = serializers.ListField(child=serializers.CharField(max_length=500), required=False)
    parameters = ParameterSerializer(many=True, required=False)
    handler = serializers.CharField(max_length=200, allow_blank=True, required=False)


class NodeStatusSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=NODE_STATUS_CHOICES)
    reason = serializers.CharField(max_length=500, allow_blank=True, default="")


class EdgeSerializer(serializers.Serializer):
    # a declared field, not the Field.source attribute the DRF stubs see on a serializer
    source = serializers.CharField(max_length=128)  # type: ignore[assignment]
    target = serializers.CharField(max_length=128)
    type = serializers.ChoiceField(choices=EDGE_TYPE_CHOICES)
    weight = serializers.FloatField(min_value=-1, max_value=1, default=1.0)
    semantics = serializers.CharField(max_length=500, allow_blank=True, default="")


class EdgeKeySerializer(serializers.Serializer):
    # a declared field, not the Field.source attribute the DRF stubs see on a serializer
    source = serializers.CharField(max_length=128)  # type: ignore[assignment]
    target = serializers.CharField(max_length=128)
    type = serializers.ChoiceField(choices=EDGE_TYPE_CHOICES)
    reason = serializers.CharField(max_length=500, allow_blank=True, default="")


class AliasSerializer(serializers.Serializer):
    # a declared field, not the Field.source attribute the DRF stubs see on a serializer
    source = serializers.CharField(max_length=128)  # type: ignore[assignment]
    targets = serializers.ListField(child=serializers.CharField(max_length=128), min_length=1, max_length=20)
    reason = serializers.CharField(max_length=500, allow_blank=True, default="")


class NeighbourhoodSerializer(serializers.Serializer):
    center = serializers.CharField()
    # a declared field, not the Field.source attribute the DRF stubs see on a serializer
    source = serializers.CharField(help_text="release vN or draft")  # type: ignore[assignment]
    nodes = NodeSerializer(many=True)
    edges = EdgeSerializer(many=True)


class AskCurvePointSerializer(serializers.Serializer):
    threshold = serializers.FloatField()
    coverage = serializers.FloatField(help_text="share of held-out in-scope examples answered")
    precision = serializers.FloatField(allow_null=True, help_text="share of the answered that are right")
    oos_recall = serializers.FloatField(
        required=False, help_text="share of held-out oos examples asked about (when the release has some)"
    )


class AskThresholdSerializer(serializers.Serializer):
    value = serializers.FloatField()
    source = serializers.ChoiceField(choices=["calibrated", "curator", "default"])  # type: ignore[assignment]  # a declared field, not Field.source
    calibrated = serializers.FloatField(allow_null=True)
    curve = AskCurvePointSerializer(many=True)


class ReleaseSerializer(serializers.ModelSerializer):
    """A release with its lineage: the parent version, what it froze, and the proposals it applied."""

    created_by = serializers.CharField(source="created_by.username", default=None)
    parent_version = serializers.IntegerField(source="parent.version", default=None)
    proposals = serializers.SerializerMethodField()
    ask_threshold = serializers.SerializerMethodField(
        help_text="read-only: the ask threshold in force in this release (below it a request is asked "
        "about): value, source (calibrated, curator or default), calibrated (the publication's value) "
        "and curve (per threshold: coverage, precision and, with oos examples, oos_recall on held-out "
        "examples). A curator changes it for the next publication on the Releases page"
    )

    class Meta:
        model = Release
        fields = [
            "version",
            "checksum",
            "content_digest",
            "source",
            "parent_version",
            "proposals",
            "is_active",
            "knowledge_revision",
            "notes",
            "counts",
            "languages",
            "ask_threshold",
            "timings",
            "created_by",
            "created_at",
            "activated_at",
        ]

    def get_proposals(self, release: Release) -> list[int]:
        return sorted(p.pk for p in release.applied_proposals.all())

    @extend_schema_field(AskThresholdSerializer)
    def get_ask_threshold(self, release: Release) -> dict[str, Any]:
        if release.ask_threshold:
            return dict(release.ask_threshold)
        # a release stored before releases recorded it: read its frozen documents
        return threshold_in_force(release_snapshot(release=release).documents)


class PublishSerializer(serializers.Serializer):
    notes = serializers.CharField(max_length=500, allow_blank=True, default="")
    draft_digest = serializers.CharField(
        max_length=64,
        allow_blank=True,
        default="",
        help_text="the digest of the draft you reviewed (GET releases/draft/): publication is refused if it moved",
    )


class ActivateSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=500, allow_blank=True, default="")


class ReleaseDiffSerializer(serializers.Serializer):
    old_version = serializers.IntegerField()
    new_version = serializers.IntegerField()
    labels_added = serializers.ListField(child=serializers.CharField())
    labels_removed = serializers.ListField(child=serializers.CharField())
    labels_changed = serializers.ListField(child=serializers.ListField())
    nodes_added = serializers.ListField(child=serializers.CharField())
    nodes_removed = serializers.ListField(child=serializers.CharField())
    nodes_changed = serializers.ListField(child=serializers.ListField())
    edges_added = serializers.ListField(child=serializers.ListField())
    edges_removed = serializers.ListField(child=serializers.ListField())
    edges_reweighted = serializers.ListField(child=serializers.ListField())
    aliases_added = serializers.ListField(child=serializers.CharField())
    aliases_changed = serializers.ListField(child=serializers.CharField())
    aliases_removed = serializers.ListField(child=serializers.CharField())
    clusters_changed = serializers.ListField(child=serializers.CharField())
    policies_changed = serializers.ListField(child=serializers.CharField())
    typologies_changed = serializers.ListField(child=serializers.CharField())
    roles_changed = serializers.ListField(child=serializers.CharField())
    incompatibilities_changed = serializers.BooleanField()
    distinct_terms_changed = serializers.BooleanField()


class DraftReviewSerializer(serializers.Serializer):
    active_version = serializers.IntegerField(allow_null=True)
    digest = serializers.CharField(help_text="send it back as draft_digest when publishing")
    unchanged = serializers.BooleanField(
        help_text="the draft equals the active release: publishing is a no-op"
    )
    violations = serializers.ListField(child=serializers.DictField(), help_text="the validator's refusals")
    warnings = serializers.ListField(
        child=serializers.DictField(),
        help_text="the validator's warnings (e.g. a client text that reads like staff instructions): "
        "publication goes ahead",
    )
    diff = ReleaseDiffSerializer()
