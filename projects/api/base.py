"""Base of every project-scoped API view: resolves the caller in ``<project>`` and checks capability."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import SAFE_METHODS
from rest_framework.request import Request

from projects.access import Capability, ProjectAccess
from projects.models import ApiToken
from projects.selectors import project_access_require


def request_token(request: Request) -> ApiToken | None:
    return request.auth if isinstance(request.auth, ApiToken) else None


class ProjectScopedMixin:
    """Reads need ``read_capability``; writes need ``write_capability`` (per action when overridden)."""

    read_capability = Capability.READ
    write_capability = Capability.CURATE
    access: ProjectAccess

    def capability_for(self, request: Request) -> Capability:
        return self.read_capability if request.method in SAFE_METHODS else self.write_capability

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)  # type: ignore[misc]
        self.access = project_access_require(
            user=request.user,
            token=request_token(request),
            slug=kwargs["project"],
            capability=self.capability_for(request),
        )

    @property
    def project(self) -> Any:
        if getattr(self, "swagger_fake_view", False):  # OpenAPI generation: no request, no project
            return None
        return self.access.project
