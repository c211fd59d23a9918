"""SKOS interoperability: the taxonomy as a SKOS concept scheme, out (Turtle) and in (any RDF syntax).

So the taxonomy can move to and from taxonomy tools such as PoolParty or VocBench.

Export — one ``skos:ConceptScheme`` per project; each cluster is a top concept; each label a
``skos:Concept`` whose ``skos:notation`` is its stable LabelID and whose ``skos:broader`` is its
parent label (or its cluster's concept for a root label). The lifecycle status travels as
``arg:status`` (and ``owl:deprecated true`` for DEPRECATED); the cluster key as ``arg:clusterKey``.

Import — concepts without a ``skos:broader`` inside the scheme (or declared top concepts) become
clusters, their narrower concepts root labels, deeper ones child labels. A ``skos:notation`` that is
a LabelID keeps that LabelID (and updates the project's label of that id); other concepts get a new
LabelID, unless a non-deprecated label of the same name already hangs at the same place. Matched
labels and clusters take the file's values (an absent definition clears the description); labels
the file does not mention are kept, and follow their root when it moves to another cluster. Import is
all-or-nothing: the whole resulting taxonomy goes through the deterministic validator before
anything is written, and the writes happen in one transaction.
"""

from __future__ import annotations

import dataclasses
import io
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify
from rdflib import Graph, Literal, Namespace, URIRef, plugin
from rdflib.namespace import OWL, RDF, SKOS, XSD
from rdflib.parser import Parser
from rdflib.plugins.parsers.hext import HextuplesParser
from rdflib.plugins.parsers.jsonld import JsonLDParser
from rdflib.plugins.parsers.rdfxml import RDFXMLParser
from rdflib.plugins.parsers.trix import TriXParser
from rdflib.plugins.serializers.turtle import TurtleSerializer
from rdflib.term import Node
from rdflib.util import guess_format

from arg_platform.audit import Actor, audit_record
from arg_platform.errors import RuleViolation, Violation, ViolationCollector
from projects.models import Project

from .file_guards import json_ld_check, json_lines_depth_check, size_check, xml_check
from .models import KEY_PATTERN, LABEL_ID_PATTERN, Cluster, Label, LabelStatus, Policy
from .selectors import taxonomy_view
from .services import STATUS_TRANSITIONS, knowledge_changed
from .services.knowledge import _clean_list, _user_or_none
from .services.labels import _compute_path
from .validator import LabelRecord, TaxonomyView, validate_taxonomy

ARG = Namespace("https://arg-platform.dev/ns#")
DEFAULT_BASE_URI = "https://arg-platform.local"
DEFAULT_LANGUAGE = "en"
LABEL_ID_RE = re.compile(LABEL_ID_PATTERN)
KEY_RE = re.compile(KEY_PATTERN)
MAX_LABEL_ID_LEN = 16  # Label.label_id max_length
MAX_LABEL_SEQ = 2**31 - 1  # Project.label_seq is a PositiveIntegerField
MAX_CLUSTER_NAME = 120
MAX_CLUSTER_DESCRIPTION = 2000
# Labels whose broader chain never reaches a top concept (a cycle) are validated in this placeholder
# cluster, so the validator reports the cycle itself rather than a missing cluster.
NO_TOP_CONCEPT = "(no top concept)"
IMPORT_REASON = "SKOS import"

# What the API and ``skos_import`` accept besides a file extension (rdflib parser names).
MEDIA_TYPE_FORMATS = {
    "text/turtle": "turtle",
    "application/x-turtle": "turtle",
    "application/n-triples": "nt",
    "application/rdf+xml": "xml",
}


def skos_base_uri() -> str:
    """The base of exported URIs (``ARG_SKOS_BASE_URI`` in the settings, else ``DEFAULT_BASE_URI``)."""
    return str(getattr(settings, "ARG_SKOS_BASE_URI", "") or DEFAULT_BASE_URI)


def _join(base: str, tail: str) -> URIRef:
    base = base.strip()
    return URIRef(base + tail if base.endswith((":", "/", "#")) else f"{base}/{tail}")


