"""Input and output serializers of the review API (no logic: the decision services do the work)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from memory.distinctions import SET_MAX_TERMS
from review.models import Proposal, ProposalDecision

JSON_OBJECT = serializers.JSONField


def reason_field() -> serializers.CharField:
    """The optional reason a decision carries."""
    return serializers.CharField(max_length=1000, required=False, allow_blank=True, default="")


class ProposalDecisionSerializer(serializers.ModelSerializer):
    actor = serializers.CharField(source="actor_name", read_only=True)

    class Meta:
        model = ProposalDecision
        fields = ["id", "action", "actor", "reason", "status_before", "status_after", "changes", "created_at"]


class ProposalSerializer(serializers.ModelSerializer):
    """A proposal as the queue lists it."""

    assignee = serializers.CharField(source="assignee.username", default=None, read_only=True)
    decided_by = serializers.CharField(source="decided_by.username", default=None, read_only=True)
    base_release = serializers.IntegerField(source="base_release.version", default=None, read_only=True)
    applied_release = serializers.IntegerField(source="applied_release.version", default=None, read_only=True)
    run = serializers.IntegerField(source="run_id", default=None, read_only=True)
    bin_reason = serializers.CharField(
        source="replay.bin_reason",
        default="",
        read_only=True,
        help_text="which rule put the proposal in its confidence bin (why a backlog item is in the backlog)",
    )

    class Meta:
        model = Proposal
        fields = [
            "id",
            "kind",
            "status",
            "confidence_bin",
            "bin_reason",
            "title",
            "summary",
            "score",
            "fingerprint",
            "target_keys",
            "cluster_key",
            "assignee",
            "decided_by",
            "decided_at",
            "decision_reason",
            "base_release",
            "applied_release",
            "run",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class ProposalDetailSerializer(ProposalSerializer):
    """One proposal with its changeset, evidence, replay measurements and decision history."""

    decisions = ProposalDecisionSerializer(many=True, read_only=True)

    class Meta(ProposalSerializer.Meta):
        fields = [
            *ProposalSerializer.Meta.fields,
            "changeset",
            "evidence",
            "generator",
            "replay",
            "decisions",
        ]
        read_only_fields = fields


class ReasonSerializer(serializers.Serializer):
    reason = reason_field()


class RequiredReasonSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=1000)


class ApproveSerializer(serializers.Serializer):
    mode = serializers.ChoiceField(
        choices=[("now", "apply now and publish"), ("batch", "approve for the next release")], default="now"
    )
    reason = reason_field()


class AssignSerializer(serializers.Serializer):
    assignee = serializers.CharField(
        max_length=150, allow_null=True, help_text="username of a reviewer of the project; null = nobody"
    )
    reason = reason_field()


class EditSerializer(serializers.Serializer):
    title = serializers.CharField(max_length=200, required=False)
    summary = serializers.CharField(required=False, allow_blank=True)
    changeset = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        help_text="the whole edited changeset (review/changeset.py)",
    )
    reason = reason_field()


class ApprovalSerializer(serializers.Serializer):
    proposal = ProposalDetailSerializer()
    release = serializers.IntegerField(allow_null=True, help_text="version published (null: not applied now)")
    applied = serializers.ListField(child=serializers.IntegerField())
    failed = serializers.DictField(child=serializers.CharField(), help_text="proposal id → why it failed")
    blocked = serializers.DictField(
        child=serializers.CharField(),
        help_text="proposal id → the unpublished draft edits it collides with (still approved, not applied)",
    )
    error = serializers.CharField(allow_blank=True)


class NodeChangeSerializer(serializers.Serializer):
    node_id = serializers.CharField()
    title = serializers.CharField()
    type = serializers.CharField()
    change = serializers.CharField()
    before = serializers.DictField()
    after = serializers.DictField()


class EdgeChangeSerializer(serializers.Serializer):
    source = serializers.CharField()  # type: ignore[assignment]  # a declared field, not Field.source
    target = serializers.CharField()
    type = serializers.CharField()
    change = serializers.CharField()
    weight_before = serializers.FloatField(allow_null=True)
    weight_after = serializers.FloatField(allow_null=True)


class LabelChangeSerializer(serializers.Serializer):
    label_id = serializers.CharField()
    name = serializers.CharField()
    cluster = serializers.CharField()
    # a declared field (DRF collects it), not Field.parent
    parent = serializers.CharField(allow_null=True)  # type: ignore[assignment]
    status_before = serializers.CharField(allow_null=True)
    status_after = serializers.CharField()


class FindingSerializer(serializers.Serializer):
    rule = serializers.CharField()
    message = serializers.CharField()


class ActionOnPathSerializer(serializers.Serializer):
    node_id = serializers.CharField()
    title = serializers.CharField()
    type = serializers.CharField()
    risk = serializers.CharField()
    guarded_by_check = serializers.BooleanField()


class RedirectSerializer(serializers.Serializer):
    source = serializers.CharField()  # type: ignore[assignment]  # a declared field, not Field.source
    targets = serializers.ListField(child=serializers.CharField())


class PreviewSerializer(serializers.Serializer):
    """What approving the proposal would change in the draft, and what stands in the way."""

    compared_with = serializers.CharField()
    applies = serializers.BooleanField()
    problems = FindingSerializer(many=True)
    nodes = NodeChangeSerializer(many=True)
    edges = EdgeChangeSerializer(many=True)
    labels = LabelChangeSerializer(many=True)
    aliases = RedirectSerializer(many=True)
    actions_on_new_paths = ActionOnPathSerializer(many=True)
    memories = serializers.IntegerField(help_text="episodic memories attached to the touched nodes")


class SilentSampleSerializer(serializers.Serializer):
    request_id = serializers.CharField(source="log.request_id")
    created_at = serializers.DateTimeField(source="log.created_at")
    prompt = serializers.CharField(source="log.prompt")
    answer = serializers.CharField(source="log.answer")
    target_node = serializers.CharField(source="log.target_node")
    c_info = serializers.FloatField(source="log.c_info", allow_null=True)
    release_version = serializers.IntegerField(source="log.release_version", allow_null=True)
    zone = serializers.CharField()
    weight = serializers.FloatField()
    run = serializers.IntegerField(source="run_id", allow_null=True)


class SilentLabelSerializer(serializers.Serializer):
    helpful = serializers.BooleanField()
    comment = serializers.CharField(max_length=1000, required=False, allow_blank=True, default="")


class SilentLabelResultSerializer(serializers.Serializer):
    request_id = serializers.CharField()
    helpful = serializers.BooleanField()
    outcome_status = serializers.CharField(help_text="unchanged: a reviewer label never confirms silence")
    silent_outcome = serializers.BooleanField()


class MemoryMergeSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    created_at = serializers.DateTimeField()
    info_key = serializers.CharField(source="info_key.key")
    label_path_current = serializers.CharField()
    fact = serializers.CharField(source="episode.text")
    candidate = serializers.SerializerMethodField()
    reasons = serializers.JSONField()

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_candidate(self, attempt: Any) -> str | None:
        unit = attempt.candidate_unit
        return unit.canonical_text if unit is not None else None


class DistinctionTermsSerializer(serializers.Serializer):
    """Optional: the terms that make the fact different ("wool" / "linen"), taught to the registry as a
    term distinction; both or neither."""

    unit_term = serializers.CharField(
        max_length=200, required=False, allow_blank=True, default="", help_text="the InfoUnit's word(s)"
    )
    fact_term = serializers.CharField(
        max_length=200,
        required=False,
        allow_blank=True,
        default="",
        help_text="the fact's word(s) in their place",
    )


def distinction_terms(data: dict[str, Any]) -> tuple[str, str] | None:
    return (data["unit_term"], data["fact_term"]) if data["unit_term"] or data["fact_term"] else None


class MemoryResolveSerializer(DistinctionTermsSerializer):
    decision = serializers.ChoiceField(choices=[("SAME", "same fact"), ("DIFFERENT", "different fact")])
    reason = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")


class MemoryDetachSerializer(DistinctionTermsSerializer):
    reason = serializers.CharField(max_length=500, help_text="why this fact is not the unit's")


class MemoryDetachResultSerializer(serializers.Serializer):
    evidence = serializers.IntegerField(help_text="the evidence taken off (it no longer exists)")
    episode = serializers.IntegerField(help_text="the episodic memory whose fact it was")
    from_unit = serializers.IntegerField(help_text="the InfoUnit it was wrongly merged into")
    unit = serializers.IntegerField(help_text="the InfoUnit the fact founded")


class MemoryResolveResultSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    review_status = serializers.CharField()
    unit = serializers.IntegerField(source="unit_id", allow_null=True)


class MemoryDistinctionSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    first = serializers.CharField(help_text="a term (normalized; first < second)")
    second = serializers.CharField(help_text="the term it names a different thing from")
    reason = serializers.CharField()
    attempt = serializers.IntegerField(
        source="attempt_id", allow_null=True, help_text="the attempt that taught it"
    )
    created_by = serializers.CharField(source="created_by.username", default=None, allow_null=True)
    created_at = serializers.DateTimeField()


class MemoryDistinctSetSerializer(serializers.Serializer):
    terms = serializers.ListField(
        child=serializers.CharField(max_length=200),
        min_length=2,
        max_length=SET_MAX_TERMS,
        help_text="terms that name different things; every pair becomes a term distinction",
    )
    reason = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")


class ShadowLabelSerializer(serializers.Serializer):
    label_id = serializers.CharField()
    name = serializers.CharField()
    cluster = serializers.CharField(source="cluster.key")
    # a declared field (DRF collects it), not Field.parent
    parent = serializers.CharField(source="parent.label_id", default=None)  # type: ignore[assignment]
    status = serializers.CharField()
    status_changed_at = serializers.DateTimeField(allow_null=True)


class LabelActivateSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")


class InboxSerializer(serializers.Serializer):
    proposals = serializers.IntegerField()
    silent = serializers.IntegerField()
    merges = serializers.IntegerField()
