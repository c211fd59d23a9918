"""Who may do what in a project.

``Capability`` names the kinds of act; ``CAPABILITIES`` is the authorization matrix of platform
roles; ``ProjectAccess`` is what a request holds once its caller is resolved to a project.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from .models import PlatformRole, Project


class Capability(enum.StrEnum):
    READ = "read"  # read taxonomy, typologies, policies, graph, releases
    CURATE = "curate"  # write taxonomy, typologies, policies, graph draft, import packs
    REVIEW = "review"  # decide on proposals, resolve UNSURE merges
    PUBLISH = "publish"  # publish / roll back releases
    ADMIN = "admin"  # memberships, tokens
    INFER = "infer"  # call the inference API
    MEMORY = "memory"  # read and write episodic memory through the API


CLIENT = "client"

CAPABILITIES: dict[str, frozenset[Capability]] = {
    PlatformRole.ADMIN: frozenset(Capability),
    PlatformRole.EXPERT: frozenset({Capability.READ, Capability.CURATE, Capability.INFER, Capability.MEMORY}),
    PlatformRole.REVIEWER: frozenset(
        {Capability.READ, Capability.REVIEW, Capability.INFER, Capability.MEMORY}
    ),
    CLIENT: frozenset({Capability.READ, Capability.INFER, Capability.MEMORY}),
}


@dataclass(frozen=True)
class ProjectAccess:
    """A caller resolved inside one project: its platform role (or ``client``) and policy role key."""

    project: Project
    role: str
    policy_role_id: int | None = None
    token_id: int | None = None

    def can(self, capability: Capability) -> bool:
        return capability in CAPABILITIES.get(self.role, frozenset())