def scheme_uri(*, project: Project, base_uri: str | None = None) -> URIRef:
    return _join(base_uri or skos_base_uri(), f"projects/{project.slug}")


def cluster_uri(*, project: Project, key: str, base_uri: str | None = None) -> URIRef:
    return _join(base_uri or skos_base_uri(), f"projects/{project.slug}/clusters/{key}")


def label_uri(*, project: Project, label_id: str, base_uri: str | None = None) -> URIRef:
    return _join(base_uri or skos_base_uri(), f"projects/{project.slug}/labels/{label_id}")


# --- export ---------------------------------------------------------------------------------------


def skos_graph(*, project: Project, base_uri: str | None = None, language: str = DEFAULT_LANGUAGE) -> Graph:
    """The project's taxonomy as an RDF graph of one SKOS concept scheme."""
    base = base_uri or skos_base_uri()
    graph = Graph(bind_namespaces="none")
    for prefix, namespace in (("skos", SKOS), ("owl", OWL), ("xsd", XSD), ("arg", ARG)):
        graph.bind(prefix, namespace)

    def text(value: str) -> Literal:
        return Literal(value, lang=language or None)

    scheme = scheme_uri(project=project, base_uri=base)
    graph.add((scheme, RDF.type, SKOS.ConceptScheme))
    graph.add((scheme, SKOS.prefLabel, text(project.name)))
    graph.add((scheme, ARG.projectSlug, Literal(project.slug)))
    if project.description:
        graph.add((scheme, SKOS.definition, text(project.description)))
    for cluster in Cluster.objects.filter(project=project).order_by("key"):
        concept = cluster_uri(project=project, key=cluster.key, base_uri=base)
        graph.add((concept, RDF.type, SKOS.Concept))
        graph.add((concept, SKOS.prefLabel, text(cluster.name)))
        if cluster.description:
            graph.add((concept, SKOS.definition, text(cluster.description)))
        graph.add((concept, SKOS.inScheme, scheme))
        graph.add((concept, SKOS.topConceptOf, scheme))
        graph.add((scheme, SKOS.hasTopConcept, concept))
        graph.add((concept, ARG.clusterKey, Literal(cluster.key)))
    labels = Label.objects.filter(project=project).select_related("cluster", "parent").order_by("label_id")
    for label in labels:
        concept = label_uri(project=project, label_id=label.label_id, base_uri=base)
        if label.parent is not None:
            broader = label_uri(project=project, label_id=label.parent.label_id, base_uri=base)
        else:
            broader = cluster_uri(project=project, key=label.cluster.key, base_uri=base)
        graph.add((concept, RDF.type, SKOS.Concept))
        graph.add((concept, SKOS.prefLabel, text(label.name)))
        for synonym in label.synonyms:
            graph.add((concept, SKOS.altLabel, text(synonym)))
        if label.description:
            graph.add((concept, SKOS.definition, text(label.description)))
        for example in label.examples:
            graph.add((concept, SKOS.example, text(example)))
        graph.add((concept, SKOS.notation, Literal(label.label_id)))
        graph.add((concept, SKOS.inScheme, scheme))
        graph.add((concept, SKOS.broader, broader))
        graph.add((broader, SKOS.narrower, concept))  # stated both ways: not every tool infers inverses
        graph.add((concept, ARG.status, Literal(label.status)))
        if label.status == LabelStatus.DEPRECATED:
            graph.add((concept, OWL.deprecated, Literal(True)))
    return graph


def skos_export(*, project: Project, base_uri: str | None = None, language: str = DEFAULT_LANGUAGE) -> str:
    """The project's taxonomy as SKOS in Turtle; the same taxonomy always gives the same text.

    Subjects come in a reading order: the scheme, then concepts sorted by URI (clusters, then labels
    by LabelID); rdflib sorts predicates and objects.
    """
    serializer = TurtleSerializer(skos_graph(project=project, base_uri=base_uri, language=language))
    serializer.topClasses = [SKOS.ConceptScheme, SKOS.Concept]
    stream = io.BytesIO()
    serializer.serialize(stream, encoding="utf-8")
    return stream.getvalue().decode("utf-8")


