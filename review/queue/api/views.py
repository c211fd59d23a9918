"""Review API v1: the same queue and decisions as the web UI, for teams that review from their own tools.

Under ``/api/v1/projects/<slug>/``: ``proposals/`` (filtered like the queue page, one FilterSet for
both), a proposal with its changeset, evidence, replay and decisions, its ``preview`` (what approving
would change in the draft), and the verbs ``claim``, ``assign``, ``approve``, ``reject``,
``request-changes``, ``defer``, ``edit``; ``proposals/apply-approved/`` publishes the approved batch.
``review/`` holds the other lists: ``silent-samples/`` (+ ``label``), ``memory-merges/`` (+ ``resolve``),
``memory-evidence/<id>/detach`` (undo a wrong merge), ``memory-distinctions/`` (list, declare, delete),
``shadow-labels/`` (+ ``activate``) and ``inbox/`` (what awaits a reviewer).

People only: reading needs REVIEW or CURATE (reviewers, experts, admins), deciding needs REVIEW,
editing a proposal REVIEW or CURATE. A client-app token gets 403; another project's caller, 404.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import SAFE_METHODS
from rest_framework.request import Request
from rest_framework.response import Response

from arg_platform.errors import Forbidden, RuleViolation, Violation
from arg_platform.job_api import JobSerializer, job_accepted
from memory.models import EpisodicMemory
from memory.selectors import (
    info_evidence_get,
    registry_attempt_get,
    registry_unsure_list,
    term_distinction_get,
    term_distinction_list,
)
from memory.services import (
    info_evidence_detach,
    registry_unsure_resolve,
    term_distinction_delete,
    term_distinctions_declare,
)
from projects.access import Capability
from projects.api.base import ProjectScopedMixin, request_token
from projects.selectors import project_access
from review.models import Proposal
from review.queue import apply_jobs, decisions
from review.queue.api import serializers as s
from review.queue.filtersets import ProposalFilterSet
from review.queue.proposal_page import proposal_preview
from review.queue.selectors import proposal_get, reviewer_list, shadow_label_list, silent_sample_list

PROJECT_PARAM = OpenApiParameter(
    "project", OpenApiTypes.STR, OpenApiParameter.PATH, description="project slug"
)
READ = (Capability.REVIEW, Capability.CURATE)
DECIDE = (Capability.REVIEW,)


def _valid(serializer_class: type, data: Any) -> dict[str, Any]:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


class ReviewScopedMixin(ProjectScopedMixin):
    """People with REVIEW (or, for reads and edits, CURATE) in the project; never client-app tokens."""

    edit_actions: frozenset[str] = frozenset()

    def capabilities_for(self, request: Request) -> tuple[Capability, ...]:
        if request.method in SAFE_METHODS or getattr(self, "action", None) in self.edit_actions:
            return READ
        return DECIDE

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super(ProjectScopedMixin, self).initial(request, *args, **kwargs)  # type: ignore[misc]
        access = project_access(user=request.user, token=request_token(request), slug=kwargs["project"])
        wanted = self.capabilities_for(request)
        if not any(access.can(c) for c in wanted):
            verbs = " or ".join(c.value for c in wanted)
            raise Forbidden(f"your role ({access.role}) may not {verbs} proposals in this project")
        self.access = access


@extend_schema(parameters=[PROJECT_PARAM])
class ProposalViewSet(ReviewScopedMixin, viewsets.GenericViewSet):
    serializer_class = s.ProposalSerializer
    filter_backends = [DjangoFilterBackend]
    filterset_class = ProposalFilterSet
    lookup_value_regex = r"\d+"
    edit_actions = frozenset({"edit"})

    def get_queryset(self) -> QuerySet[Proposal]:
        if self.project is None:
            return Proposal.objects.none()
        return Proposal.objects.filter(project=self.project).select_related(
            "assignee", "decided_by", "applied_release", "base_release"
        )

    def _get(self, pk: Any) -> Proposal:
        return proposal_get(project=self.project, proposal_id=int(pk))

    def _detail(self, proposal: Proposal) -> Response:
        proposal = self._get(proposal.pk)
        return Response(s.ProposalDetailSerializer(proposal).data)

    def list(self, request: Request, project: str) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        return self.get_paginated_response(s.ProposalSerializer(page, many=True).data)

    @extend_schema(responses=s.ProposalDetailSerializer)
    def retrieve(self, request: Request, project: str, pk: str) -> Response:
        return self._detail(self._get(pk))

    @extend_schema(responses=s.PreviewSerializer)
    @action(detail=True, methods=["get"], filter_backends=[])
    def preview(self, request: Request, project: str, pk: str) -> Response:
        """What approving would change in the draft (or, once applied, what it changed) and what blocks it."""
        proposal = self._get(pk)
        preview, compared_with = proposal_preview(proposal)
        touched = preview.touched_nodes
        data = {
            "compared_with": compared_with,
            "applies": preview.applies,
            "problems": [{"rule": v.rule, "message": v.message} for v in preview.problems],
            "nodes": [c.__dict__ for c in preview.node_changes],
            "edges": [c.__dict__ for c in preview.edge_changes],
            "labels": [c.__dict__ for c in preview.label_changes],
            "aliases": [{"source": src, "targets": list(t)} for src, t in preview.aliases],
            "actions_on_new_paths": [a.__dict__ for a in preview.actions_on_new_paths],
            "memories": EpisodicMemory.objects.filter(project=self.project, node_id__in=touched).count()
            if touched
            else 0,
        }
        return Response(s.PreviewSerializer(data).data)

    @extend_schema(request=None, responses=s.ProposalDetailSerializer)
    @action(detail=True, methods=["post"], filter_backends=[])
    def claim(self, request: Request, project: str, pk: str) -> Response:
        return self._detail(decisions.proposal_claim(proposal=self._get(pk), actor=request.user))

    @extend_schema(request=s.AssignSerializer, responses=s.ProposalDetailSerializer)
    @action(detail=True, methods=["post"], filter_backends=[])
    def assign(self, request: Request, project: str, pk: str) -> Response:
        data = _valid(s.AssignSerializer, request.data)
        assignee = None
        if data["assignee"]:
            assignee = reviewer_list(project=self.project).filter(username=data["assignee"]).first()
            if assignee is None:  # unknown here or not a reviewer: the same answer, no user enumeration
                raise RuleViolation(
                    Violation(
                        "review.assignee_role",
                        f"{data['assignee']} is not a reviewer of this project",
                        "assignee",
                    )
                )
        proposal = decisions.proposal_assign(
            proposal=self._get(pk), actor=request.user, assignee=assignee, reason=data["reason"]
        )
        return self._detail(proposal)

    @extend_schema(
        request=s.ApproveSerializer,
        responses={200: s.ApprovalSerializer, 202: JobSerializer},
        description="Approve. mode=batch: 200 with the proposal, APPROVED until the next application. "
        "mode=now: 202 with the job (Location: its URL) that applies it with the approved batch and "
        "publishes active release + changesets; GET the job for result.release, applied, failed, blocked.",
    )
    @action(detail=True, methods=["post"], filter_backends=[])
    def approve(self, request: Request, project: str, pk: str) -> Response:
        data = _valid(s.ApproveSerializer, request.data)
        proposal = self._get(pk)
        if data["mode"] == "now":
            job = apply_jobs.proposal_approve_now(
                proposal=proposal, actor=request.user, reason=data["reason"]
            )[1]
            return job_accepted(job, request)
        approval = decisions.proposal_approve(
            proposal=proposal, actor=request.user, reason=data["reason"], apply_now=False
        )
        return Response(self._approval(approval))

    def _approval(self, approval: decisions.Approval) -> dict[str, Any]:
        return s.ApprovalSerializer(
            {
                "proposal": self._get(approval.proposal.pk),
                "release": approval.release.version if approval.release else None,
                "applied": approval.applied,
                "failed": {str(k): v for k, v in approval.failed.items()},
                "blocked": {str(k): v for k, v in approval.blocked.items()},
                "error": approval.error,
            }
        ).data

    @extend_schema(request=s.RequiredReasonSerializer, responses=s.ProposalDetailSerializer)
    @action(detail=True, methods=["post"], filter_backends=[])
    def reject(self, request: Request, project: str, pk: str) -> Response:
        data = _valid(s.RequiredReasonSerializer, request.data)
        return self._detail(
            decisions.proposal_reject(proposal=self._get(pk), actor=request.user, reason=data["reason"])
        )

    @extend_schema(request=s.RequiredReasonSerializer, responses=s.ProposalDetailSerializer)
    @action(detail=True, methods=["post"], url_path="request-changes", filter_backends=[])
    def request_changes(self, request: Request, project: str, pk: str) -> Response:
        data = _valid(s.RequiredReasonSerializer, request.data)
        proposal = decisions.proposal_request_changes(
            proposal=self._get(pk), actor=request.user, reason=data["reason"]
        )
        return self._detail(proposal)

    @extend_schema(request=s.ReasonSerializer, responses=s.ProposalDetailSerializer)
    @action(detail=True, methods=["post"], filter_backends=[])
    def defer(self, request: Request, project: str, pk: str) -> Response:
        data = _valid(s.ReasonSerializer, request.data)
        return self._detail(
            decisions.proposal_defer(proposal=self._get(pk), actor=request.user, reason=data["reason"])
        )

    @extend_schema(request=s.EditSerializer, responses=s.ProposalDetailSerializer)
    @action(detail=True, methods=["post"], filter_backends=[])
    def edit(self, request: Request, project: str, pk: str) -> Response:
        """Edit the title, summary and/or changeset of an open proposal (experts and reviewers)."""
        data = _valid(s.EditSerializer, request.data)
        proposal = decisions.proposal_edit(
            proposal=self._get(pk),
            actor=request.user,
            title=data.get("title"),
            summary=data.get("summary"),
            changeset=data.get("changeset"),
            reason=data["reason"],
        )
        return self._detail(proposal)

    @extend_schema(
        request=None,
        responses={202: JobSerializer},
        description="Queue the job that applies every APPROVED proposal and publishes one release: 202 with "
        "the job (Location: its URL). 400 (review.nothing_approved) when none is waiting.",
    )
    @action(detail=False, methods=["post"], url_path="apply-approved", filter_backends=[])
    def apply_approved(self, request: Request, project: str) -> Response:
        return job_accepted(apply_jobs.apply_job_open(project=self.project, actor=request.user), request)


@extend_schema(parameters=[PROJECT_PARAM])
class SilentSampleViewSet(ReviewScopedMixin, viewsets.GenericViewSet):
    """Sampled silent Info successes awaiting a reviewer's label (§3.4.2)."""

    serializer_class = s.SilentSampleSerializer
    lookup_field = "request_id"
    lookup_value_regex = r"[^/]+"

    def list(self, request: Request, project: str) -> Response:
        return Response(s.SilentSampleSerializer(silent_sample_list(project=self.project), many=True).data)

    @extend_schema(request=s.SilentLabelSerializer, responses=s.SilentLabelResultSerializer)
    @action(detail=True, methods=["post"])
    def label(self, request: Request, project: str, request_id: str) -> Response:
        data = _valid(s.SilentLabelSerializer, request.data)
        log = decisions.silent_success_label(
            project=self.project,
            request_id=request_id,
            actor=request.user,
            helpful=data["helpful"],
            comment=data["comment"],
        )
        return Response(
            s.SilentLabelResultSerializer(
                {
                    "request_id": log.request_id,
                    "helpful": data["helpful"],
                    "outcome_status": log.outcome_status,
                    "silent_outcome": log.silent_outcome,
                }
            ).data
        )


