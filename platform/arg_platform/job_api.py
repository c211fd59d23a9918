"""API: a job's state (``arg_platform.jobs``) — what a ``202`` answer points at.

``GET projects/<slug>/jobs/<id>/`` answers the job's kind, status, progress, message, the tail of its
log and its result (e.g. the release it published) or error. Readers of the project see its jobs; a
job of another project is a 404 like an unknown one.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from projects.api.base import ProjectScopedMixin

from .errors import NotFound
from .models import Job

LOG_LINES = 50


class JobSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField()
    log = serializers.SerializerMethodField()

    class Meta:
        model = Job
        fields = [
            "id",
            "url",
            "kind",
            "status",
            "progress",
            "message",
            "log",
            "result",
            "created_at",
            "started_at",
            "finished_at",
        ]

    def get_url(self, job: Job) -> str:
        return job_url(job, self.context.get("request"))

    def get_log(self, job: Job) -> list[str]:
        return job.log.splitlines()[-LOG_LINES:]


def job_url(job: Job, request: Any = None) -> str:
    """The job's API URL (absolute when the request is known); only a project's job has one."""
    assert job.project is not None
    return reverse("api-job-detail", kwargs={"project": job.project.slug, "pk": job.pk}, request=request)


def job_accepted(job: Job, request: Request) -> Response:
    """``202 Accepted`` with the job's state and its URL in ``Location``: poll it with GET."""
    data = JobSerializer(job, context={"request": request}).data
    return Response(data, status=202, headers={"Location": data["url"]})


@extend_schema(parameters=[OpenApiParameter("project", str, OpenApiParameter.PATH)])
class JobDetailView(ProjectScopedMixin, APIView):
    @extend_schema(
        parameters=[OpenApiParameter("pk", int, OpenApiParameter.PATH)],
        responses=JobSerializer,
        description="A job's state. Poll it until `status` is SUCCEEDED or FAILED; `result.release` is "
        "the release version it published (publication jobs and applications of approved proposals).",
    )
    def get(self, request: Request, project: str, pk: int) -> Response:
        job = Job.objects.filter(pk=pk, project=self.project).select_related("project").first()
        if job is None:
            raise NotFound("no such job in this project")
        return Response(JobSerializer(job, context={"request": request}).data)