# --- parsing --------------------------------------------------------------------------------------


def skos_format_for(filename: str) -> str:
    """The rdflib parser for a file name (Turtle when the extension says nothing)."""
    return guess_format(filename) or "turtle"


def _parser_class(fmt: str) -> type[Parser]:
    try:
        return plugin.get(fmt, Parser)
    except plugin.PluginException as exc:
        raise RuleViolation(
            Violation("skos.parse", f"{fmt!r} is not an RDF syntax rdflib reads", "file")
        ) from exc


def skos_parse(*, data: str | bytes, fmt: str = "turtle") -> Graph:
    """Parse RDF; any syntax error becomes a ``skos.parse`` violation carrying the parser's message.

    The hostile-file guards come first (``taxonomy.file_guards``): the size limit; no DOCTYPE or entity
    declaration in an XML syntax; no context referenced by IRI (nothing is fetched) and bounded nesting
    in JSON-LD; bounded nesting in HexTuples. Turtle nested past the recursion limit is refused too."""
    size_check(size=len(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data))
    parser = _parser_class(fmt)
    if issubclass(parser, (RDFXMLParser, TriXParser)):
        xml_check(data)
    elif issubclass(parser, JsonLDParser):
        json_ld_check(data)
    elif issubclass(parser, HextuplesParser):
        json_lines_depth_check(data)
    graph = Graph()
    try:
        graph.parse(data=data, format=fmt)
    except RecursionError as exc:
        raise RuleViolation(
            Violation(
                "file.too_deep", "the document nests blank nodes or lists too deeply to be read", "file"
            )
        ) from exc
    except Exception as exc:  # rdflib's parsers raise many unrelated types (BadSyntax, SAX, JSON, …)
        message = " ".join(str(exc).split())[:1000] or type(exc).__name__
        raise RuleViolation(
            Violation("skos.parse", f"the {fmt} document could not be parsed: {message}", "file")
        ) from exc
    return graph


@dataclass(frozen=True)
class SkosConcept:
    """What the importer reads of one ``skos:Concept``."""

    uri: str
    name: str
    alt_labels: tuple[str, ...]
    definition: str
    examples: tuple[str, ...]
    notations: tuple[str, ...]
    status: str | None
    cluster_key: str | None
    broader: tuple[str, ...]  # inside the scheme, sorted
    top: bool


def _pick(values: Iterable[Node], language: str) -> Literal | None:
    """The literal in ``language``, else an untagged one, else the first by language tag."""
    literals = [v for v in values if isinstance(v, Literal) and str(v).strip()]
    if not literals:
        return None
    literals.sort(key=lambda v: (v.language != language, v.language is not None, v.language or "", str(v)))
    return literals[0]


def _text(value: Literal | None) -> str:
    return str(value).strip() if value is not None else ""


def _texts(values: Iterable[Node], languages: set[str | None] | None = None) -> list[str]:
    """Sorted literal texts; with ``languages``, only those tagged with one of them (None: untagged)."""
    return sorted(
        str(v).strip()
        for v in values
        if isinstance(v, Literal) and (languages is None or v.language in languages)
    )


def _is_true(values: Iterable[Node]) -> bool:
    return any(isinstance(v, Literal) and str(v).strip().lower() in ("true", "1") for v in values)


