"""SKOS interoperability over the API: GET exports the taxonomy as Turtle, POST imports a concept scheme.

Reading needs READ (reviewers and API clients may export); importing needs CURATE and goes through
``taxonomy.skos.skos_import``, which validates the whole result before writing anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO, Any

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.parsers import BaseParser
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from arg_platform.errors import RuleViolation, Violation
from projects.api.base import ProjectScopedMixin
from taxonomy.file_guards import content_length_check, stream_read
from taxonomy.skos import DEFAULT_LANGUAGE, MEDIA_TYPE_FORMATS, skos_export, skos_import

from .views import PROJECT_PARAM

TURTLE = "text/turtle"


@dataclass(frozen=True)
class RdfDocument:
    """A request body in one RDF syntax (``fmt`` is the rdflib parser name)."""

    content: bytes
    fmt: str


class RdfParser(BaseParser):
    """Hands the raw body to rdflib; the media type picks the syntax. A body above the import limit is
    refused from its Content-Length, and no more than the limit plus one byte is ever read."""

    # DRF makes whatever parse answers the request's data; its stubs allow only a mapping
    def parse(  # type: ignore[override]
        self,
        stream: IO[bytes] | None,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> RdfDocument:
        content_length_check((parser_context or {})["request"].META)
        content = stream_read(stream, source="the request body") if stream is not None else b""
        return RdfDocument(content, MEDIA_TYPE_FORMATS[self.media_type])


class TurtleParser(RdfParser):
    media_type = TURTLE


class NTriplesParser(RdfParser):
    media_type = "application/n-triples"


class RdfXmlParser(RdfParser):
    media_type = "application/rdf+xml"


class TurtleRenderer(BaseRenderer):
    """Lets a client ask for ``Accept: text/turtle`` (the export is returned as Turtle either way)."""

    media_type = TURTLE
    format = "ttl"
    charset = "utf-8"

    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: Mapping[str, Any] | None = None,
    ) -> bytes:
        return data.encode("utf-8") if isinstance(data, str) else bytes(data or b"")


class SkosExportQuerySerializer(serializers.Serializer):
    language = serializers.RegexField(
        r"^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$",
        required=False,
        default=DEFAULT_LANGUAGE,
        help_text="language tag of the literals",
    )


class SkosImportQuerySerializer(SkosExportQuerySerializer):
    scheme = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=2000,
        help_text="the concept scheme to import when the file holds several",
    )
    dry_run = serializers.BooleanField(
        required=False, default=False, help_text="validate and report without writing"
    )


class SkosImportSummarySerializer(serializers.Serializer):
    clusters_created = serializers.IntegerField()
    clusters_updated = serializers.IntegerField()
    labels_created = serializers.IntegerField()
    labels_updated = serializers.IntegerField()
    labels_unchanged = serializers.IntegerField()
    warnings = serializers.ListField(child=serializers.CharField())
    dry_run = serializers.BooleanField()


@extend_schema(parameters=[PROJECT_PARAM])
class SkosView(ProjectScopedMixin, APIView):
    """The project's taxonomy as a SKOS concept scheme."""

    parser_classes = [TurtleParser, NTriplesParser, RdfXmlParser]
    renderer_classes = [JSONRenderer, TurtleRenderer]

    @extend_schema(
        parameters=[SkosExportQuerySerializer],
        description="Export the taxonomy as one SKOS concept scheme in Turtle (deterministic).",
        responses={(200, TURTLE): OpenApiResponse(OpenApiTypes.STR, description="SKOS in Turtle")},
    )
    def get(self, request: Request, project: str) -> HttpResponse:
        query = SkosExportQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        text = skos_export(project=self.project, language=query.validated_data["language"])
        response = HttpResponse(text, content_type=f"{TURTLE}; charset=utf-8")
        response["Content-Disposition"] = f'inline; filename="{self.project.slug}-taxonomy.ttl"'
        return response

    @extend_schema(
        parameters=[SkosImportQuerySerializer],
        request={
            TURTLE: OpenApiTypes.STR,
            "application/n-triples": OpenApiTypes.STR,
            "application/rdf+xml": OpenApiTypes.STR,
        },
        description="Import a SKOS concept scheme, all or nothing: every rule of the taxonomy "
        "validator is checked before anything is written.",
        responses={(200, "application/json"): SkosImportSummarySerializer},
    )
    def post(self, request: Request, project: str) -> Response:
        query = SkosImportQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        document = request.data
        if not isinstance(document, RdfDocument) or not document.content.strip():
            raise RuleViolation(
                Violation(
                    "skos.parse", f"the request body is empty: send a SKOS concept scheme as {TURTLE}", "file"
                )
            )
        result = skos_import(
            project=self.project,
            actor=request.user,
            data=document.content,
            fmt=document.fmt,
            language=query.validated_data["language"],
            scheme=query.validated_data["scheme"] or None,
            source="api",
            dry_run=query.validated_data["dry_run"],
        )
        return Response(result.as_dict())

    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any) -> Any:
        response = super().finalize_response(request, response, *args, **kwargs)
        if isinstance(response, Response) and not isinstance(response.data, str):
            # summaries and errors are JSON even when the client asked for Turtle
            response.accepted_renderer, response.accepted_media_type = JSONRenderer(), "application/json"
        return response
