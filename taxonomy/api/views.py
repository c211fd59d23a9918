"""Taxonomy API v1: clusters, labels, incompatibilities, typologies, policies, roles, audit.

Experts (and admins) write; API clients and reviewers read. Every write calls a service, so the
validator judges API writes exactly as it judges UI edits and pack imports.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from arg_platform.errors import NotFound
from arg_platform.models import AuditEvent
from projects.access import Capability
from projects.api.base import ProjectScopedMixin
from taxonomy import selectors, services
from taxonomy.models import Cluster, ContextTypology, Label, LabelIncompatibility, Policy, Role
from taxonomy.term_guard import TermConflict, term_conflicts

from . import serializers as s

PROJECT_PARAM = OpenApiParameter(
    "project", OpenApiTypes.STR, OpenApiParameter.PATH, description="project slug"
)


TERM_REFUSAL = OpenApiResponse(
    description="Refused, nothing written: `errors` maps each field to its messages and `rules` names the "
    "rules. A new synonym or example identical to another label's name, synonym or example "
    "(`taxonomy.term_duplicate`) or very close to one (`taxonomy.term_similar`, embedding cosine ≥ "
    "`ARG_TERM_SIMILARITY_THRESHOLD`; send `accept_similar: true` to save it anyway) adds `conflicts`: "
    "one object per new term, naming the other label and the similarity."
)


def _accepted_terms(project: Any, label: Label | None, data: dict[str, Any]) -> list[TermConflict]:
    """The very close terms this write adds (what ``accept_similar`` confirms), as the 2xx reports them."""
    view = selectors.taxonomy_view(project=project)
    own = label.label_id if label is not None else ""
    new_terms = {
        f: [t for t in data.get(f) or [] if label is None or t not in getattr(label, f)]
        for f in ("synonyms", "examples")
    }
    return [c for c in term_conflicts(view, label_id=own, new_terms=new_terms) if not c.identical]


def _written(label: Label, warnings: list[TermConflict]) -> dict[str, Any]:
    return {**s.LabelSerializer(label).data, "warnings": [w.as_dict() for w in warnings]}


def _valid(serializer_class: type, data: Any, **kwargs: Any) -> dict[str, Any]:
    serializer = serializer_class(data=data, **kwargs)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


@extend_schema(parameters=[PROJECT_PARAM])
class ClusterViewSet(ProjectScopedMixin, viewsets.GenericViewSet):
    serializer_class = s.ClusterSerializer
    lookup_field = "key"

    def get_queryset(self) -> QuerySet[Cluster]:
        return selectors.cluster_list(project=self.project)

    def list(self, request: Request, project: str) -> Response:
        return Response(s.ClusterSerializer(self.get_queryset(), many=True).data)

    def retrieve(self, request: Request, project: str, key: str) -> Response:
        return Response(s.ClusterSerializer(self._get(key)).data)

    @extend_schema(request=s.ClusterInputSerializer, responses={201: s.ClusterSerializer})
    def create(self, request: Request, project: str) -> Response:
        data = _valid(s.ClusterInputSerializer, request.data)
        cluster = services.cluster_create(project=self.project, actor=request.user, **data)
        return Response(s.ClusterSerializer(cluster).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=s.ClusterUpdateSerializer, responses=s.ClusterSerializer)
    def partial_update(self, request: Request, project: str, key: str) -> Response:
        cluster = self._get(key)
        data = _valid(
            s.ClusterUpdateSerializer,
            {"name": cluster.name, "description": cluster.description, **request.data},
        )
        cluster = services.cluster_update(cluster=cluster, actor=request.user, **data)
        return Response(s.ClusterSerializer(cluster).data)

    def _get(self, key: str) -> Cluster:
        cluster = self.get_queryset().filter(key=key).first()
        if cluster is None:
            raise NotFound(f"cluster {key!r} not found")
        return cluster


@extend_schema(parameters=[PROJECT_PARAM])
class LabelViewSet(ProjectScopedMixin, viewsets.GenericViewSet):
    serializer_class = s.LabelSerializer
    lookup_field = "label_id"

    def get_queryset(self) -> QuerySet[Label]:
        params = self.request.query_params
        return selectors.label_list(
            project=self.project,
            status=params.get("status"),
            search=params.get("search", ""),
            cluster=params.get("cluster"),
        )

    @extend_schema(
        parameters=[
            OpenApiParameter("status", str),
            OpenApiParameter("cluster", str),
            OpenApiParameter("search", str),
        ]
    )
    def list(self, request: Request, project: str) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(s.LabelSerializer(page, many=True).data)

    def retrieve(self, request: Request, project: str, label_id: str) -> Response:
        return Response(s.LabelSerializer(selectors.label_get(project=self.project, label_id=label_id)).data)

    @extend_schema(
        request=s.LabelCreateSerializer,
        responses={201: s.LabelWriteSerializer, 400: TERM_REFUSAL},
    )
    def create(self, request: Request, project: str) -> Response:
        data = _valid(s.LabelCreateSerializer, request.data)
        warnings = _accepted_terms(self.project, None, data) if data["accept_similar"] else []
        label = services.label_create(
            project=self.project,
            actor=request.user,
            name=data["name"],
            cluster_key=data["cluster"],
            parent_id=data["parent"],
            description=data["description"],
            synonyms=data["synonyms"],
            examples=data["examples"],
            status=data["status"],
            accept_similar=data["accept_similar"],
        )
        return Response(_written(label, warnings), status=status.HTTP_201_CREATED)

    @extend_schema(
        request=s.LabelUpdateSerializer, responses={200: s.LabelWriteSerializer, 400: TERM_REFUSAL}
    )
    def partial_update(self, request: Request, project: str, label_id: str) -> Response:
        data = _valid(s.LabelUpdateSerializer, request.data)
        label = selectors.label_get(project=self.project, label_id=label_id)
        warnings = _accepted_terms(self.project, label, data) if data["accept_similar"] else []
        label = services.label_update(label=label, actor=request.user, **data)
        return Response(_written(label, warnings))

    @extend_schema(request=s.LabelMoveSerializer, responses=s.LabelSerializer)
    @action(detail=True, methods=["post"])
    def move(self, request: Request, project: str, label_id: str) -> Response:
        data = _valid(s.LabelMoveSerializer, request.data)
        label = selectors.label_get(project=self.project, label_id=label_id)
        label = services.label_move(
            label=label,
            actor=request.user,
            parent_id=data["parent"],
            cluster_key=data["cluster"],
            reason=data["reason"],
        )
        return Response(s.LabelSerializer(label).data)

    @extend_schema(request=s.LabelStatusSerializer, responses=s.LabelSerializer)
    @action(detail=True, methods=["post"], url_path="status")
    def set_status(self, request: Request, project: str, label_id: str) -> Response:
        data = _valid(s.LabelStatusSerializer, request.data)
        label = selectors.label_get(project=self.project, label_id=label_id)
        label = services.label_set_status(label=label, actor=request.user, **data)
        return Response(s.LabelSerializer(label).data)


@extend_schema(parameters=[PROJECT_PARAM])
class IncompatibilityViewSet(ProjectScopedMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
    serializer_class = s.IncompatibilitySerializer

    def get_queryset(self) -> QuerySet[LabelIncompatibility]:
        return LabelIncompatibility.objects.filter(project=self.project).select_related("label_a", "label_b")

    @extend_schema(request=s.IncompatibilityInputSerializer, responses={201: s.IncompatibilitySerializer})
    def create(self, request: Request, project: str) -> Response:
        data = _valid(s.IncompatibilityInputSerializer, request.data)
        inc = services.incompatibility_create(
            project=self.project,
            actor=request.user,
            label_a=data["labels"][0],
            label_b=data["labels"][1],
            reason=data["reason"],
        )
        return Response(s.IncompatibilitySerializer(inc).data, status=status.HTTP_201_CREATED)

    def destroy(self, request: Request, project: str, pk: str) -> Response:
        # a non-numeric id is a missing one (filtering an integer key by it raises ValueError: a 500)
        inc = self.get_queryset().filter(pk=pk).first() if pk.isascii() and pk.isdigit() else None
        if inc is None:
            raise NotFound(f"incompatibility {pk} not found")
        services.incompatibility_delete(incompatibility=inc, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema(parameters=[PROJECT_PARAM])
class TypologyViewSet(ProjectScopedMixin, viewsets.GenericViewSet):
    serializer_class = s.TypologySerializer
    lookup_field = "key"

    def get_queryset(self) -> QuerySet[ContextTypology]:
        return selectors.typology_list(project=self.project)

    def list(self, request: Request, project: str) -> Response:
        return Response(s.TypologySerializer(self.get_queryset(), many=True).data)

    def retrieve(self, request: Request, project: str, key: str) -> Response:
        return Response(s.TypologySerializer(self._get(key)).data)

    def create(self, request: Request, project: str) -> Response:
        data = _valid(s.TypologySerializer, request.data)
        typology = services.typology_save(project=self.project, actor=request.user, data=data)
        return Response(s.TypologySerializer(typology).data, status=status.HTTP_201_CREATED)

    def partial_update(self, request: Request, project: str, key: str) -> Response:
        typology = self._get(key)
        data = _valid(s.TypologySerializer, request.data, partial=True)
        typology = services.typology_save(
            project=self.project, actor=request.user, data=data, typology=typology
        )
        return Response(s.TypologySerializer(typology).data)

    def _get(self, key: str) -> ContextTypology:
        typology = self.get_queryset().filter(key=key).first()
        if typology is None:
            raise NotFound(f"typology {key!r} not found")
        return typology


@extend_schema(parameters=[PROJECT_PARAM])
class PolicyViewSet(ProjectScopedMixin, viewsets.GenericViewSet):
    serializer_class = s.PolicySerializer
    lookup_field = "key"

    def get_queryset(self) -> QuerySet[Policy]:
        return selectors.policy_list(project=self.project)

    def list(self, request: Request, project: str) -> Response:
        return Response(s.PolicySerializer(self.get_queryset(), many=True).data)

    def retrieve(self, request: Request, project: str, key: str) -> Response:
        return Response(s.PolicySerializer(self._get(key)).data)

    def create(self, request: Request, project: str) -> Response:
        data = _valid(s.PolicySerializer, request.data)
        policy = services.policy_save(project=self.project, actor=request.user, data=data)
        return Response(s.PolicySerializer(policy).data, status=status.HTTP_201_CREATED)

    def partial_update(self, request: Request, project: str, key: str) -> Response:
        policy = self._get(key)
        data = _valid(s.PolicySerializer, request.data, partial=True)
        policy = services.policy_save(project=self.project, actor=request.user, data=data, policy=policy)
        return Response(s.PolicySerializer(policy).data)

    def _get(self, key: str) -> Policy:
        policy = self.get_queryset().filter(key=key).first()
        if policy is None:
            raise NotFound(f"policy {key!r} not found")
        return policy


@extend_schema(parameters=[PROJECT_PARAM])
class RoleViewSet(ProjectScopedMixin, viewsets.GenericViewSet):
    serializer_class = s.RoleSerializer
    lookup_field = "key"

    def get_queryset(self) -> QuerySet[Role]:
        return selectors.role_list(project=self.project)

    def list(self, request: Request, project: str) -> Response:
        return Response(s.RoleSerializer(self.get_queryset(), many=True).data)

    @extend_schema(request=s.RoleInputSerializer, responses={201: s.RoleSerializer})
    def create(self, request: Request, project: str) -> Response:
        data = _valid(s.RoleInputSerializer, request.data)
        role = services.role_save(
            project=self.project,
            actor=request.user,
            key=data["key"],
            name=data["name"],
            policy_key=data["policy"],
            default_typology_key=data["default_typology"],
        )
        return Response(s.RoleSerializer(role).data, status=status.HTTP_201_CREATED)


@extend_schema(parameters=[PROJECT_PARAM])
class AuditViewSet(ProjectScopedMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
    serializer_class = s.AuditEventSerializer

    def get_serializer_context(self) -> dict[str, Any]:
        # A webhook handler's URL is for curators only (arg_platform.handler_targets).
        return {**super().get_serializer_context(), "curator": self.access.can(Capability.CURATE)}

    def get_queryset(self) -> QuerySet[AuditEvent]:
        qs = AuditEvent.objects.filter(project=self.project)
        if object_type := self.request.query_params.get("object_type"):
            qs = qs.filter(object_type=object_type)
        if object_key := self.request.query_params.get("object_key"):
            qs = qs.filter(object_key=object_key)
        return qs