def _read_concepts(
    graph: Graph, *, language: str, scheme: str | None, out: ViolationCollector, warnings: list[str]
) -> dict[str, SkosConcept]:
    schemes = sorted(
        (s for s in set(graph.subjects(RDF.type, SKOS.ConceptScheme)) if isinstance(s, URIRef)), key=str
    )
    selected: URIRef | None = None
    if scheme:
        selected = URIRef(scheme)
        if selected not in schemes:
            out.add("skos.scheme", f"the file holds no concept scheme {scheme}", "scheme")
            return {}
    elif len(schemes) > 1:
        listed = ", ".join(map(str, schemes))
        out.add(
            "skos.scheme", f"the file holds {len(schemes)} concept schemes ({listed}); choose one", "scheme"
        )
        return {}
    elif schemes:
        selected = schemes[0]
    if scheme:
        members: set[Node] = set(graph.subjects(SKOS.inScheme, selected))
    else:
        members = set(graph.subjects(RDF.type, SKOS.Concept)) | set(graph.subjects(SKOS.inScheme, None))
    tops = set(graph.subjects(SKOS.topConceptOf, selected))
    tops |= set(graph.objects(selected, SKOS.hasTopConcept))
    members |= tops
    blank = [m for m in members if not isinstance(m, URIRef)]
    if blank:
        warnings.append(f"{len(blank)} concept(s) without a URI (blank nodes) ignored")
    uris = {m for m in members if isinstance(m, URIRef)}
    if not uris:
        out.add("skos.empty", "the file holds no skos:Concept", "file")
        return {}
    concepts: dict[str, SkosConcept] = {}
    for uri in sorted(uris, key=str):
        related = set(graph.objects(uri, SKOS.broader)) | set(graph.subjects(SKOS.narrower, uri))
        broader = sorted(str(b) for b in related if b in uris)
        outside = sorted(str(b) for b in related if b not in uris)
        if outside:
            warnings.append(f"{uri}: broader concept(s) outside the scheme ignored: {', '.join(outside)}")
        top = uri in tops or not broader
        if uri in tops and broader:
            warnings.append(f"{uri} is a top concept; broader concept(s) ignored: {', '.join(broader)}")
        status: str | None = None
        if _is_true(graph.objects(uri, OWL.deprecated)):
            status = LabelStatus.DEPRECATED.value
        else:
            declared = [s for s in _texts(graph.objects(uri, ARG.status)) if s in LabelStatus.values]
            status = declared[0] if declared else None
        keys = [k for k in _texts(graph.objects(uri, ARG.clusterKey)) if KEY_RE.match(k)]
        pref = _pick(graph.objects(uri, SKOS.prefLabel), language)
        name = _text(pref)
        if not name:
            out.add("skos.pref_label", f"concept {uri} has no skos:prefLabel", "name", str(uri))
            name = re.split(r"[/#:]", str(uri).rstrip("/#"))[-1] or str(uri)
        concepts[str(uri)] = SkosConcept(
            uri=str(uri),
            name=name,
            # synonyms in the language of the chosen prefLabel (or untagged): one language per label
            alt_labels=tuple(
                _texts(
                    graph.objects(uri, SKOS.altLabel),
                    None if pref is None else {None, pref.language or language},
                )
            ),
            definition=_text(_pick(graph.objects(uri, SKOS.definition), language)),
            examples=tuple(_texts(graph.objects(uri, SKOS.example))),
            notations=tuple(_texts(graph.objects(uri, SKOS.notation))),
            status=status,
            cluster_key=keys[0] if keys else None,
            broader=() if top else tuple(broader),
            top=top,
        )
    return concepts


# --- import ---------------------------------------------------------------------------------------


@dataclass
class SkosImportResult:
    """What an import did (or, for a dry run, would do)."""

    clusters_created: int = 0
    clusters_updated: int = 0
    labels_created: int = 0
    labels_updated: int = 0
    labels_unchanged: int = 0
    label_ids: dict[str, str] = field(default_factory=dict)  # concept URI -> LabelID
    cluster_keys: dict[str, str] = field(default_factory=dict)  # concept URI -> cluster key
    warnings: list[str] = field(default_factory=list)
    dry_run: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "clusters_created": self.clusters_created,
            "clusters_updated": self.clusters_updated,
            "labels_created": self.labels_created,
            "labels_updated": self.labels_updated,
            "labels_unchanged": self.labels_unchanged,
            "warnings": list(self.warnings),
            "dry_run": self.dry_run,
        }


@dataclass(frozen=True)
class _ClusterPlan:
    uri: str
    key: str
    name: str
    description: str
    existing: Cluster | None


