"""Ontology API v1: nodes, edges, neighbourhoods, aliases and releases.

Reads default to the active release (``?source=release``), which is what client apps route on;
``?source=draft`` shows the draft and needs a curator or reviewer role. Writes go to the draft and
need CURATE; publishing and activating releases need PUBLISH (admins).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from arg_platform.errors import Forbidden, RuleViolation, Violation
from arg_platform.handler_targets import handler_shown
from arg_platform.job_api import JobSerializer, job_accepted
from arg_platform.jobs import job_enqueue
from arg_platform.pagination import MAX_OFFSET
from ontology import graph_read, releases, services
from ontology.publish_jobs import publish_job_open
from ontology.selectors import release_list
from ontology.store.port import (
    AliasData,
    EdgeData,
    NodeData,
    is_direction,
    parameter_as_json,
    parameter_from_json,
)
from ontology.tasks import release_publish_task
from ontology.validator import client_text_warnings
from projects.access import Capability
from projects.api.base import ProjectScopedMixin

from . import serializers as s

PROJECT = OpenApiParameter("project", OpenApiTypes.STR, OpenApiParameter.PATH, description="project slug")
SOURCE = OpenApiParameter(
    "source", str, enum=["release", "draft"], description="active release (default) or draft"
)
NODE_ID = OpenApiParameter("node_id", OpenApiTypes.STR, OpenApiParameter.PATH)
VERSION = OpenApiParameter("version", OpenApiTypes.INT, OpenApiParameter.PATH)


def _valid(serializer_class: type, data: Any, **kwargs: Any) -> dict[str, Any]:
    serializer = serializer_class(data=data, **kwargs)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def node_json(node: NodeData, *, show_handler_target: bool, show_staff_texts: bool = True) -> dict[str, Any]:
    """The node as the API shows it. A ``webhook:<url>`` handler's URL names internal infrastructure:
    callers who cannot curate (client tokens, reviewers) see ``webhook`` only. ``staff_notes`` and
    ``description`` are for staff: callers who can neither curate nor review see the client text only."""
    data = asdict(node)
    data.pop("embedding", None)
    if not show_staff_texts:
        data.pop("staff_notes", None)
        data.pop("description", None)
    data["parameters"] = [parameter_as_json(p) for p in node.parameters]
    data["handler"] = handler_shown(data.get("handler", ""), curator=show_handler_target)
    return data


class GraphReadMixin(ProjectScopedMixin):
    def node_json(self, node: NodeData) -> dict[str, Any]:
        return node_json(
            node,
            show_handler_target=self.access.can(Capability.CURATE),
            show_staff_texts=self.access.can(Capability.CURATE) or self.access.can(Capability.REVIEW),
        )

    def node_json_with_warnings(self, node: NodeData) -> dict[str, Any]:
        """The node, and the validator's warnings about it (saved anyway; see ``client_text_warnings``)."""
        warnings = client_text_warnings(node)
        return {
            **self.node_json(node),
            "warnings": [{"rule": w.rule, "message": w.message, "field": w.field} for w in warnings],
        }

    def source(self, request: Request) -> str:
        source = request.query_params.get("source", graph_read.RELEASE)
        if source not in (graph_read.RELEASE, graph_read.DRAFT):
            raise RuleViolation(Violation("api.source", "source must be 'release' or 'draft'", "source"))
        if source == graph_read.DRAFT and not (
            self.access.can(Capability.CURATE) or self.access.can(Capability.REVIEW)
        ):
            raise Forbidden("the draft is visible to curators and reviewers only")
        return source


@extend_schema(parameters=[PROJECT])
class NodeListView(GraphReadMixin, APIView):
    @extend_schema(
        parameters=[
            SOURCE,
            OpenApiParameter("type", str),
            OpenApiParameter("status", str),
            OpenApiParameter("label", str),
            OpenApiParameter("search", str),
            OpenApiParameter("offset", int),
            OpenApiParameter("limit", int),
        ],
        responses=s.NodeSerializer(many=True),
    )
    def get(self, request: Request, project: str) -> Response:
        q = request.query_params
        try:
            # offset bounded: beyond 64 bits the database raised OverflowError (a 500 the API fuzzer found)
            offset = min(max(int(q.get("offset", 0)), 0), MAX_OFFSET)
            limit = min(max(int(q.get("limit", 50)), 1), 500)
        except ValueError as exc:
            raise RuleViolation(
                Violation("api.paging", "offset and limit must be integers", "limit")
            ) from exc
        nodes, total = graph_read.read_nodes(
            project=self.project,
            source=self.source(request),
            type=q.get("type"),
            status=q.get("status"),
            label=q.get("label"),
            search=q.get("search"),
            offset=offset,
            limit=limit,
        )
        return Response(
            {"count": total, "offset": offset, "limit": limit, "results": [self.node_json(n) for n in nodes]}
        )

    @extend_schema(request=s.NodeSerializer, responses={201: s.NodeSavedSerializer})
    def post(self, request: Request, project: str) -> Response:
        data = _valid(s.NodeSerializer, request.data)
        node = NodeData(
            node_id=data["node_id"],
            type=data["type"],
            title=data["title"],
            chunk=data["chunk"],
            staff_notes=data["staff_notes"],
            description=data["description"],
            risk=data["risk"],
            labels=tuple(data["labels"]),
            clusters=tuple(data["clusters"]),
            products=tuple(data["products"]),
            preconditions=tuple(data["preconditions"]),
            parameters=tuple(parameter_from_json(p) for p in data["parameters"]),
            handler=data["handler"],
        )
        node = services.node_create(project=self.project, actor=request.user, node=node)
        return Response(self.node_json_with_warnings(node), status=status.HTTP_201_CREATED)


