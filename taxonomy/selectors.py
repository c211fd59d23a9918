"""Reads of core knowledge: the taxonomy tree, the validator's view, label index inputs."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet

from arg_platform.errors import NotFound
from projects.models import Project

from .models import Cluster, ContextTypology, Label, LabelIncompatibility, LabelStatus, Policy, Role
from .validator import LabelRecord, TaxonomyView, pair_key


def label_record(label: Label) -> LabelRecord:
    return LabelRecord(
        label_id=label.label_id,
        name=label.name,
        cluster=label.cluster.key,
        parent=label.parent.label_id if label.parent is not None else None,
        status=label.status,
        description=label.description,
        synonyms=tuple(label.synonyms),
        examples=tuple(label.examples),
    )


def taxonomy_view(*, project: Project) -> TaxonomyView:
    """The project's current taxonomy as the validator sees it."""
    labels = Label.objects.filter(project=project).select_related("cluster", "parent")
    incompat = LabelIncompatibility.objects.filter(project=project).select_related("label_a", "label_b")
    return TaxonomyView(
        clusters=frozenset(Cluster.objects.filter(project=project).values_list("key", flat=True)),
        labels={label.label_id: label_record(label) for label in labels},
        incompatibilities=frozenset(pair_key(i.label_a.label_id, i.label_b.label_id) for i in incompat),
    )


def cluster_list(*, project: Project) -> QuerySet[Cluster]:
    return Cluster.objects.filter(project=project).order_by("name")


def label_list(
    *, project: Project, status: str | None = None, search: str = "", cluster: str | None = None
) -> QuerySet[Label]:
    qs = Label.objects.filter(project=project).select_related("cluster", "parent")
    if status:
        qs = qs.filter(status=status)
    if cluster:
        qs = qs.filter(cluster__key=cluster)
    if search:
        from django.db.models import Q

        qs = qs.filter(
            Q(name__icontains=search)
            | Q(label_id__iexact=search)
            | Q(description__icontains=search)
            | Q(path__icontains=search)
        )
    return qs.order_by("path", "label_id")


def label_get(*, project: Project, label_id: str) -> Label:
    label = (
        Label.objects.filter(project=project, label_id=label_id).select_related("cluster", "parent").first()
    )
    if label is None:
        raise NotFound(f"label {label_id} not found")
    return label


@dataclass(frozen=True)
class TreeNode:
    """One label in the cluster → label tree, with its children."""

    label: Label
    children: tuple[TreeNode, ...]

    @property
    def descendant_count(self) -> int:
        return sum(1 + child.descendant_count for child in self.children)


@dataclass(frozen=True)
class ClusterTree:
    cluster: Cluster
    roots: tuple[TreeNode, ...]
    label_count: int


def taxonomy_tree(*, project: Project, include_deprecated: bool = True) -> list[ClusterTree]:
    """Clusters with their label trees, ordered by name (one query for labels)."""
    labels = list(Label.objects.filter(project=project).select_related("cluster").order_by("name"))
    if not include_deprecated:
        labels = [label for label in labels if label.status != LabelStatus.DEPRECATED]
    by_parent: dict[int | None, list[Label]] = {}
    for label in labels:
        by_parent.setdefault(label.parent_id, []).append(label)

    def build(label: Label) -> TreeNode:
        return TreeNode(label, tuple(build(child) for child in by_parent.get(label.pk, [])))

    trees = []
    for cluster in cluster_list(project=project):
        roots = tuple(build(label) for label in by_parent.get(None, []) if label.cluster_id == cluster.pk)
        trees.append(ClusterTree(cluster, roots, sum(1 + r.descendant_count for r in roots)))
    return trees


@dataclass(frozen=True)
class LabelIndexEntry:
    """Inputs of one label in the label index (ARG §2.3.1): name, description, cluster, examples."""

    label_id: str
    cluster: str
    text: str
    examples: tuple[str, ...]


def label_index_inputs(*, project: Project) -> list[LabelIndexEntry]:
    """What the Taxonomy Vector Store and the lexical index are built from: ACTIVE and SHADOW labels.

    SHADOW labels are indexed so they can be evaluated on live traffic; the Context Weaver never lets
    them route.
    """
    labels = Label.objects.filter(project=project, status__in=[LabelStatus.ACTIVE, LabelStatus.SHADOW])
    out = []
    for label in labels.select_related("cluster").order_by("label_id"):
        text = " | ".join(
            filter(None, [label.path or label.name, label.description, ", ".join(label.synonyms)])
        )
        out.append(LabelIndexEntry(label.label_id, label.cluster.key, text, tuple(label.examples)))
    return out


def typology_list(*, project: Project | None) -> QuerySet[ContextTypology]:
    return ContextTypology.objects.filter(project=project).order_by("key")


def policy_list(*, project: Project) -> QuerySet[Policy]:
    return Policy.objects.filter(project=project).order_by("key")


def role_list(*, project: Project) -> QuerySet[Role]:
    return Role.objects.filter(project=project).select_related("policy", "default_typology").order_by("key")


def labels_referencing_policy(*, project: Project, label_id: str) -> list[str]:
    """Keys of the policies whose label rules name ``label_id``."""
    return [
        p.key
        for p in Policy.objects.filter(project=project)
        if label_id in p.allowed_labels or label_id in p.forbidden_labels
    ]
