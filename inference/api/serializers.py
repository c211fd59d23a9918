"""Output of ``POST /api/v1/infer`` and input and output of ``POST /api/v1/feedback``; the body of
``/infer`` is read by ``inference.request_body`` (``InferRequestSerializer`` is re-exported for the schema)."""

from __future__ import annotations

from rest_framework import serializers

from inference.request_body import InferRequestSerializer

__all__ = ["InferRequestSerializer"]


class CitationSerializer(serializers.Serializer):
    node_id = serializers.CharField()
    title = serializers.CharField()
    excerpt = serializers.CharField()


class ActiveCheckSerializer(serializers.Serializer):
    kind = serializers.CharField()
    question = serializers.CharField()
    options = serializers.ListField(child=serializers.CharField())
    reason = serializers.CharField()


class OutcomeSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(
        choices=["ACTION", "INFO", "MEMORY", "CLARIFY", "REFOCUS", "REFUSE", "OUT_OF_SCOPE"]
    )
    answer = serializers.CharField()
    citations = CitationSerializer(many=True)
    action = serializers.DictField(allow_null=True)
    missing_parameters = serializers.ListField(child=serializers.CharField())
    c_info = serializers.FloatField(allow_null=True)
    info_status = serializers.CharField(allow_null=True)
    active_check = ActiveCheckSerializer(allow_null=True)
    response_style = serializers.ChoiceField(
        choices=["concise", "detailed", "step_by_step", "formal"],
        allow_null=True,
        help_text="the active context typology's response_style that shaped `answer` (Info answers take every "
        "style, Action and Clarify messages `formal` only); null when no style shaped it",
    )


class PathNodeSerializer(serializers.Serializer):
    node_id = serializers.CharField()
    title = serializers.CharField()
    type = serializers.CharField()


class InferResponseSerializer(serializers.Serializer):
    request_id = serializers.CharField()
    release = serializers.DictField()
    outcome = OutcomeSerializer()
    path = serializers.DictField(help_text="nodes and edges of the selected path (hidden under RESTRICT)")
    explanation = serializers.CharField()
    labels = serializers.DictField(child=serializers.FloatField(), help_text="L_final")
    confidence = serializers.FloatField(allow_null=True)
    flags = serializers.ListField(child=serializers.CharField())
    policy = serializers.DictField()
    timings_ms = serializers.DictField(child=serializers.FloatField())
    disambiguation = serializers.DictField(
        allow_null=True, help_text="a continuation: the request that asked, the chosen label_id and name"
    )


class FeedbackSerializer(serializers.Serializer):
    request_id = serializers.CharField(max_length=64)
    kind = serializers.ChoiceField(choices=["helpful", "disambiguation", "action_outcome"])
    helpful = serializers.BooleanField(required=False, allow_null=True, default=None)
    choice = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    action_succeeded = serializers.BooleanField(required=False, allow_null=True, default=None)
    comment = serializers.CharField(max_length=1000, required=False, allow_blank=True, default="")
    idempotency_key = serializers.CharField(max_length=128, required=False, allow_blank=True, default="")

    def validate(self, attrs: dict) -> dict:
        if attrs["kind"] == "helpful" and attrs.get("helpful") is None:
            raise serializers.ValidationError({"helpful": ["helpful feedback needs helpful=true or false"]})
        if attrs["kind"] == "disambiguation" and not attrs.get("choice"):
            raise serializers.ValidationError({"choice": ["a disambiguation needs the chosen option"]})
        if attrs["kind"] == "action_outcome" and attrs.get("action_succeeded") is None:
            raise serializers.ValidationError({"action_succeeded": ["say whether the action succeeded"]})
        return attrs


class FeedbackResponseSerializer(serializers.Serializer):
    request_id = serializers.CharField()
    outcome_status = serializers.CharField()
    silent_outcome = serializers.BooleanField()


class ErasureRequestSerializer(serializers.Serializer):
    user_id = serializers.CharField(
        max_length=128, help_text="the end user's id, as client apps send it in context.user_id"
    )


class ErasureResponseSerializer(serializers.Serializer):
    user = serializers.CharField(
        help_text="sha256:<16 hex digits> of the user id (what the audit trail keeps)"
    )
    counts = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="rows deleted per kind (inference_logs, feedback, action_executions, memories, …)",
    )
