"""``POST /api/v1/infer`` and ``POST /api/v1/feedback``.

The caller is a project API token (its policy role selects the policy) or a signed-in person with
``?project=<slug>``. Every request that passed authentication leaves exactly one InferenceLog row,
including invalid and refused ones.
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
from inference.contracts import RequestContext, plain_fields
from inference.feedback import feedback_record
from inference.pipeline import InferenceRequest, InferenceResult
from inference.services import inference_refuse, inference_run
from projects.access import Capability, ProjectAccess
from projects.api.base import request_token
from projects.selectors import project_access_require

PROJECT_QUERY = OpenApiParameter("project", str, description="project slug (people only; tokens imply it)")


def caller_access(request: Request) -> ProjectAccess:
    token = request_token(request)
    slug = token.project.slug if token is not None else request.query_params.get("project", "")
    if not slug:
        raise RuleViolation(Violation("request.project", "name the project with ?project=<slug>", "project"))
    return project_access_require(user=request.user, token=token, slug=slug, capability=Capability.INFER)


def _violation_from_serializer(errors: dict[str, Any]) -> RuleViolation:
    violations = []
    for name, messages in errors.items():
        text = "; ".join(str(m) for m in (messages if isinstance(messages, list) else [messages]))
        violations.append(Violation(f"request.{name}", f"{name}: {text}", name))
    return RuleViolation(violations)


def _response_body(result: InferenceResult) -> dict[str, Any]:
    outcome = result.outcome
    assert outcome is not None
    restricted = result.decision is not None and str(result.decision.state) == "RESTRICT"
    nodes: list[dict[str, str]] = []
    edges: list[list[str]] = []
    if result.route is not None and not restricted:
        from ontology.snapshot_registry import pin_snapshot

        snapshot = pin_snapshot(result.request.project.pk)
        if snapshot is not None and snapshot.release_id == result.release_id:
            for node_id in result.route.path_nodes:
                view = snapshot.node(node_id)
                nodes.append({"node_id": node_id, "title": view.title, "type": view.type})
        edges = [list(e) for e in result.route.path_edges]
    body_outcome = plain_fields(outcome)
    body_outcome["kind"] = str(outcome.kind)
    body_outcome["info_status"] = str(outcome.info_status) if outcome.info_status else None
    return {
        "request_id": result.request.request_id,
        "release": {"id": result.release_id, "version": result.release_version},
        "outcome": body_outcome,
        "path": {"nodes": nodes, "edges": edges},
        "explanation": result.explanation,
        "labels": result.weaver.l_final if result.weaver else {},
        "confidence": result.weaver.confidence if result.weaver else None,
        "flags": result.flags,
        "policy": {
            "state": str(result.decision.state) if result.decision else None,
            "response_mode": str(result.decision.response_mode) if result.decision else None,
        },
        "timings_ms": result.timings_ms,
        "disambiguation": None
        if result.clarified is None
        else {"request_id": result.clarified.request_id, **result.clarified.option.as_json()},
    }


def _disambiguation(valid: dict[str, Any]) -> tuple[str, str] | None:
    given = valid.get("disambiguation")
    return (given["request_id"], given["choice"]) if given else None


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
        request_id = getattr(request._request, "request_id", None) or ""
        correlation_id = getattr(request._request, "correlation_id", "")
        role = token.role.key if token is not None and token.role is not None else None
        parse_error: ParseError | None
        try:
            data = request.data
        except ParseError as exc:
            data, parse_error = None, exc
        else:
            parse_error = None
        valid = s.plain_infer_request(data) if parse_error is None else None
        if valid is None:  # not a plain request: the serializer decides, with its field messages
            valid = self._validated(request_id, correlation_id, access, data, parse_error, token, role)
        context = RequestContext(
            **{**valid.get("context", {}), "history": tuple(valid.get("context", {}).get("history", ()))}
        )
        result = inference_run(
            InferenceRequest(
                request_id=request_id,
                project=access.project,
                prompt=valid["prompt"],
                context=context,
                token=token,
                correlation_id=correlation_id,
                caller=f"token:{token.pk}" if token is not None else f"user:{request.user.pk}",
                default_role=role,
                role_fixed=not access.can(Capability.CURATE),
                parameters=dict(valid.get("parameters") or {}),
                dry_run=valid["dry_run"],
                idempotency_key=valid.get("idempotency_key") or None,
                disambiguation=_disambiguation(valid),
            )
        )
        if result.error is not None:
            raise result.error
        return Response(_response_body(result))

    @staticmethod
    def _validated(
        request_id: str,
        correlation_id: str,
        access: ProjectAccess,
        data: Any,
        parse_error: ParseError | None,
        token: Any,
        role: Any,
    ) -> dict[str, Any]:
        """The serializer's validated data; an invalid request is logged (its one row) and refused."""
        serializer = s.InferRequestSerializer(data=data if isinstance(data, dict) else {})
        if parse_error is None and isinstance(data, dict) and serializer.is_valid():
            return serializer.validated_data
        errors = (
            serializer.errors
            if parse_error is None and isinstance(data, dict)
            else {"body": ["send a JSON object"]}
        )
        sent = data.get("prompt") if isinstance(data, dict) else None
        prompt = sent if isinstance(sent, str) else ""
        refused = InferenceRequest(
            request_id,
            access.project,
            prompt,
            RequestContext(),
            token=token,
            correlation_id=correlation_id,
            default_role=role,
        )
        raise inference_refuse(refused, _violation_from_serializer(errors))


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
