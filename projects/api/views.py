"""API: the projects a caller can see, and who the caller is."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from projects.models import Project
from projects.selectors import project_list_for_user

from .base import request_token


class ProjectSerializer(serializers.ModelSerializer):
    class Meta:
        model = Project
        fields = ["slug", "name", "description", "knowledge_revision", "created_at"]


class WhoAmISerializer(serializers.Serializer):
    kind = serializers.CharField()
    name = serializers.CharField()
    project = serializers.CharField(allow_null=True)
    role = serializers.CharField(allow_null=True)


class ProjectListView(APIView):
    @extend_schema(responses=ProjectSerializer(many=True))
    def get(self, request: Request) -> Response:
        token = request_token(request)
        if token is not None:
            projects = Project.objects.filter(pk=token.project_id)
        else:
            projects = project_list_for_user(user=request.user)
        return Response(ProjectSerializer(projects, many=True).data)


class WhoAmIView(APIView):
    @extend_schema(responses=WhoAmISerializer)
    def get(self, request: Request) -> Response:
        token = request_token(request)
        data = {
            "kind": "client" if token is not None and token.user_id is None else "person",
            "name": str(request.user),
            "project": token.project.slug if token else None,
            "role": token.role.key if token is not None and token.role is not None else None,
        }
        return Response(WhoAmISerializer(data).data)
