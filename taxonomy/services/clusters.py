"""Writes of clusters. A *cluster* is a stable top-level domain of the taxonomy, named by a key that
never changes; every label lives in one, and its name is the first step of each label's path."""

from __future__ import annotations

from django.db import transaction

from arg_platform.audit import Actor, audit_record
from arg_platform.errors import RuleViolation, Violation
from projects.models import Project

from ..models import Cluster, Label
from .knowledge import _full_clean, knowledge_changed
from .labels import _refresh_paths


@transaction.atomic
def cluster_create(*, project: Project, actor: Actor, key: str, name: str, description: str = "") -> Cluster:
    """Create a stable top-level domain."""
    cluster = Cluster(project=project, key=key.strip(), name=name.strip(), description=description)
    _full_clean(cluster, "cluster")
    if Cluster.objects.filter(project=project, key=cluster.key).exists():
        raise RuleViolation(Violation("cluster.unique_key", f"cluster key {key!r} already exists", "key"))
    if Cluster.objects.filter(project=project, name__iexact=cluster.name).exists():
        raise RuleViolation(
            Violation("cluster.unique_name", f"a cluster named {name!r} already exists", "name")
        )
    cluster.save()
    audit_record(
        project=project,
        actor=actor,
        action="create",
        object_type="cluster",
        object_key=cluster.key,
        after={"name": cluster.name, "description": cluster.description},
    )
    knowledge_changed(project=project)
    return cluster


@transaction.atomic
def cluster_update(*, cluster: Cluster, actor: Actor, name: str, description: str) -> Cluster:
    """Rename or re-describe a cluster (its key stays); refreshes the paths of its labels."""
    before = {"name": cluster.name, "description": cluster.description}
    if (
        Cluster.objects.filter(project=cluster.project, name__iexact=name.strip())
        .exclude(pk=cluster.pk)
        .exists()
    ):
        raise RuleViolation(
            Violation("cluster.unique_name", f"a cluster named {name!r} already exists", "name")
        )
    cluster.name, cluster.description = name.strip(), description
    _full_clean(cluster, "cluster")
    cluster.save()
    for root in Label.objects.filter(cluster=cluster, parent__isnull=True):
        _refresh_paths(root)
    audit_record(
        project=cluster.project,
        actor=actor,
        action="update",
        object_type="cluster",
        object_key=cluster.key,
        before=before,
        after={"name": cluster.name, "description": cluster.description},
    )
    knowledge_changed(project=cluster.project)
    return cluster
