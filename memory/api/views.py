"""``POST /api/v1/memory`` (write a fact through the guarded MemoryWrite path), ``GET /api/v1/memory``
(read: filtered list, or ranked and alias-safe with ``?q=``) and ``GET /api/v1/memory/merge-bar`` (the
project's merge bar, read-only: it is set on the UNSURE staging page).

The caller is a project API token (its project; its policy role decides which scopes it may write and
read) or a signed-in person with ``?project=<slug>`` (curators and reviewers: every scope). Both need
the ``memory`` capability.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import ParseError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from arg_platform.embedder import get_embedder
from arg_platform.errors import RuleViolation, Violation
from ontology.snapshot_registry import pin_snapshot
from projects.access import Capability, ProjectAccess
from projects.api.base import request_token
from projects.models import ApiToken
from projects.selectors import project_access_require
from taxonomy.models import Role

from .. import selectors, services
from ..comparator import DEFAULT_PARAMS
from ..models import EpisodicMemory, Scope
from . import serializers as s

PROJECT_QUERY = OpenApiParameter("project", str, description="project slug (people only; tokens imply it)")
READ_PARAMETERS = [
    PROJECT_QUERY,
    OpenApiParameter("q", str, description="text to rank memories by (vector + graph rerank); else newest"),
    OpenApiParameter("user_id", str, description="the user whose USER memories to read"),
    OpenApiParameter("org_id", str, description="the org whose ORG memories to read"),
    OpenApiParameter("scope", str, enum=list(Scope.values)),
    OpenApiParameter("info_type", str),
    OpenApiParameter("label", str, description="a LabelID"),
    OpenApiParameter("session_id", str),
    OpenApiParameter("limit", OpenApiTypes.INT, description="at most 100 (default 20)"),
    OpenApiParameter(
        "hops", OpenApiTypes.INT, description="multi-hop expansion of a ranked read, 0–3 (default 1)"
    ),
]


def memory_access(request: Request) -> ProjectAccess:
    token = request_token(request)
    slug = token.project.slug if token is not None else request.query_params.get("project", "")
    if not slug:
        raise RuleViolation(Violation("request.project", "name the project with ?project=<slug>", "project"))
    return project_access_require(user=request.user, token=token, slug=slug, capability=Capability.MEMORY)


def token_memory_scopes(access: ProjectAccess, token: ApiToken | None) -> frozenset[str] | None:
    """The scopes a client token's policy role may write (None: a person, who may write any scope).

    The active release's frozen policy of the role decides (as for ``/infer``); before any release, the
    draft's.
    A token without a role in a project whose policies define roles gets no scope.
    """
    if token is None:
        return None
    role_key = token.role.key if token.role is not None else None
    snapshot = pin_snapshot(access.project.pk)
    if snapshot is not None:
        roles = {r["key"]: r["policy"] for r in snapshot.documents.get("roles", [])}
        if not roles:
            return frozenset({Scope.USER})
        if role_key not in roles:
            return frozenset()
        policies = snapshot.documents.get("policies", [])
        policy: dict[str, Any] = next((p for p in policies if p["key"] == roles[role_key]), {})
        return frozenset(policy.get("memory_scopes") or [])
    if not Role.objects.filter(project=access.project).exists():
        return frozenset({Scope.USER})
    role = Role.objects.filter(project=access.project, key=role_key).select_related("policy").first()
    return frozenset(role.policy.memory_scopes or []) if role is not None else frozenset()


def _violations(errors: dict[str, Any]) -> RuleViolation:
    out = []
    for name, messages in errors.items():
        text = "; ".join(str(m) for m in (messages if isinstance(messages, list) else [messages]))
        out.append(Violation(f"request.{name}", f"{name}: {text}", name))
    return RuleViolation(out)


def _int_param(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name, "")
    if raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise RuleViolation(Violation("request.param", f"{name} is an integer", name)) from None
    if not low <= value <= high:
        raise RuleViolation(Violation("request.param", f"{name} is between {low} and {high}", name))
    return value


def _registry_body(result: services.MemoryWriteResult) -> dict[str, Any] | None:
    if result.registry is None:
        return None
    attempt = result.registry.attempt
    return {
        "attempt_id": attempt.pk,
        "info_key": attempt.info_key.key,
        "label_path_current": attempt.label_path_current,
        "decision": attempt.decision,
        "method": attempt.method,
        "unit_id": result.unit.pk if result.unit else None,
        "candidate_unit_id": attempt.candidate_unit_id,
        "top_k": attempt.top_k,
        "reasons": attempt.reasons,
    }


class MemoryView(APIView):
    """Episodic memory of a project: write one fact, or read what is remembered."""

    @extend_schema(
        parameters=[PROJECT_QUERY],
        request=s.MemoryWriteSerializer,
        responses={201: s.MemoryWriteResponseSerializer},
    )
    def post(self, request: Request) -> Response:
        """Write a fact: PII scrubbed (refused in GLOBAL scope), InfoType classified, label-gated, then
        deduplicated by the Info Registry (MATCH / NEW / UNSURE)."""
        access = memory_access(request)
        token = request_token(request)
        try:
            data = request.data
        except ParseError:
            data = None
        if not isinstance(data, dict):
            raise RuleViolation(Violation("request.body", "send a JSON object", "body"))
        serializer = s.MemoryWriteSerializer(data=data)
        if not serializer.is_valid():
            raise _violations(serializer.errors)
        valid = serializer.validated_data
        result = services.memory_write(
            project=access.project,
            text=valid["text"],
            scope=valid.get("scope", ""),
            info_type=valid.get("info_type") or None,
            user_id=valid.get("user_id", ""),
            org_id=valid.get("org_id", ""),
            session_id=valid.get("session_id", ""),
            request_id=valid.get("request_id") or getattr(request._request, "request_id", "") or "",
            label_ids=valid.get("labels", []),
            primary_label_id=valid.get("primary_label") or None,
            node_id=valid.get("node_id", ""),
            signal=valid["signal"],
            source=EpisodicMemory.Source.API,
            provenance={
                "token_id": token.pk if token is not None else None,
                "actor": getattr(request.user, "username", "") if token is None else "",
                "role": token.role.key if token is not None and token.role is not None else "",
            },
            corrects_id=valid.get("corrects"),
            occurred_at=valid.get("occurred_at"),
            allowed_scopes=token_memory_scopes(access, token),
        )
        body = {
            "memory": s.MemoryItemSerializer(result.episode).data,
            "registry": _registry_body(result),
            "flags": list(result.flags),
            "pii": list(result.pii_types),
        }
        return Response(body, status=status.HTTP_201_CREATED)

    @extend_schema(parameters=READ_PARAMETERS, responses={200: s.MemoryReadResponseSerializer})
    def get(self, request: Request) -> Response:
        """Read memories: the newest matching the filters, or with ``q`` the most relevant ones
        (vector hits graph-reranked, multi-hop expansion), each node followed through the split
        redirection table of the active release."""
        access = memory_access(request)
        token = request_token(request)
        params = request.query_params
        limit = _int_param(request, "limit", 20, 1, 100)
        hops = _int_param(request, "hops", 1, 0, 3)
        scope = params.get("scope", "").upper()
        if scope and scope not in Scope.values:
            raise RuleViolation(Violation("request.scope", f"unknown scope {scope!r}", "scope"))
        user_id, org_id = params.get("user_id", ""), params.get("org_id", "")
        writable = token_memory_scopes(access, token)
        readable = None if writable is None else set(writable) | {Scope.GLOBAL}
        if readable is not None and scope:
            readable &= {scope}
        elif scope:
            readable = {scope}
        query_text = params.get("q", "").strip()
        if query_text:
            everything = token is None and not user_id and not org_id
            return Response(
                self._ranked(
                    access, query_text, user_id, org_id, readable, scope, everything, params, limit, hops
                )
            )
        items = selectors.memory_list(
            project=access.project,
            info_type=params.get("info_type", ""),
            label_id=params.get("label", ""),
            session_id=params.get("session_id", ""),
            scope=scope,
            user_id=user_id if token is None else "",
            org_id=org_id if token is None else "",
        )
        if token is not None:  # a client app reads only its users', its orgs' and GLOBAL memories
            items = items.filter(selectors.scope_filter(user_id=user_id, org_id=org_id, scopes=readable))
        rows = list(items[:limit])
        results = [
            {
                "memory": s.MemoryItemSerializer(item).data,
                "score": 1.0,
                "similarity": 1.0,
                "graph_score": 0.0,
                "via": "list",
                "redirected": False,
            }
            for item in rows
        ]
        return Response({"count": len(results), "results": results})

    def _ranked(
        self,
        access: ProjectAccess,
        query_text: str,
        user_id: str,
        org_id: str,
        readable: set[str] | None,
        scope: str,
        everything: bool,
        params: Any,
        limit: int,
        hops: int,
    ) -> dict[str, Any]:
        from ..canonical import normalize

        snapshot = pin_snapshot(access.project.pk)
        label = params.get("label", "")
        result = selectors.memory_read(
            project=access.project,
            query=get_embedder().embed_one(normalize(query_text[:2000])),
            user_id=user_id,
            org_id=org_id,
            scopes=readable,
            everything=everything,
            scope=scope,
            label_ids=[label] if label else [],
            info_type=params.get("info_type", ""),
            k=limit,
            max_hops=hops,
            resolve_alias=snapshot.resolve_alias if snapshot is not None else None,
        )
        if result.redirects:
            services.memory_redirect_soft_update(
                redirects=result.redirects, release_version=snapshot.version if snapshot else None
            )
        results = []
        for item in result.items:
            data = s.MemoryItemSerializer(item.episode).data
            data["node_ids_current"] = list(item.node_ids_current)
            results.append(
                {
                    "memory": data,
                    "score": item.hit.score,
                    "similarity": item.hit.similarity,
                    "graph_score": item.hit.graph_score,
                    "via": item.hit.via,
                    "redirected": item.redirected,
                }
            )
        return {"count": len(results), "results": results}


class MergeBarView(APIView):
    """The project's merge bar (read-only; a project admin sets it on the UNSURE staging page)."""

    @extend_schema(parameters=[PROJECT_QUERY], responses={200: s.MergeBarSerializer})
    def get(self, request: Request) -> Response:
        """How many content words two statements may leave unexplained for the Info Registry to merge
        them without a reviewer (``identity_slack``), and the code default it starts from."""
        access = memory_access(request)
        params = selectors.registry_params(project=access.project)
        return Response(
            s.MergeBarSerializer(
                {"identity_slack": params.identity_slack, "default": DEFAULT_PARAMS.identity_slack}
            ).data
        )
