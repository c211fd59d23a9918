"""Input and output serializers of the taxonomy API (no logic: services do the work)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from arg_platform.handler_targets import audit_values_shown
from arg_platform.models import AuditEvent
from arg_platform.patterns import MAX_PATTERN_CHARS
from taxonomy.models import Cluster, ContextTypology, Label, LabelIncompatibility, LabelStatus, Policy, Role
from taxonomy.services import policy_as_data, typology_as_data

LIST_OF_TEXT = serializers.ListField(
    child=serializers.CharField(max_length=500, allow_blank=False), required=False, max_length=500
)


class ClusterSerializer(serializers.ModelSerializer):
    label_count = serializers.IntegerField(read_only=True, source="labels.count")

    class Meta:
        model = Cluster
        fields = ["key", "name", "description", "label_count"]


class ClusterInputSerializer(serializers.Serializer):
    key = serializers.CharField(max_length=63)
    name = serializers.CharField(max_length=120)
    description = serializers.CharField(max_length=2000, required=False, allow_blank=True, default="")


class ClusterUpdateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=120)
    description = serializers.CharField(max_length=2000, required=False, allow_blank=True, default="")


class LabelSerializer(serializers.ModelSerializer):
    cluster = serializers.CharField(source="cluster.key")
    # a declared field, not the Field.parent attribute the DRF stubs see on a serializer
    parent = serializers.SerializerMethodField()  # type: ignore[assignment]
    status_changed_by = serializers.CharField(source="status_changed_by.username", default=None)

    class Meta:
        model = Label
        fields = [
            "label_id",
            "name",
            "description",
            "cluster",
            "parent",
            "status",
            "status_changed_at",
            "status_changed_by",
            "status_reason",
            "synonyms",
            "examples",
            "path",
            "depth",
            "updated_at",
        ]

    def get_parent(self, obj: Label) -> str | None:
        return obj.parent.label_id if obj.parent is not None else None


class LabelCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=80)
    cluster = serializers.CharField(max_length=63)
    # a declared field, not the Field.parent attribute the DRF stubs see on a serializer
    parent = serializers.CharField(max_length=16, required=False, allow_null=True, default=None)  # type: ignore[assignment]
    description = serializers.CharField(max_length=2000, required=False, allow_blank=True, default="")
    synonyms = serializers.ListField(
        child=serializers.CharField(max_length=120), required=False, default=list, max_length=50
    )
    examples = serializers.ListField(
        child=serializers.CharField(max_length=500), required=False, default=list, max_length=500
    )
    # The full status enum keeps one schema component; label_create refuses DEPRECATED by rule.
    status = serializers.ChoiceField(choices=LabelStatus.choices, default=LabelStatus.ACTIVE)
    accept_similar = serializers.BooleanField(
        default=False,
        help_text="Save synonyms/examples that are very close to another label's terms (the 201 lists "
        "them under `warnings`); without it such a write is a 400 `taxonomy.term_similar`. A term "
        "identical to another label's is a 400 `taxonomy.term_duplicate` either way.",
    )


class LabelUpdateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=80, required=False)
    description = serializers.CharField(max_length=2000, required=False, allow_blank=True)
    synonyms = serializers.ListField(
        child=serializers.CharField(max_length=120), required=False, max_length=50
    )
    examples = serializers.ListField(
        child=serializers.CharField(max_length=500), required=False, max_length=500
    )
    reason = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")
    accept_similar = serializers.BooleanField(
        default=False,
        help_text="Save new synonyms/examples that are very close to another label's terms (the 200 "
        "lists them under `warnings`); without it such a write is a 400 `taxonomy.term_similar`. A "
        "term identical to another label's is a 400 `taxonomy.term_duplicate` either way.",
    )


class TermConflictSerializer(serializers.Serializer):
    """A new synonym or example and the closest term of another label (``taxonomy.term_guard``)."""

    rule = serializers.ChoiceField(choices=["taxonomy.term_duplicate", "taxonomy.term_similar"])
    field = serializers.ChoiceField(choices=["synonyms", "examples"], help_text="where the new term goes")
    text = serializers.CharField(help_text="the new term")
    label_id = serializers.CharField(help_text="the other label")
    label_name = serializers.CharField()
    kind = serializers.ChoiceField(choices=["name", "synonym", "example"], help_text="the other term's kind")
    other_text = serializers.CharField()
    similarity = serializers.FloatField(help_text="embedding cosine; 1.0 when identical")
    identical = serializers.BooleanField(help_text="equal after case, punctuation and spacing are ignored")
    message = serializers.CharField()


class LabelWriteSerializer(LabelSerializer):
    """A label after a create or update, with the very close terms the writer confirmed."""

    warnings = TermConflictSerializer(many=True, read_only=True)

    class Meta(LabelSerializer.Meta):
        fields = [*LabelSerializer.Meta.fields, "warnings"]


class LabelMoveSerializer(serializers.Serializer):
    # a declared field, not the Field.parent attribute the DRF stubs see on a serializer
    parent = serializers.CharField(max_length=16, allow_null=True, required=False, default=None)  # type: ignore[assignment]
    cluster = serializers.CharField(max_length=63, allow_null=True, required=False, default=None)
    reason = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")


class LabelStatusSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=LabelStatus.choices)
    reason = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")


class IncompatibilitySerializer(serializers.ModelSerializer):
    id = serializers.IntegerField(read_only=True)
    labels = serializers.SerializerMethodField()

    class Meta:
        model = LabelIncompatibility
        fields = ["id", "labels", "reason", "created_at"]

    def get_labels(self, obj: LabelIncompatibility) -> list[str]:
        return [obj.label_a.label_id, obj.label_b.label_id]


class IncompatibilityInputSerializer(serializers.Serializer):
    labels = serializers.ListField(child=serializers.CharField(max_length=16), min_length=2, max_length=2)
    reason = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")


class WeightsSerializer(serializers.Serializer):
    alpha = serializers.FloatField(min_value=0, max_value=1, required=False)
    beta = serializers.FloatField(min_value=0, max_value=1, required=False)
    gamma = serializers.FloatField(min_value=0, max_value=1, required=False)
    delta = serializers.FloatField(min_value=0, max_value=1, required=False)
    epsilon = serializers.FloatField(min_value=0, max_value=1, required=False)


class TypologySerializer(serializers.Serializer):
    """A context typology in its data form (the same shape as in knowledge packs)."""

    key = serializers.CharField(max_length=63)
    name = serializers.CharField(max_length=120)
    description = serializers.CharField(max_length=2000, required=False, allow_blank=True)
    access_constraints = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField(max_length=200)), required=False
    )
    preferred_node_types = serializers.ListField(child=serializers.CharField(max_length=32), required=False)
    complexity_budget = serializers.IntegerField(min_value=1, max_value=10, required=False)
    max_depth = serializers.IntegerField(min_value=1, max_value=20, required=False)
    max_hops = serializers.IntegerField(min_value=1, max_value=20, required=False)
    beam_width = serializers.IntegerField(min_value=1, max_value=32, required=False)
    response_style = serializers.CharField(max_length=16, required=False)
    fast_path_eligible = serializers.BooleanField(required=False)
    weights = WeightsSerializer(required=False)
    is_default = serializers.BooleanField(required=False)

    def to_representation(self, instance: object) -> dict[str, object]:
        if isinstance(instance, ContextTypology):
            return typology_as_data(instance)
        return super().to_representation(instance)


class SensitiveTopicSerializer(serializers.Serializer):
    topic = serializers.CharField(max_length=120)
    terms = serializers.ListField(child=serializers.CharField(max_length=200), max_length=200)
    action = serializers.ChoiceField(choices=["RESTRICT", "REFOCUS", "BLOCK"], default="REFOCUS")


class PolicySerializer(serializers.Serializer):
    """A policy in its data form (the same shape as in knowledge packs)."""

    key = serializers.CharField(max_length=63)
    name = serializers.CharField(max_length=120)
    description = serializers.CharField(max_length=2000, required=False, allow_blank=True)
    allowed_labels = serializers.ListField(
        child=serializers.CharField(max_length=16), required=False, max_length=500
    )
    forbidden_labels = serializers.ListField(
        child=serializers.CharField(max_length=16), required=False, max_length=500
    )
    allowed_node_types = serializers.ListField(child=serializers.CharField(max_length=32), required=False)
    forbidden_node_types = serializers.ListField(child=serializers.CharField(max_length=32), required=False)
    max_hops = serializers.IntegerField(min_value=1, max_value=20, required=False, allow_null=True)
    blocked_terms = serializers.ListField(
        child=serializers.CharField(max_length=200), required=False, max_length=500
    )
    blocked_patterns = serializers.ListField(
        # a transport bound only: the validator refuses a pattern over MAX_PATTERN_CHARS, naming it
        child=serializers.CharField(max_length=10 * MAX_PATTERN_CHARS),
        required=False,
        max_length=500,
        help_text=f"RE2 regular expressions, at most {MAX_PATTERN_CHARS} characters each",
    )
    sensitive_topics = SensitiveTopicSerializer(many=True, required=False)
    scope_statement = serializers.CharField(max_length=2000, required=False, allow_blank=True)
    refusal_template = serializers.CharField(max_length=2000, required=False, allow_blank=True)
    refocus_template = serializers.CharField(max_length=2000, required=False, allow_blank=True)
    language_messages = serializers.DictField(
        child=serializers.CharField(max_length=2000),
        required=False,
        help_text="ISO 639-1 code or 'default' → the answer to a prompt in a language the release does not "
        "cover; '{languages}' is replaced by the names of the languages it covers",
    )
    memory_scopes = serializers.ListField(child=serializers.CharField(max_length=8), required=False)

    def to_representation(self, instance: object) -> dict[str, object]:
        if isinstance(instance, Policy):
            return policy_as_data(instance)
        return super().to_representation(instance)


class RoleSerializer(serializers.ModelSerializer):
    policy = serializers.CharField(source="policy.key")
    default_typology = serializers.CharField(source="default_typology.key", allow_null=True, default=None)

    class Meta:
        model = Role
        fields = ["key", "name", "policy", "default_typology"]


class RoleInputSerializer(serializers.Serializer):
    key = serializers.CharField(max_length=63)
    name = serializers.CharField(max_length=120)
    policy = serializers.CharField(max_length=63)
    default_typology = serializers.CharField(max_length=63, required=False, allow_null=True, default=None)


class AuditEventSerializer(serializers.ModelSerializer):
    class Meta:
        model = AuditEvent
        fields = [
            "id",
            "created_at",
            "actor_name",
            "action",
            "object_type",
            "object_key",
            "before",
            "after",
            "reason",
            "request_id",
        ]

    def to_representation(self, instance: AuditEvent) -> dict[str, Any]:
        data = dict(super().to_representation(instance))
        curator = bool(self.context.get("curator"))
        data["before"] = audit_values_shown(data["before"] or {}, curator=curator)
        data["after"] = audit_values_shown(data["after"] or {}, curator=curator)
        return data