def _unique_key(base: str, used: set[str]) -> str:
    base = (slugify(base)[:63].strip("-_") or "cluster") if not KEY_RE.match(base) else base
    key, n = base, 2
    while key in used:
        suffix = f"-{n}"
        key, n = base[: 63 - len(suffix)] + suffix, n + 1
    return key


def _plan_clusters(project: Project, tops: list[SkosConcept], out: ViolationCollector) -> list[_ClusterPlan]:
    existing = list(Cluster.objects.filter(project=project))
    by_key = {c.key: c for c in existing}
    by_name = {c.name.casefold(): c for c in existing}
    used, matched, plans = set(by_key), set(), []
    for concept in sorted(tops, key=lambda c: (c.name.casefold(), c.uri)):
        match = by_key.get(concept.cluster_key or "") or by_name.get(concept.name.casefold())
        if match is not None and match.pk not in matched:
            matched.add(match.pk)
            key = match.key
        else:
            match, key = None, _unique_key(concept.cluster_key or concept.name, used)
        used.add(key)
        plans.append(_ClusterPlan(concept.uri, key, concept.name, concept.definition, match))
        if len(concept.name) > MAX_CLUSTER_NAME:
            out.add(
                "cluster.field",
                f"cluster {concept.name!r}: name is longer than {MAX_CLUSTER_NAME} characters",
                "name",
                concept.uri,
            )
        if len(concept.definition) > MAX_CLUSTER_DESCRIPTION:
            out.add(
                "cluster.field",
                f"cluster {concept.name!r}: description is longer than {MAX_CLUSTER_DESCRIPTION} characters",
                "description",
                concept.uri,
            )
    names: dict[str, str] = {c.name.casefold(): c.key for c in existing if c.pk not in matched}
    for plan in plans:
        other = names.setdefault(plan.name.casefold(), plan.key)
        if other != plan.key:
            out.add(
                "cluster.unique_name",
                f"two clusters would be named {plan.name!r} ({other}, {plan.key})",
                "name",
                plan.uri,
            )
    return plans


def _label_order(concepts: dict[str, SkosConcept]) -> list[str]:
    """Non-top concepts, parents before children (top-down, by name); unreachable ones (cycles) last."""
    children: dict[str, list[str]] = {}
    for concept in concepts.values():
        if not concept.top:
            children.setdefault(concept.broader[0], []).append(concept.uri)
    for uris in children.values():
        uris.sort(key=lambda u: (concepts[u].name.casefold(), u))
    order: list[str] = []
    seen: set[str] = set()
    tops = sorted((c for c in concepts.values() if c.top), key=lambda c: (c.name.casefold(), c.uri))
    stack = [c.uri for c in reversed(tops)]
    while stack:
        uri = stack.pop()
        if uri in seen:
            continue
        seen.add(uri)
        if not concepts[uri].top:
            order.append(uri)
        stack.extend(reversed(children.get(uri, [])))
    order.extend(sorted(u for u, c in concepts.items() if not c.top and u not in seen))
    return order


def _same_items(new: list[str], old: Iterable[str]) -> bool:
    return sorted(v.casefold() for v in new) == sorted(v.casefold() for v in old)


def _label_clusters(concepts: dict[str, SkosConcept], cluster_of_top: dict[str, str]) -> dict[str, str]:
    """The cluster of each label concept: walk up the (first) broader chain to a top concept."""
    label_cluster: dict[str, str] = {}
    for uri in concepts:
        chain: list[str] = []
        current = uri
        while current not in cluster_of_top and current not in label_cluster and current not in chain:
            chain.append(current)
            current = concepts[current].broader[0]
        key = cluster_of_top.get(current) or label_cluster.get(current) or NO_TOP_CONCEPT
        label_cluster.update(dict.fromkeys(chain, key))
    return label_cluster


