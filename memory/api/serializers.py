"""Input and output of ``POST /api/v1/memory`` (write a fact) and ``GET /api/v1/memory`` (read)."""

from __future__ import annotations

from rest_framework import serializers

from memory.canonical import InfoType
from memory.models import EpisodicMemory, MemoryFlag, RegistryAttempt, Scope, Signal

MAX_TEXT_FIELD = 20_000  # the service refuses facts over ARG_MEMORY_MAX_FACT_CHARS with its own rule


class MemoryWriteSerializer(serializers.Serializer):
    """A memorizable fact. Domain rules (scope and its subject, size, labels, node, PII in GLOBAL) are
    the service's: they come back as 400 with the rule and the field they concern."""

    text = serializers.CharField(max_length=MAX_TEXT_FIELD, allow_blank=True, trim_whitespace=False)
    scope = serializers.CharField(
        max_length=16, required=False, allow_blank=True, help_text="USER | ORG | GLOBAL (required)"
    )
    info_type = serializers.ChoiceField(
        choices=list(InfoType.ALL), required=False, help_text="classified from the text when omitted"
    )
    user_id = serializers.CharField(max_length=200, required=False, allow_blank=True, help_text="USER scope")
    org_id = serializers.CharField(max_length=200, required=False, allow_blank=True, help_text="ORG scope")
    session_id = serializers.CharField(max_length=200, required=False, allow_blank=True)
    request_id = serializers.CharField(max_length=64, required=False, allow_blank=True)
    labels = serializers.ListField(
        child=serializers.CharField(max_length=16),
        required=False,
        max_length=16,
        help_text="validated LabelIDs (ACTIVE); none → episodic only, MISSING_LABEL_CANDIDATE",
    )
    primary_label = serializers.CharField(max_length=16, required=False, allow_blank=True)
    node_id = serializers.CharField(max_length=128, required=False, allow_blank=True)
    signal = serializers.ChoiceField(
        choices=Signal.choices,
        required=False,
        default=Signal.WEAK,
        help_text="strong only for an explicit, reliable confirmation",
    )
    corrects = serializers.IntegerField(
        required=False, min_value=1, help_text="id of the memory this corrects"
    )
    occurred_at = serializers.DateTimeField(required=False)


class MemoryItemSerializer(serializers.ModelSerializer):
    info_unit = serializers.IntegerField(source="info_unit_id", allow_null=True)
    corrects = serializers.IntegerField(source="corrects_id", allow_null=True)
    scope = serializers.ChoiceField(choices=Scope.choices)
    flags = serializers.ListField(child=serializers.ChoiceField(choices=MemoryFlag.choices))
    pii = serializers.ListField(child=serializers.DictField(), help_text="types scrubbed, never values")
    label_ids = serializers.ListField(child=serializers.CharField())
    node_ids_current = serializers.ListField(child=serializers.CharField())

    class Meta:
        model = EpisodicMemory
        fields = [
            "id",
            "scope",
            "subject",
            "user_id",
            "org_id",
            "session_id",
            "request_id",
            "info_type",
            "text",
            "pii",
            "node_id",
            "node_ids_current",
            "label_ids",
            "label_signature",
            "label_path_current",
            "flags",
            "semantic_candidate",
            "signal",
            "source",
            "info_unit",
            "corrects",
            "occurred_at",
            "created_at",
        ]
        read_only_fields = fields


class CandidateSerializer(serializers.Serializer):
    unit_id = serializers.IntegerField()
    cosine = serializers.FloatField()
    simhash_distance = serializers.IntegerField()
    via = serializers.CharField()
    verdict = serializers.CharField(required=False)
    reasons = serializers.ListField(child=serializers.CharField(), required=False)


class RegistryResultSerializer(serializers.Serializer):
    attempt_id = serializers.IntegerField()
    info_key = serializers.CharField()
    label_path_current = serializers.CharField()
    decision = serializers.ChoiceField(choices=RegistryAttempt.Decision.choices)
    method = serializers.CharField()
    unit_id = serializers.IntegerField(allow_null=True)
    candidate_unit_id = serializers.IntegerField(allow_null=True)
    top_k = CandidateSerializer(many=True)
    reasons = serializers.ListField(child=serializers.CharField())


class MemoryWriteResponseSerializer(serializers.Serializer):
    memory = MemoryItemSerializer()
    registry = RegistryResultSerializer(allow_null=True, help_text="null when episodic only")
    flags = serializers.ListField(child=serializers.CharField())
    pii = serializers.ListField(child=serializers.CharField(), help_text="PII types scrubbed")


class MemoryHitSerializer(serializers.Serializer):
    memory = MemoryItemSerializer()
    score = serializers.FloatField()
    similarity = serializers.FloatField()
    graph_score = serializers.FloatField()
    via = serializers.CharField(help_text="vector | graph (multi-hop expansion)")
    redirected = serializers.BooleanField(help_text="its node was split or merged: see node_ids_current")


class MemoryReadResponseSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    results = MemoryHitSerializer(many=True)


class MergeBarSerializer(serializers.Serializer):
    """The project's merge bar: how many content words two statements may leave unexplained for the
    Info Registry to merge them on its own (``identity_slack``), and the code default."""

    identity_slack = serializers.IntegerField(min_value=0)
    default = serializers.IntegerField(min_value=0)
