"""Importing a knowledge pack: validate everything first, then write everything in one transaction.

All-or-nothing: the pack is checked as a whole — item shapes, the deterministic taxonomy validator,
policy and typology rules, role references, the graph rules — and a single violation refuses the
import before any row is written. Writes then run as one unit of work across the Django database and
the graph store (``ontology.store.unit_of_work.graph_atomic``): a failure anywhere leaves both as they
were.

Stable ids are respected: an import may update labels by LabelID but never deletes one, and never
reuses a DEPRECATED LabelID for something else.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from arg_platform.audit import Actor, audit_record
from arg_platform.errors import RuleViolation, Violation, ViolationCollector
from projects.models import Project
from taxonomy.models import Cluster, ContextTypology, Label, LabelIncompatibility, LabelStatus, Policy, Role
from taxonomy.selectors import taxonomy_view
from taxonomy.services import (
    POLICY_FIELDS,
    TYPOLOGY_FIELDS,
    knowledge_changed,
    policy_defaults,
    typology_defaults,
)
from taxonomy.services.labels import _compute_path
from taxonomy.validator import (
    LabelRecord,
    TaxonomyView,
    pair_key,
    validate_policy,
    validate_taxonomy,
    validate_typology,
)

from .reader import SECTIONS, PackDocument

Progress = Callable[[str, int, int], None]

_TEXT = (str,)
_LIST = (list,)
_OPT_TEXT = (str, type(None))

SHAPES: dict[str, dict[str, tuple[tuple[type, ...], bool]]] = {
    # section -> field -> (accepted types, required)
    "clusters": {"key": (_TEXT, True), "name": (_TEXT, True), "description": (_OPT_TEXT, False)},
    "labels": {
        "id": (_TEXT, True),
        "name": (_TEXT, True),
        "cluster": (_TEXT, True),
        "parent": (_OPT_TEXT, False),
        "status": (_TEXT, False),
        "description": (_OPT_TEXT, False),
        "synonyms": (_LIST, False),
        "examples": (_LIST, False),
    },
    "incompatibilities": {"labels": (_LIST, True), "reason": (_OPT_TEXT, False)},
    "typologies": {"key": (_TEXT, True), "name": (_TEXT, True)},
    "policies": {"key": (_TEXT, True), "name": (_TEXT, True)},
    "roles": {
        "key": (_TEXT, True),
        "name": (_TEXT, True),
        "policy": (_TEXT, True),
        "default_typology": (_OPT_TEXT, False),
    },
    "distinct_terms": {"terms": (_LIST, True), "reason": (_OPT_TEXT, False)},
}
KEY_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")


@dataclass
class PackImportResult:
    project: Project
    created: dict[str, int] = field(default_factory=dict)
    updated: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        parts = [
            f"{k}: {self.created.get(k, 0)} new, {self.updated.get(k, 0)} updated"
            for k in sorted(set(self.created) | set(self.updated))
        ]
        return f"project {self.project.slug}: " + "; ".join(parts)


def _check_shapes(doc: PackDocument, out: ViolationCollector) -> None:
    for section, fields in SHAPES.items():
        for i, item in enumerate(doc.section(section)):
            path = f"{section}[{i}]"
            if not isinstance(item, dict):
                out.add("pack.shape", f"{path} must be a mapping", location=doc.where(path))
                continue
            for fname, (types, required) in fields.items():
                if fname not in item:
                    if required:
                        out.add("pack.shape", f"{path} lacks '{fname}'", fname, doc.where(path))
                elif not isinstance(item[fname], types):
                    out.add(
                        "pack.shape",
                        f"{path}.{fname} has the wrong type",
                        fname,
                        doc.where(f"{path}.{fname}"),
                    )
    for key in ("clusters", "typologies", "policies", "roles"):
        seen: set[str] = set()
        for i, item in enumerate(doc.section(key)):
            if isinstance(item, dict) and isinstance(item.get("key"), str):
                if not KEY_RE.match(item["key"]):
                    out.add(
                        "pack.key_format",
                        f"{key}[{i}].key {item['key']!r} must be lowercase [a-z0-9_-]",
                        "key",
                        doc.where(f"{key}[{i}].key"),
                    )
                if item["key"] in seen:
                    out.add(
                        "pack.duplicate_key",
                        f"{key}[{i}]: key {item['key']!r} appears twice",
                        "key",
                        doc.where(f"{key}[{i}].key"),
                    )
                seen.add(item["key"])
    seen_ids: set[str] = set()
    for i, item in enumerate(doc.section("labels")):
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            if item["id"] in seen_ids:
                out.add(
                    "pack.duplicate_key",
                    f"labels[{i}]: LabelID {item['id']} appears twice",
                    "id",
                    doc.where(f"labels[{i}].id"),
                )
            seen_ids.add(item["id"])


def _pack_view(doc: PackDocument) -> TaxonomyView:
    locations: dict[str, str] = {}
    labels: dict[str, LabelRecord] = {}
    for i, item in enumerate(doc.section("labels")):
        locations[f"label:{item['id']}"] = doc.where(f"labels[{i}]")
        labels[item["id"]] = LabelRecord(
            label_id=item["id"],
            name=item["name"],
            cluster=item["cluster"],
            parent=item.get("parent"),
            status=item.get("status", LabelStatus.ACTIVE),
            description=item.get("description") or "",
            synonyms=tuple(item.get("synonyms") or ()),
            examples=tuple(item.get("examples") or ()),
        )
    incompat: set[tuple[str, str]] = set()
    for i, item in enumerate(doc.section("incompatibilities")):
        pair = item["labels"]
        if len(pair) == 2 and all(isinstance(x, str) for x in pair):
            key = pair_key(pair[0], pair[1])
            incompat.add(key)
            locations[f"incompatibility:{key[0]}|{key[1]}"] = doc.where(f"incompatibilities[{i}]")
    return TaxonomyView(
        clusters=frozenset(c["key"] for c in doc.section("clusters")),
        labels=labels,
        incompatibilities=frozenset(incompat),
        locations=locations,
    )


def _check_distinct_terms(doc: PackDocument, out: ViolationCollector) -> None:
    """Each ``distinct_terms`` item is a set ``memory.distinctions.term_set`` accepts."""
    from memory.distinctions import term_set

    for i, item in enumerate(doc.section("distinct_terms")):
        for problem in term_set(item["terms"])[1]:
            out.add(
                "pack.distinct_terms",
                f"distinct_terms[{i}]: {problem}",
                "terms",
                doc.where(f"distinct_terms[{i}].terms"),
            )


def _typology_data(item: dict[str, Any]) -> dict[str, Any]:
    data = {**typology_defaults(), **item}
    data["weights"] = {**typology_defaults()["weights"], **(item.get("weights") or {})}
    return data


def _policy_data(item: dict[str, Any]) -> dict[str, Any]:
    return {**policy_defaults(), **item}


def _check_against_existing(project: Project, view: TaxonomyView, out: ViolationCollector) -> None:
    """Stable-id rules that need the database: no deletion, no reuse of a DEPRECATED LabelID."""
    existing = taxonomy_view(project=project)
    for label_id, old in existing.labels.items():
        new = view.labels.get(label_id)
        if new is None:
            out.add(
                "pack.label_missing",
                f"label {label_id} ({old.name!r}) exists in project {project.slug} but not in the pack; "
                "labels are never deleted — keep it (DEPRECATED if it is no longer used)",
                "labels",
            )
        elif old.status == LabelStatus.DEPRECATED and (
            new.status != LabelStatus.DEPRECATED or new.name != old.name
        ):
            out.add(
                "taxonomy.label_id_reuse",
                f"LabelID {label_id} is DEPRECATED ({old.name!r}) and cannot be reused for {new.name!r}",
                "labels",
                view.locations.get(f"label:{label_id}", ""),
            )


def _graph_of(doc: PackDocument) -> Any:
    from ontology.pack_graph import graph_data_from_pack

    return graph_data_from_pack(doc.section("nodes"), doc.section("edges"), doc.section("aliases"))


def pack_validate(doc: PackDocument, *, project: Project | None) -> list[Violation]:
    """Every rule an import must pass, without writing anything."""
    out = ViolationCollector()
    _check_shapes(doc, out)
    if out.violations:
        return out.violations
    view = _pack_view(doc)
    out.violations.extend(validate_taxonomy(view))
    for i, item in enumerate(doc.section("typologies")):
        out.violations.extend(validate_typology(_typology_data(item), loc=doc.where(f"typologies[{i}]")))
    defaults = [t["key"] for t in doc.section("typologies") if t.get("is_default")]
    if doc.section("typologies") and len(defaults) != 1:
        out.add(
            "pack.typology_default",
            f"exactly one typology must be the default (found {len(defaults)})",
            "typologies",
            doc.where("typologies"),
        )
    for i, item in enumerate(doc.section("policies")):
        out.violations.extend(validate_policy(view, _policy_data(item), loc=doc.where(f"policies[{i}]")))
    policy_keys = {p["key"] for p in doc.section("policies")}
    typology_keys = {t["key"] for t in doc.section("typologies")}
    for i, item in enumerate(doc.section("roles")):
        if item["policy"] not in policy_keys:
            out.add(
                "role.policy_exists",
                f"roles[{i}]: policy {item['policy']!r} is not in the pack",
                "policy",
                doc.where(f"roles[{i}].policy"),
            )
        if item.get("default_typology") and item["default_typology"] not in typology_keys:
            out.add(
                "role.typology_exists",
                f"roles[{i}]: typology {item['default_typology']!r} is not in the pack",
                "default_typology",
                doc.where(f"roles[{i}].default_typology"),
            )
    _check_distinct_terms(doc, out)
    if project is not None:
        _check_against_existing(project, view, out)
    from ontology.pack_graph import graph_locations
    from ontology.validator import validate_graph

    try:
        graph = _graph_of(doc)
    except (TypeError, ValueError, KeyError) as exc:
        out.add("pack.shape", f"nodes/edges/aliases: {exc}", "nodes", doc.where("nodes"))
        return out.violations
    out.violations.extend(
        validate_graph(
            graph,
            labels={lid: r.status for lid, r in view.labels.items()},
            clusters=set(view.clusters),
            locations=graph_locations(
                doc.section("nodes"), doc.section("edges"), doc.section("aliases"), doc.where
            ),
        )
    )
    return out.violations


def _noop(step: str, done: int, total: int) -> None:
    return None


def pack_import(
    doc: PackDocument, *, actor: Actor = None, project_slug: str | None = None, progress: Progress = _noop
) -> PackImportResult:
    """Import a pack into its project (created when missing); all-or-nothing."""
    meta = doc.data.get("project") or {}
    slug = project_slug or (meta.get("slug") if isinstance(meta, dict) else None)
    if not slug:
        raise RuleViolation(
            Violation(
                "pack.project",
                "the pack names no project slug and none was given",
                location=doc.where("project"),
            )
        )
    project = Project.objects.filter(slug=slug).first()
    if project is not None:
        # Re-importing replaces the project's knowledge: a section that is absent (a file cut short, a
        # truncated upload) would silently empty it. Emptiness must be written (`nodes: []`).
        missing = [name for name in SECTIONS if name not in doc.data]
        if missing:
            raise RuleViolation(
                Violation(
                    "pack.section_missing",
                    f"{doc.source}: sections {', '.join(missing)} are missing (a truncated file?); "
                    f"re-importing would empty them in project {slug} — write e.g. `{missing[0]}: []` "
                    "to mean none",
                    location=doc.source,
                )
            )
    progress("validate", 0, 1)
    violations = pack_validate(doc, project=project)
    if violations:
        raise RuleViolation(violations)
    progress("validate", 1, 1)
    # Late: taxonomy sits below ontology in the layering; the pack importer writes both (it belongs
    # with the knowledge packs on top, where the architecture issue moves it).
    from ontology.store import get_graph_store
    from ontology.store.unit_of_work import graph_atomic

    with graph_atomic():
        if project is None:
            from projects.services import project_create

            project = project_create(
                slug=slug, name=str(meta.get("name") or slug), description=str(meta.get("description") or "")
            )
        result = PackImportResult(project=project)
        _write_taxonomy(doc, project, result, progress)
        _write_profiles(doc, project, result, progress)
        if "distinct_terms" in doc.data:
            _write_distinct_terms(doc, project, result)
        progress("graph", 0, 1)
        graph = _graph_of(doc)
        get_graph_store().replace_graph(project.pk, graph)
        result.created["nodes"] = len(graph.nodes)
        result.created["edges"] = len(graph.edges)
        progress("graph", 1, 1)
        numbers = [int(item["id"][1:]) for item in doc.section("labels")]
        max_seq = max(numbers, default=0)
        Project.objects.filter(pk=project.pk, label_seq__lt=max_seq).update(label_seq=max_seq)
        audit_record(
            project=project,
            actor=actor,
            action="import",
            object_type="pack",
            object_key=doc.source,
            after={"created": result.created, "updated": result.updated},
        )
        knowledge_changed(project=project)
    return result


def _write_taxonomy(
    doc: PackDocument, project: Project, result: PackImportResult, progress: Progress
) -> None:
    clusters: dict[str, Cluster] = {c.key: c for c in Cluster.objects.filter(project=project)}
    for item in doc.section("clusters"):
        cluster = clusters.get(item["key"])
        is_new = cluster is None
        cluster = cluster or Cluster(project=project, key=item["key"])
        cluster.name, cluster.description = item["name"], item.get("description") or ""
        cluster.save()
        clusters[cluster.key] = cluster
        _count(result, "clusters", is_new)
    existing = {label.label_id: label for label in Label.objects.filter(project=project)}
    items = doc.section("labels")
    by_id = {item["id"]: item for item in items}
    ordered: list[dict[str, Any]] = []
    placed: set[str] = set()

    def place(item: dict[str, Any]) -> None:  # parents first (the validator excluded cycles)
        if item["id"] in placed:
            return
        if item.get("parent"):
            place(by_id[item["parent"]])
        placed.add(item["id"])
        ordered.append(item)

    for item in items:
        place(item)
    saved: dict[str, Label] = {}
    for i, item in enumerate(ordered):
        label = existing.get(item["id"])
        is_new = label is None
        label = label or Label(project=project, label_id=item["id"])
        label.name = item["name"]
        label.description = item.get("description") or ""
        label.cluster = clusters[item["cluster"]]
        label.parent = saved[item["parent"]] if item.get("parent") else None
        label.status = item.get("status", LabelStatus.ACTIVE)
        label.synonyms = list(item.get("synonyms") or [])
        label.examples = list(item.get("examples") or [])
        label.status_reason = item.get("status_reason") or label.status_reason
        label.path, label.depth = _compute_path(label)
        label.save()
        saved[label.label_id] = label
        _count(result, "labels", is_new)
        progress("labels", i + 1, len(ordered))
    LabelIncompatibility.objects.filter(project=project).delete()
    for item in doc.section("incompatibilities"):
        a, b = pair_key(*item["labels"])
        LabelIncompatibility.objects.create(
            project=project, label_a=saved[a], label_b=saved[b], reason=item.get("reason") or ""
        )
        _count(result, "incompatibilities", True)


def _write_profiles(
    doc: PackDocument, project: Project, result: PackImportResult, progress: Progress
) -> None:
    typologies = {t.key: t for t in ContextTypology.objects.filter(project=project)}
    for item in doc.section("typologies"):
        data = _typology_data(item)
        typology = typologies.get(item["key"])
        is_new = typology is None
        typology = typology or ContextTypology(project=project, key=item["key"])
        for f in TYPOLOGY_FIELDS:
            setattr(typology, f, data[f])
        for w, value in data["weights"].items():
            setattr(typology, f"weight_{w}", float(value))
        typology.save()
        typologies[typology.key] = typology
        _count(result, "typologies", is_new)
    ContextTypology.objects.filter(project=project).exclude(
        key__in=[t["key"] for t in doc.section("typologies") if t.get("is_default")]
    ).update(is_default=False)
    policies = {p.key: p for p in Policy.objects.filter(project=project)}
    for item in doc.section("policies"):
        data = _policy_data(item)
        policy = policies.get(item["key"])
        is_new = policy is None
        policy = policy or Policy(project=project, key=item["key"])
        for f in POLICY_FIELDS:
            setattr(policy, f, data[f])
        policy.save()
        policies[policy.key] = policy
        _count(result, "policies", is_new)
    roles = {r.key: r for r in Role.objects.filter(project=project)}
    for item in doc.section("roles"):
        role = roles.get(item["key"])
        is_new = role is None
        role = role or Role(project=project, key=item["key"])
        role.name = item["name"]
        role.policy = policies[item["policy"]]
        role.default_typology = typologies.get(item.get("default_typology") or "")
        role.save()
        _count(result, "roles", is_new)


def _write_distinct_terms(doc: PackDocument, project: Project, result: PackImportResult) -> None:
    """Replace the project's memory term distinctions (``memory.distinctions``) by the pack's."""
    from memory.distinctions import term_pairs, term_set
    from memory.models import TermDistinction

    TermDistinction.objects.filter(project=project).delete()
    pairs: dict[tuple[str, str], str] = {}
    for item in doc.section("distinct_terms"):
        for pair in term_pairs(term_set(item["terms"])[0]):
            pairs.setdefault((pair.first, pair.second), item.get("reason") or "")
    TermDistinction.objects.bulk_create(
        [TermDistinction(project=project, first=a, second=b, reason=r[:500]) for (a, b), r in pairs.items()]
    )
    result.created["distinct_terms"] = len(pairs)


def _count(result: PackImportResult, kind: str, is_new: bool) -> None:
    target = result.created if is_new else result.updated
    target[kind] = target.get(kind, 0) + 1