@extend_schema(parameters=[PROJECT_PARAM])
class MemoryMergeViewSet(ReviewScopedMixin, viewsets.GenericViewSet):
    """UNSURE Info Registry merges awaiting SAME / DIFFERENT (through the memory app's service)."""

    serializer_class = s.MemoryMergeSerializer
    lookup_value_regex = r"\d+"

    def list(self, request: Request, project: str) -> Response:
        page = self.paginate_queryset(registry_unsure_list(project=self.project))
        return self.get_paginated_response(s.MemoryMergeSerializer(page, many=True).data)

    @extend_schema(request=s.MemoryResolveSerializer, responses=s.MemoryResolveResultSerializer)
    @action(detail=True, methods=["post"])
    def resolve(self, request: Request, project: str, pk: str) -> Response:
        data = _valid(s.MemoryResolveSerializer, request.data)
        attempt = registry_unsure_resolve(
            attempt=registry_attempt_get(project=self.project, pk=int(pk)),
            decision=data["decision"],
            actor=request.user,
            reason=data["reason"],
            terms=s.distinction_terms(data),
        )
        return Response(s.MemoryResolveResultSerializer(attempt).data)


@extend_schema(parameters=[PROJECT_PARAM])
class MemoryEvidenceViewSet(ReviewScopedMixin, viewsets.GenericViewSet):
    """Evidence of an InfoUnit; ``detach`` undoes a wrong merge (through the memory app's service)."""

    serializer_class = s.MemoryDetachResultSerializer
    lookup_value_regex = r"\d+"

    @extend_schema(request=s.MemoryDetachSerializer, responses=s.MemoryDetachResultSerializer)
    @action(detail=True, methods=["post"])
    def detach(self, request: Request, project: str, pk: str) -> Response:
        data = _valid(s.MemoryDetachSerializer, request.data)
        evidence = info_evidence_get(project=self.project, pk=int(pk))
        unit = info_evidence_detach(
            evidence=evidence, actor=request.user, reason=data["reason"], terms=s.distinction_terms(data)
        )
        return Response(
            s.MemoryDetachResultSerializer(
                {
                    "evidence": evidence.pk,
                    "episode": evidence.episode_id,
                    "from_unit": evidence.unit_id,
                    "unit": unit.pk,
                }
            ).data
        )