@extend_schema(parameters=[PROJECT, NODE_ID])
class NodeDetailView(GraphReadMixin, APIView):
    @extend_schema(parameters=[SOURCE], responses=s.NodeSerializer)
    def get(self, request: Request, project: str, node_id: str) -> Response:
        return Response(
            self.node_json(
                graph_read.read_node(project=self.project, node_id=node_id, source=self.source(request))
            )
        )

    @extend_schema(request=s.NodeUpdateSerializer, responses=s.NodeSavedSerializer)
    def patch(self, request: Request, project: str, node_id: str) -> Response:
        data = _valid(s.NodeUpdateSerializer, request.data)
        changes: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        if "parameters" in data:
            changes["parameters"] = tuple(parameter_from_json(p) for p in data["parameters"])
        node = services.node_update(
            project=self.project, actor=request.user, node_id=node_id, changes=changes
        )
        return Response(self.node_json_with_warnings(node))


@extend_schema(parameters=[PROJECT, NODE_ID])
class NodeStatusView(GraphReadMixin, APIView):
    @extend_schema(request=s.NodeStatusSerializer, responses=s.NodeSerializer)
    def post(self, request: Request, project: str, node_id: str) -> Response:
        data = _valid(s.NodeStatusSerializer, request.data)
        node = services.node_set_status(project=self.project, actor=request.user, node_id=node_id, **data)
        return Response(self.node_json(node))


@extend_schema(parameters=[PROJECT, NODE_ID])
class NeighbourhoodView(GraphReadMixin, APIView):
    @extend_schema(
        parameters=[
            SOURCE,
            OpenApiParameter("direction", str, enum=["out", "in", "both"]),
            OpenApiParameter("depth", int),
            OpenApiParameter("limit", int),
        ],
        responses=s.NeighbourhoodSerializer,
    )
    def get(self, request: Request, project: str, node_id: str) -> Response:
        q = request.query_params
        direction = q.get("direction", "both")
        if not is_direction(direction):
            raise RuleViolation(
                Violation("graph.direction", "direction must be out, in or both", "direction")
            )
        try:
            depth, limit = min(max(int(q.get("depth", 1)), 1), 3), min(max(int(q.get("limit", 40)), 1), 200)
        except ValueError as exc:
            raise RuleViolation(Violation("api.paging", "depth and limit must be integers", "depth")) from exc
        hood = graph_read.read_neighbourhood(
            project=self.project,
            node_id=node_id,
            source=self.source(request),
            direction=direction,
            depth=depth,
            limit=limit,
        )
        return Response(
            {
                "center": hood.center,
                "source": hood.source,
                "nodes": [self.node_json(n) for n in hood.nodes],
                "edges": [asdict(e) for e in hood.edges],
            }
        )


