"""``POST /api/v1/infer``, ``POST /api/v1/feedback`` and ``POST /api/v1/projects/<slug>/erasures/``.

The caller is a project API token (its policy role selects the policy) or a signed-in person with
``?project=<slug>``. Every request that passed authentication leaves exactly one InferenceLog row,
including invalid and refused ones. An erasure (``inference.erasure``) deletes one end user's logs and
memory; only the project's admins (a person, by session or personal token) may ask for it.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import ParseError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from arg_platform.errors import RuleViolation, Violation
from inference.api import serializers as s
from inference.erasure import user_data_erase, user_id_digest
from inference.feedback import feedback_record
from inference.response_body import infer_response_body
from inference.services import Caller, inference_call
from projects.access import Capability, ProjectAccess
from projects.api.base import ProjectScopedMixin, request_token
from projects.selectors import project_access_require

PROJECT_QUERY = OpenApiParameter("project", str, description="project slug (people only; tokens imply it)")


def caller_access(request: Request) -> ProjectAccess:
    token = request_token(request)
    slug = token.project.slug if token is not None else request.query_params.get("project", "")
    if not slug:
        raise RuleViolation(Violation("request.project", "name the project with ?project=<slug>", "project"))
    return project_access_require(user=request.user, token=token, slug=slug, capability=Capability.INFER)


def _json_body(request: Request) -> Any:
    """The parsed JSON body, or ``None`` when it is not JSON (refused like any body that is no object)."""
    try:
        return request.data
    except ParseError:
        return None


class InferView(APIView):
    """Route a prompt with its context to an Action, an Info answer, a memory read/write or a refusal."""

    @extend_schema(
        parameters=[PROJECT_QUERY],
        request=s.InferRequestSerializer,
        responses={200: s.InferResponseSerializer},
    )
    def post(self, request: Request) -> Response:
        access = caller_access(request)
        token = request_token(request)
        caller = Caller(
            project=access.project,
            request_id=getattr(request._request, "request_id", None) or "",
            name=f"token:{token.pk}" if token is not None else f"user:{request.user.pk}",
            token=token,
            correlation_id=getattr(request._request, "correlation_id", ""),
            role=token.role.key if token is not None and token.role is not None else None,
            role_fixed=not access.can(Capability.CURATE),
        )
        result = inference_call(caller=caller, body=_json_body(request))
        if result.error is not None:
            raise result.error
        return Response(infer_response_body(result))


class FeedbackView(APIView):
    """Record an explicit signal about an earlier request (helpful yes/no, "X or Y" choice, action result)."""

    @extend_schema(
        parameters=[PROJECT_QUERY],
        request=s.FeedbackSerializer,
        responses={200: s.FeedbackResponseSerializer},
    )
    def post(self, request: Request) -> Response:
        access = caller_access(request)
        serializer = s.FeedbackSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        log = feedback_record(project_id=access.project.pk, **data)
        return Response(
            {
                "request_id": log.request_id,
                "outcome_status": log.outcome_status,
                "silent_outcome": log.silent_outcome,
            },
            status=status.HTTP_200_OK,
        )


class ErasureView(ProjectScopedMixin, APIView):
    """Erase one end user's data in this project: the request logs sent with ``context.user_id`` = the id
    (with their feedback and action runs) and the user's memory, in one transaction; the audit trail
    records the counts and a hash of the id. Project admins only (client tokens: 403)."""

    write_capability = Capability.ADMIN

    @extend_schema(
        parameters=[OpenApiParameter("project", str, OpenApiParameter.PATH, description="project slug")],
        request=s.ErasureRequestSerializer,
        responses={200: s.ErasureResponseSerializer},
    )
    def post(self, request: Request, project: str) -> Response:
        serializer = s.ErasureRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        user_id = serializer.validated_data["user_id"]
        counts = user_data_erase(project=self.project, user_id=user_id, actor=request.user)
        return Response({"user": user_id_digest(user_id), "counts": counts}, status=status.HTTP_200_OK)
