"""API: knowledge pack download/upload and typology templates."""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import FileUploadParser, JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from projects.access import Capability
from projects.api.base import ProjectScopedMixin
from taxonomy import selectors, services
from taxonomy.file_guards import MULTIPART_OVERHEAD, content_length_check, upload_read
from taxonomy.packs import pack_dump, pack_export, pack_import
from taxonomy.packs.reader import pack_parse

from .serializers import TypologySerializer

PROJECT_PARAM = OpenApiParameter(
    "project", OpenApiTypes.STR, OpenApiParameter.PATH, description="project slug"
)


class PackImportSummarySerializer(serializers.Serializer):
    project = serializers.CharField()
    created = serializers.DictField(child=serializers.IntegerField())
    updated = serializers.DictField(child=serializers.IntegerField())


class PackMultiPartParser(MultiPartParser):
    """Multipart, refused before any of it is read when its Content-Length passes the import limit."""

    def parse(
        self,
        stream: IO[bytes],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        content_length_check((parser_context or {})["request"].META, overhead=MULTIPART_OVERHEAD)
        return super().parse(stream, media_type, parser_context)


class PackFileUploadParser(FileUploadParser):
    """A raw body named by ``Content-Disposition``, refused before it is read when its Content-Length
    passes the import limit."""

    def parse(
        self,
        stream: IO[bytes],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        content_length_check((parser_context or {})["request"].META)
        return super().parse(stream, media_type, parser_context)


class PackView(ProjectScopedMixin, APIView):
    """GET: the project as a knowledge pack (YAML, or JSON with ``?format=json``).
    POST: import a pack into this project (all-or-nothing; multipart field ``file`` or a raw body)."""

    parser_classes = [PackMultiPartParser, PackFileUploadParser, JSONParser]
    read_capability = Capability.CURATE  # a pack holds policies too: curators only

    @extend_schema(
        parameters=[PROJECT_PARAM, OpenApiParameter("format", str, enum=["yaml", "json"])],
        responses={(200, "application/yaml"): OpenApiTypes.STR},
    )
    def get(self, request: Request, project: str) -> HttpResponse:
        fmt = "json" if request.query_params.get("format") == "json" else "yaml"
        body = pack_dump(pack_export(project=self.project), fmt=fmt)
        response = HttpResponse(
            body, content_type="application/json" if fmt == "json" else "application/yaml"
        )
        response["Content-Disposition"] = f'attachment; filename="{self.project.slug}-pack.{fmt}"'
        return response

    @extend_schema(
        parameters=[PROJECT_PARAM],
        request={
            "multipart/form-data": {
                "type": "object",
                "properties": {"file": {"type": "string", "format": "binary"}},
            }
        },
        responses={200: PackImportSummarySerializer},
    )
    def post(self, request: Request, project: str) -> Response:
        upload = request.data.get("file")
        if upload is None:
            raise serializers.ValidationError({"file": ["upload the pack as the multipart field 'file'"]})
        try:
            text = upload_read(upload).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise serializers.ValidationError({"file": ["the pack must be UTF-8 text"]}) from exc
        name = getattr(upload, "name", "upload.yaml")
        doc = pack_parse(text, source=name, fmt="json" if name.endswith(".json") else None)
        result = pack_import(doc, actor=request.user, project_slug=self.project.slug)
        return Response(
            PackImportSummarySerializer(
                {"project": result.project.slug, "created": result.created, "updated": result.updated}
            ).data
        )


class TypologyTemplateListView(APIView):
    """Shared context typology templates, which any project can copy."""

    @extend_schema(responses=TypologySerializer(many=True))
    def get(self, request: Request) -> Response:
        return Response(TypologySerializer(selectors.typology_list(project=None), many=True).data)


class TypologyCopySerializer(serializers.Serializer):
    template = serializers.CharField(max_length=63)
    key = serializers.CharField(max_length=63, required=False)


class TypologyCopyView(ProjectScopedMixin, APIView):
    """Copy a shared typology template into this project."""

    write_capability = Capability.CURATE

    @extend_schema(
        parameters=[PROJECT_PARAM], request=TypologyCopySerializer, responses={201: TypologySerializer}
    )
    def post(self, request: Request, project: str) -> Response:
        serializer = TypologyCopySerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        typology = services.typology_copy_from_template(
            project=self.project,
            actor=request.user,
            template_key=serializer.validated_data["template"],
            key=serializer.validated_data.get("key"),
        )
        return Response(TypologySerializer(typology).data, status=status.HTTP_201_CREATED)