@extend_schema(parameters=[PROJECT])
class EdgeView(ProjectScopedMixin, APIView):
    """Draft edges: POST adds, PATCH changes weight/semantics, DELETE removes (key in the body)."""

    @extend_schema(request=s.EdgeSerializer, responses={201: s.EdgeSerializer})
    def post(self, request: Request, project: str) -> Response:
        edge = services.edge_add(
            project=self.project, actor=request.user, edge=EdgeData(**_valid(s.EdgeSerializer, request.data))
        )
        return Response(asdict(edge), status=status.HTTP_201_CREATED)

    @extend_schema(request=s.EdgeSerializer, responses=s.EdgeSerializer)
    def patch(self, request: Request, project: str) -> Response:
        data = _valid(s.EdgeSerializer, request.data)
        edge = services.edge_update(project=self.project, actor=request.user, **data)
        return Response(asdict(edge))

    @extend_schema(request=s.EdgeKeySerializer, responses={204: None})
    def delete(self, request: Request, project: str) -> Response:
        data = _valid(s.EdgeKeySerializer, request.data)
        services.edge_remove(project=self.project, actor=request.user, **data)
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema(parameters=[PROJECT])
class AliasView(ProjectScopedMixin, APIView):
    @extend_schema(request=s.AliasSerializer, responses={201: s.AliasSerializer})
    def post(self, request: Request, project: str) -> Response:
        data = _valid(s.AliasSerializer, request.data)
        alias = services.alias_add(
            project=self.project,
            actor=request.user,
            alias=AliasData(data["source"], tuple(data["targets"]), data["reason"]),
        )
        return Response(
            {"source": alias.source, "targets": list(alias.targets), "reason": alias.reason},
            status=status.HTTP_201_CREATED,
        )


@extend_schema(parameters=[PROJECT])
class ReleaseListView(ProjectScopedMixin, APIView):
    write_capability = Capability.PUBLISH

    @extend_schema(responses=s.ReleaseSerializer(many=True))
    def get(self, request: Request, project: str) -> Response:
        return Response(s.ReleaseSerializer(release_list(project=self.project), many=True).data)

    @extend_schema(
        request=s.PublishSerializer,
        responses={202: JobSerializer},
        description="Queue the publication of the draft as a job: 202 with the job (Location: its URL); "
        "GET the job until it is SUCCEEDED (result.release: the version; result.published false when "
        "the draft was identical to the active release, nothing published) or FAILED (result.error, "
        "result.rules). Review the draft first with GET releases/draft/ and send its digest as "
        "draft_digest: a draft that moved since fails the job (rule release.draft_moved).",
    )
    def post(self, request: Request, project: str) -> Response:
        data = _valid(s.PublishSerializer, request.data)
        job = publish_job_open(
            project=self.project, actor=request.user, notes=data["notes"], draft_digest=data["draft_digest"]
        )
        job_enqueue(job, release_publish_task)
        return job_accepted(job, request)


@extend_schema(parameters=[PROJECT])
class DraftReviewView(ProjectScopedMixin, APIView):
    """The draft against the active release: what publishing would change (admins)."""

    @extend_schema(responses=s.DraftReviewSerializer)
    def get(self, request: Request, project: str) -> Response:
        if not self.access.can(Capability.PUBLISH):
            raise Forbidden("only a project admin reviews the draft for publication")
        review = releases.draft_review(project=self.project)
        return Response(
            {
                "active_version": review.active.version if review.active else None,
                "digest": review.digest,
                "unchanged": review.unchanged,
                "violations": [
                    {"rule": v.rule, "message": v.message, "field": v.field} for v in review.violations
                ],
                "warnings": [
                    {"rule": v.rule, "message": v.message, "field": v.field} for v in review.warnings
                ],
                "diff": asdict(review.diff),
            }
        )


@extend_schema(parameters=[PROJECT, VERSION])
class ReleaseDetailView(ProjectScopedMixin, APIView):
    @extend_schema(responses=s.ReleaseSerializer)
    def get(self, request: Request, project: str, version: int) -> Response:
        return Response(s.ReleaseSerializer(releases.release_get(project=self.project, version=version)).data)


@extend_schema(parameters=[PROJECT, VERSION])
class ReleaseActivateView(ProjectScopedMixin, APIView):
    write_capability = Capability.PUBLISH

    @extend_schema(request=s.ActivateSerializer, responses=s.ReleaseSerializer)
    def post(self, request: Request, project: str, version: int) -> Response:
        data = _valid(s.ActivateSerializer, request.data)
        release = releases.release_activate(
            release=releases.release_get(project=self.project, version=version),
            actor=request.user,
            reason=data["reason"],
        )
        return Response(s.ReleaseSerializer(release).data)


@extend_schema(parameters=[PROJECT, VERSION])
class ReleaseDiffView(ProjectScopedMixin, APIView):
    @extend_schema(
        parameters=[OpenApiParameter("against", int, description="the older version (default: previous)")],
        responses=s.ReleaseDiffSerializer,
    )
    def get(self, request: Request, project: str, version: int) -> Response:
        new = releases.release_get(project=self.project, version=version)
        try:
            against = int(request.query_params.get("against", version - 1))
        except ValueError as exc:
            raise RuleViolation(
                Violation("api.against", "against must be a version number", "against")
            ) from exc
        old = releases.release_get(project=self.project, version=against)
        return Response(asdict(releases.release_diff(old=old, new=new)))