def _assign_label_ids(
    concepts: dict[str, SkosConcept],
    order: list[str],
    cluster_of_top: dict[str, str],
    label_cluster: dict[str, str],
    view: TaxonomyView,
    seq: int,
    out: ViolationCollector,
    warnings: list[str],
) -> tuple[dict[str, str], int]:
    """LabelID of each concept: its LabelID notation, else an existing same-named label at the same
    place (so re-importing a file without notations updates rather than duplicates), else a new one.
    Returns the ids by concept URI and the highest LabelID number used."""
    claimed: dict[str, str] = {}
    for uri in order:
        concept = concepts[uri]
        if len(concept.broader) > 1:
            warnings.append(f"{uri} has {len(concept.broader)} broader concepts; kept {concept.broader[0]}")
        ids = [n for n in concept.notations if LABEL_ID_RE.match(n)]
        if len(ids) > 1:
            warnings.append(f"{uri} has several LabelID notations; kept {ids[0]}")
        if not ids:
            continue
        if len(ids[0]) > MAX_LABEL_ID_LEN or int(ids[0][1:]) > MAX_LABEL_SEQ:
            out.add("skos.notation", f"{uri}: LabelID {ids[0]} is out of range", "notation", uri)
        elif ids[0] in claimed:
            out.add(
                "skos.notation_unique",
                f"{uri} and {claimed[ids[0]]} share the LabelID notation {ids[0]}",
                "notation",
                uri,
            )
        else:
            claimed[ids[0]] = uri
    for concept in concepts.values():
        if concept.top and any(LABEL_ID_RE.match(n) for n in concept.notations):
            warnings.append(f"{concept.uri} is a top concept (a cluster): its LabelID notation is ignored")
    by_place = {
        (r.cluster, r.parent, r.name.casefold()): r.label_id
        for r in view.labels.values()
        if r.status != LabelStatus.DEPRECATED and r.label_id not in claimed
    }
    seq = max([seq, *(int(label_id[1:]) for label_id in claimed)])
    ids_by_uri = {uri: label_id for label_id, uri in claimed.items()}
    for uri in order:
        if uri in ids_by_uri:
            continue
        parent = concepts[uri].broader[0]
        parent_id = None if parent in cluster_of_top else ids_by_uri.get(parent)
        match = None
        if parent_id is not None or parent in cluster_of_top:
            match = by_place.pop((label_cluster[uri], parent_id, concepts[uri].name.casefold()), None)
        if match is None:
            seq += 1
            match = f"L{seq:05d}"
        ids_by_uri[uri] = match
    return ids_by_uri, seq


def _follow_moved_ancestors(labels: dict[str, LabelRecord], imported: set[str]) -> set[str]:
    """Labels the file does not mention follow their (moved) root into its cluster, as with label_move."""
    view = TaxonomyView(frozenset(), labels)
    moved = set()
    for label_id in sorted(set(labels) - imported):
        ancestors = view.ancestors(label_id)
        record = labels[label_id]
        cluster = labels[ancestors[-1]].cluster if ancestors else record.cluster
        if cluster != record.cluster:
            labels[label_id] = dataclasses.replace(record, cluster=cluster)
            moved.add(label_id)
    return moved