@extend_schema(parameters=[PROJECT_PARAM])
class MemoryDistinctionViewSet(ReviewScopedMixin, viewsets.GenericViewSet):
    """Term distinctions reviewers taught the Info Registry (``memory.distinctions``): list, forget."""

    serializer_class = s.MemoryDistinctionSerializer
    lookup_value_regex = r"\d+"

    def list(self, request: Request, project: str) -> Response:
        page = self.paginate_queryset(term_distinction_list(project=self.project))
        return self.get_paginated_response(s.MemoryDistinctionSerializer(page, many=True).data)

    @extend_schema(
        request=s.MemoryDistinctSetSerializer, responses={201: s.MemoryDistinctionSerializer(many=True)}
    )
    def create(self, request: Request, project: str) -> Response:
        """Declare a set of mutually distinct terms: every new pair is returned."""
        data = _valid(s.MemoryDistinctSetSerializer, request.data)
        created = term_distinctions_declare(
            project=self.project, terms=data["terms"], actor=request.user, reason=data["reason"]
        )
        return Response(
            s.MemoryDistinctionSerializer(created, many=True).data, status=status.HTTP_201_CREATED
        )

    def destroy(self, request: Request, project: str, pk: str) -> Response:
        term_distinction_delete(
            distinction=term_distinction_get(project=self.project, pk=int(pk)), actor=request.user
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema(parameters=[PROJECT_PARAM])
class ShadowLabelViewSet(ReviewScopedMixin, viewsets.GenericViewSet):
    """SHADOW labels that a reviewer may activate (through the taxonomy service)."""

    serializer_class = s.ShadowLabelSerializer
    lookup_field = "label_id"
    lookup_value_regex = r"L\d+"

    def list(self, request: Request, project: str) -> Response:
        return Response(s.ShadowLabelSerializer(shadow_label_list(project=self.project), many=True).data)

    @extend_schema(request=s.LabelActivateSerializer, responses=s.ShadowLabelSerializer)
    @action(detail=True, methods=["post"])
    def activate(self, request: Request, project: str, label_id: str) -> Response:
        data = _valid(s.LabelActivateSerializer, request.data)
        label = decisions.shadow_label_activate(
            project=self.project, label_id=label_id, actor=request.user, reason=data["reason"]
        )
        return Response(s.ShadowLabelSerializer(label).data)


@extend_schema(parameters=[PROJECT_PARAM])
class InboxViewSet(ReviewScopedMixin, viewsets.ViewSet):
    """What awaits a reviewer in the project (the numbers behind the nav badge)."""

    @extend_schema(responses=s.InboxSerializer)
    def list(self, request: Request, project: str) -> Response:
        from review.queue.notifications import review_inbox_counts

        return Response(s.InboxSerializer(review_inbox_counts(project=self.access.project)).data)