@transaction.atomic
def skos_import(
    *,
    project: Project,
    actor: Actor,
    data: str | bytes,
    fmt: str = "turtle",
    language: str = DEFAULT_LANGUAGE,
    scheme: str | None = None,
    source: str = "",
    dry_run: bool = False,
) -> SkosImportResult:
    """Import a SKOS concept scheme into ``project``, all or nothing.

    Everything is read and judged by the validator before the first write; a ``RuleViolation`` leaves
    the project untouched. Runs in one transaction holding the project row, so LabelIDs issued here
    cannot collide with a concurrent ``label_create``. ``dry_run`` validates and reports only.
    """
    graph = skos_parse(data=data, fmt=fmt)
    project = Project.objects.select_for_update().get(pk=project.pk)
    out = ViolationCollector()
    result = SkosImportResult(dry_run=dry_run)
    concepts = _read_concepts(graph, language=language, scheme=scheme, out=out, warnings=result.warnings)
    out.raise_if_any()
    clusters = _plan_clusters(project, [c for c in concepts.values() if c.top], out)
    cluster_of_top = {plan.uri: plan.key for plan in clusters}
    label_cluster = _label_clusters(concepts, cluster_of_top)
    view = taxonomy_view(project=project)
    order = _label_order(concepts)
    ids_by_uri, seq = _assign_label_ids(
        concepts, order, cluster_of_top, label_cluster, view, project.label_seq, out, result.warnings
    )
    out.raise_if_any()

    # The taxonomy after the import, as the validator sees it.
    labels = dict(view.labels)
    locations: dict[str, str] = {}
    for uri in order:
        concept, label_id = concepts[uri], ids_by_uri[uri]
        parent = concept.broader[0]
        existing = view.labels.get(label_id)
        synonyms, examples = _clean_list(concept.alt_labels), _clean_list(concept.examples)
        status = concept.status or (existing.status if existing else LabelStatus.ACTIVE.value)
        if existing is not None:
            if existing.status == LabelStatus.DEPRECATED and concept.name != existing.name:
                out.add(
                    "taxonomy.label_id_reuse",
                    f"{label_id} is DEPRECATED as {existing.name!r}; its LabelID cannot be reused for "
                    f"{concept.name!r}",
                    "notation",
                    uri,
                )
            if status != existing.status and status not in STATUS_TRANSITIONS[existing.status]:
                out.add(
                    "taxonomy.status_transition",
                    f"{label_id} cannot go from {existing.status} to {status}",
                    "status",
                    uri,
                )
            # SKOS values are unordered: the same set keeps the curated order
            synonyms = list(existing.synonyms) if _same_items(synonyms, existing.synonyms) else synonyms
            examples = list(existing.examples) if _same_items(examples, existing.examples) else examples
        parent_id = None if parent in cluster_of_top else ids_by_uri[parent]
        labels[label_id] = LabelRecord(
            label_id,
            concept.name,
            label_cluster[uri],
            parent_id,
            status,
            concept.definition,
            tuple(synonyms),
            tuple(examples),
        )
        locations[f"label:{label_id}"] = uri
    imported = set(ids_by_uri.values())
    touched = imported | _follow_moved_ancestors(labels, imported)
    cluster_keys = {c.key for c in clusters} | set(view.clusters)
    if NO_TOP_CONCEPT in label_cluster.values():
        cluster_keys.add(NO_TOP_CONCEPT)
    after = TaxonomyView(frozenset(cluster_keys), labels, view.incompatibilities, locations)
    out.violations.extend(validate_taxonomy(after))
    out.raise_if_any()

    result.label_ids = {uri: ids_by_uri[uri] for uri in order}
    result.cluster_keys = dict(cluster_of_top)
    result.clusters_created = sum(1 for c in clusters if c.existing is None)
    result.clusters_updated = sum(
        1
        for c in clusters
        if c.existing is not None and (c.existing.name, c.existing.description) != (c.name, c.description)
    )
    created = {label_id for label_id in imported if label_id not in view.labels}
    changed = {label_id for label_id in touched - created if labels[label_id] != view.labels[label_id]}
    result.labels_created, result.labels_updated = len(created), len(changed)
    result.labels_unchanged = len(imported - created - changed)
    if dry_run:
        return result
    policies = _write(
        project=project, actor=actor, clusters=clusters, before=view, after=after, touched=touched, seq=seq
    )
    audit_record(
        project=project,
        actor=actor,
        action="import",
        object_type="taxonomy",
        object_key=(source or "skos")[:128],
        after={**result.as_dict(), "warnings": result.warnings[:50], "policies_cleaned": policies},
        reason=f"{IMPORT_REASON} from {source}" if source else IMPORT_REASON,
    )
    if result.clusters_created or result.clusters_updated or created or changed:
        knowledge_changed(project=project)
    return result


def _write(
    *,
    project: Project,
    actor: Actor,
    clusters: list[_ClusterPlan],
    before: TaxonomyView,
    after: TaxonomyView,
    touched: set[str],
    seq: int,
) -> list[str]:
    """Write a validated import (the caller holds the transaction): clusters, then labels level by
    level so every parent exists before its children, then paths. Returns the policies cleaned."""
    now = timezone.now()
    user = _user_or_none(actor)
    for plan in clusters:
        if plan.existing is None:
            Cluster.objects.create(
                project=project, key=plan.key, name=plan.name, description=plan.description
            )
        elif (plan.existing.name, plan.existing.description) != (plan.name, plan.description):
            plan.existing.name, plan.existing.description = plan.name, plan.description
            plan.existing.save(update_fields=["name", "description"])
    cluster_by_key = {c.key: c for c in Cluster.objects.filter(project=project)}
    label_by_id = {label.label_id: label for label in Label.objects.filter(project=project)}
    changed = sorted(i for i in touched if after.labels[i] != before.labels.get(i))
    depth = {label_id: len(after.ancestors(label_id)) for label_id in changed}
    fields = [
        "name",
        "description",
        "cluster",
        "parent",
        "status",
        "synonyms",
        "examples",
        "status_changed_at",
        "status_changed_by",
        "status_reason",
        "updated_at",
    ]
    for level in sorted(set(depth.values())):
        to_create: list[Label] = []
        to_update: list[Label] = []
        for label_id in (i for i in changed if depth[i] == level):
            record = after.labels[label_id]
            label = label_by_id.get(label_id)
            if label is None:
                label = Label(
                    project=project,
                    label_id=label_id,
                    status_changed_at=now,
                    status_changed_by=user,
                    status_reason=IMPORT_REASON,
                )
                to_create.append(label)
            else:
                to_update.append(label)
                if label.status != record.status:
                    label.status_changed_at, label.status_changed_by = now, user
                    label.status_reason = IMPORT_REASON
            label.name, label.description, label.status = record.name, record.description, record.status
            label.synonyms, label.examples = list(record.synonyms), list(record.examples)
            label.cluster = cluster_by_key[record.cluster]
            label.parent = label_by_id[record.parent] if record.parent else None
            label.updated_at = now
        Label.objects.bulk_create(to_create)
        if any(label.pk is None for label in to_create):  # a backend that returns no ids from bulk inserts
            ids = [x.label_id for x in to_create]
            to_create = list(Label.objects.filter(project=project, label_id__in=ids))
        label_by_id.update({label.label_id: label for label in to_create})
        Label.objects.bulk_update(to_update, fields)
    _refresh_all_paths(project)
    if seq > project.label_seq:
        Project.objects.filter(pk=project.pk).update(label_seq=seq)
        project.label_seq = seq
    deprecated = {
        i
        for i in changed
        if after.labels[i].status == LabelStatus.DEPRECATED
        and i in before.labels
        and before.labels[i].status != LabelStatus.DEPRECATED
    }
    cleaned = []
    if deprecated:  # the maintenance contract: no policy keeps allowing a deprecated label
        for policy in Policy.objects.select_for_update().filter(project=project).order_by("key"):
            kept = [x for x in policy.allowed_labels if x not in deprecated]
            if kept != policy.allowed_labels:
                policy.allowed_labels = kept
                policy.save(update_fields=["allowed_labels", "updated_at"])
                cleaned.append(policy.key)
    return cleaned


def _refresh_all_paths(project: Project) -> None:
    """Recompute every label's current path and depth in memory (one read, one bulk write)."""
    clusters = {c.pk: c for c in Cluster.objects.filter(project=project)}
    labels = list(Label.objects.filter(project=project))
    by_pk = {label.pk: label for label in labels}
    for label in labels:
        label.cluster = clusters[label.cluster_id]
        label.parent = by_pk[label.parent_id] if label.parent_id else None
    changed = []
    for label in labels:
        path, depth = _compute_path(label)
        if (label.path, label.depth) != (path, depth):
            label.path, label.depth = path, depth
            changed.append(label)
    Label.objects.bulk_update(changed, ["path", "depth"])
