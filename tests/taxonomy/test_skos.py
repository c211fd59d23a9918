"""SKOS interoperability: export → import round-trips, third-party concept schemes import, and a bad
file (cycle, malformed Turtle, deprecated LabelID reuse…) is refused with nothing written."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from rdflib import Graph, Literal, URIRef
from rdflib.namespace import OWL, RDF, SKOS

from arg_platform.errors import RuleViolation
from arg_platform.models import AuditEvent
from taxonomy.models import Cluster, Label, Policy
from taxonomy.services import cluster_create, label_create, label_set_status, policy_save
from taxonomy.skos import ARG, skos_export, skos_import

pytestmark = pytest.mark.django_db

BASE = "https://arg-platform.local/projects/acme"


@pytest.fixture
def taxonomy(project: Any, expert: Any) -> dict[str, Label]:
    cluster_create(
        project=project, actor=expert, key="billing", name="Billing & payments", description="Money matters."
    )
    cluster_create(project=project, actor=expert, key="access", name="Accounts & access")

    def label(name: str, cluster: str, parent: Label | None = None, **kwargs: Any) -> Label:
        return label_create(
            project=project,
            actor=expert,
            name=name,
            cluster_key=cluster,
            parent_id=parent.label_id if parent else None,
            **kwargs,
        )

    invoices = label(
        "Invoices",
        "billing",
        description="Invoices and receipts.",
        synonyms=["bill", "receipt"],
        examples=["where is my invoice", "send me last month's bill"],
    )
    download = label("Download invoice", "billing", invoices, examples=["download the PDF invoice"])
    pdf = label("PDF format", "billing", download, synonyms=["pdf"], status="SHADOW")
    legacy = label("Fax invoices", "billing", invoices)
    label_set_status(label=legacy, actor=expert, status="DEPRECATED", reason="nobody faxes")
    login = label("Login problems", "access", synonyms=["sign-in"], status="CANDIDATE")
    return {"invoices": invoices, "download": download, "pdf": pdf, "legacy": legacy, "login": login}


def snapshot(project: Any) -> dict[str, Any]:
    """Everything the round trip must keep, keyed by stable ids."""
    return {
        "clusters": sorted((c.key, c.name, c.description) for c in Cluster.objects.filter(project=project)),
        "labels": sorted(
            (
                x.label_id,
                x.name,
                x.description,
                x.cluster.key,
                x.parent.label_id if x.parent_id else None,
                x.status,
                tuple(sorted(x.synonyms)),
                tuple(sorted(x.examples)),
                x.path,
                x.depth,
            )
            for x in Label.objects.filter(project=project).select_related("cluster", "parent")
        ),
    }


def counts() -> tuple[int, int, int]:
    return Cluster.objects.count(), Label.objects.count(), AuditEvent.objects.count()


# --- export ---------------------------------------------------------------------------------------


def test_export_is_a_deterministic_skos_concept_scheme(project, taxonomy):
    text = skos_export(project=project)
    assert text == skos_export(project=project)
    graph = Graph().parse(data=text, format="turtle")
    scheme = URIRef(BASE)
    billing = URIRef(f"{BASE}/clusters/billing")
    invoices = URIRef(f"{BASE}/labels/{taxonomy['invoices'].label_id}")
    download = URIRef(f"{BASE}/labels/{taxonomy['download'].label_id}")
    legacy = URIRef(f"{BASE}/labels/{taxonomy['legacy'].label_id}")
    assert (scheme, RDF.type, SKOS.ConceptScheme) in graph
    assert set(graph.objects(scheme, SKOS.hasTopConcept)) == {billing, URIRef(f"{BASE}/clusters/access")}
    assert (billing, SKOS.topConceptOf, scheme) in graph
    assert (billing, SKOS.prefLabel, Literal("Billing & payments", lang="en")) in graph
    assert (billing, SKOS.definition, Literal("Money matters.", lang="en")) in graph
    assert (invoices, SKOS.broader, billing) in graph
    assert (download, SKOS.broader, invoices) in graph
    assert (invoices, SKOS.notation, Literal("L00001")) in graph
    assert (invoices, SKOS.inScheme, scheme) in graph
    assert set(graph.objects(invoices, SKOS.altLabel)) == {
        Literal("bill", lang="en"),
        Literal("receipt", lang="en"),
    }
    assert (invoices, SKOS.definition, Literal("Invoices and receipts.", lang="en")) in graph
    assert len(set(graph.objects(invoices, SKOS.example))) == 2
    assert (invoices, ARG.status, Literal("ACTIVE")) in graph
    assert (legacy, ARG.status, Literal("DEPRECATED")) in graph
    assert (legacy, OWL.deprecated, Literal(True)) in graph
    assert (invoices, OWL.deprecated, None) not in graph
    assert len(set(graph.subjects(RDF.type, SKOS.Concept))) == 2 + 5


def test_export_base_uri_is_configurable(project, taxonomy, settings):
    settings.ARG_SKOS_BASE_URI = "urn:arg:"
    graph = Graph().parse(data=skos_export(project=project), format="turtle")
    assert (URIRef("urn:arg:projects/acme/labels/L00001"), SKOS.notation, Literal("L00001")) in graph
    assert (URIRef("urn:arg:projects/acme"), RDF.type, SKOS.ConceptScheme) in graph


# --- round trip -----------------------------------------------------------------------------------


def test_export_then_import_into_a_fresh_project_round_trips(project, other_project, taxonomy, expert):
    result = skos_import(project=other_project, actor=expert, data=skos_export(project=project))
    assert (result.clusters_created, result.labels_created, result.labels_updated) == (2, 5, 0)
    assert result.warnings == []
    assert snapshot(other_project) == snapshot(project)
    other_project.refresh_from_db()
    assert other_project.label_seq == 5
    assert (
        AuditEvent.objects.filter(project=other_project, action="import", object_type="taxonomy").count() == 1
    )
    assert (
        label_create(project=other_project, actor=expert, name="Refunds", cluster_key="billing").label_id
        == "L00006"
    )


def test_reimporting_the_same_export_changes_nothing(project, taxonomy, expert):
    before = snapshot(project)
    revision = type(project).objects.get(pk=project.pk).knowledge_revision
    result = skos_import(project=project, actor=expert, data=skos_export(project=project))
    assert result.as_dict() == {
        "clusters_created": 0,
        "clusters_updated": 0,
        "labels_created": 0,
        "labels_updated": 0,
        "labels_unchanged": 5,
        "warnings": [],
        "dry_run": False,
    }
    assert snapshot(project) == before
    assert type(project).objects.get(pk=project.pk).knowledge_revision == revision


def test_import_updates_labels_by_label_id_and_moves_them(project, taxonomy, expert):
    graph = Graph().parse(data=skos_export(project=project), format="turtle")
    pdf = URIRef(f"{BASE}/labels/{taxonomy['pdf'].label_id}")
    invoices = URIRef(f"{BASE}/labels/{taxonomy['invoices'].label_id}")
    download = URIRef(f"{BASE}/labels/{taxonomy['download'].label_id}")
    graph.set((pdf, SKOS.prefLabel, Literal("PDF and print", lang="en")))
    graph.remove((pdf, SKOS.broader, download))
    graph.remove((download, SKOS.narrower, pdf))
    graph.add((pdf, SKOS.broader, invoices))
    graph.add((pdf, SKOS.altLabel, Literal("print", lang="en")))
    result = skos_import(project=project, actor=expert, data=graph.serialize(format="turtle"))
    assert (result.labels_created, result.labels_updated, result.labels_unchanged) == (0, 1, 4)
    moved = Label.objects.get(project=project, label_id=taxonomy["pdf"].label_id)
    assert moved.name == "PDF and print"
    assert moved.parent_id == taxonomy["invoices"].pk
    assert sorted(moved.synonyms) == ["pdf", "print"]
    assert moved.path == "Billing & payments › Invoices › PDF and print"
    assert moved.depth == 1
    assert moved.status == "SHADOW"


def test_labels_missing_from_the_file_are_kept_and_follow_their_moved_root(project, taxonomy, expert):
    graph = Graph().parse(data=skos_export(project=project), format="turtle")
    invoices = URIRef(f"{BASE}/labels/{taxonomy['invoices'].label_id}")
    for child in ("download", "pdf", "legacy"):
        graph.remove((URIRef(f"{BASE}/labels/{taxonomy[child].label_id}"), None, None))
        graph.remove((None, None, URIRef(f"{BASE}/labels/{taxonomy[child].label_id}")))
    graph.remove((URIRef(f"{BASE}/clusters/billing"), SKOS.narrower, invoices))
    graph.set((invoices, SKOS.broader, URIRef(f"{BASE}/clusters/access")))
    result = skos_import(project=project, actor=expert, data=graph.serialize(format="turtle"))
    assert result.warnings == []
    assert (result.labels_created, result.labels_updated, result.labels_unchanged) == (0, 4, 1)
    moved = {x.label_id: (x.cluster.key, x.path) for x in Label.objects.filter(project=project)}
    assert moved == {
        "L00001": ("access", "Accounts & access › Invoices"),
        "L00002": ("access", "Accounts & access › Invoices › Download invoice"),
        "L00003": ("access", "Accounts & access › Invoices › Download invoice › PDF format"),
        "L00004": ("access", "Accounts & access › Invoices › Fax invoices"),
        "L00005": ("access", "Accounts & access › Login problems"),
    }


def test_renaming_a_deprecated_label_id_is_refused_and_nothing_changes(project, taxonomy, expert):
    graph = Graph().parse(data=skos_export(project=project), format="turtle")
    legacy = URIRef(f"{BASE}/labels/{taxonomy['legacy'].label_id}")
    graph.set((legacy, SKOS.prefLabel, Literal("E-invoicing", lang="en")))
    graph.set(
        (
            graph.value(predicate=SKOS.notation, object=Literal("L00001")),
            SKOS.prefLabel,
            Literal("Invoices renamed", lang="en"),
        )
    )
    before, rows = snapshot(project), counts()
    with pytest.raises(RuleViolation) as exc:
        skos_import(project=project, actor=expert, data=graph.serialize(format="turtle"))
    assert [v.rule for v in exc.value.violations] == ["taxonomy.label_id_reuse"]
    assert exc.value.violations[0].location == str(legacy)
    assert (snapshot(project), counts()) == (before, rows)


def test_import_that_deprecates_a_label_cleans_policy_allow_lists(project, taxonomy, expert):
    policy_save(
        project=project,
        actor=expert,
        data={"key": "customer", "name": "Customer", "allowed_labels": ["L00001", "L00005"]},
    )
    graph = Graph().parse(data=skos_export(project=project), format="turtle")
    login = URIRef(f"{BASE}/labels/{taxonomy['login'].label_id}")
    graph.add((login, OWL.deprecated, Literal(True)))
    result = skos_import(project=project, actor=expert, data=graph.serialize(format="turtle"))
    assert result.labels_updated == 1
    assert Label.objects.get(project=project, label_id="L00005").status == "DEPRECATED"
    assert Policy.objects.get(project=project, key="customer").allowed_labels == ["L00001"]


# --- third-party files ----------------------------------------------------------------------------

THIRD_PARTY = """
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
@prefix ex: <http://vocab.example.org/support/> .

ex:scheme a skos:ConceptScheme ;
    skos:prefLabel "Support vocabulary"@en ;
    skos:hasTopConcept ex:billing, ex:security .

ex:billing a skos:Concept ;
    skos:prefLabel "Billing"@en, "Facturation"@fr ;
    skos:definition "Everything about money."@en ;
    skos:narrower ex:invoices .

ex:security a skos:Concept ;
    skos:prefLabel "Sécurité"@fr, "Security & privacy"@en .

ex:invoices a skos:Concept ;
    skos:prefLabel "Facture"@fr, "Invoice"@en ;
    skos:altLabel "bill"@en, "note"@fr, "receipt"@en ;
    skos:definition "A request for payment."@en ;
    skos:example "where is my invoice"@en .

ex:credit-notes a skos:Concept ;
    skos:prefLabel "Credit notes"@en ;
    skos:broader ex:invoices .

ex:refunds a skos:Concept ;
    skos:prefLabel "Remboursements"@fr ;
    skos:notation "R-12" ;
    skos:broader ex:invoices, ex:security .

ex:passwords a skos:Concept ;
    skos:prefLabel "Passwords"@en ;
    skos:notation "L00042" ;
    skos:broader ex:security .
"""


def test_a_third_party_concept_scheme_imports(project, expert):
    result = skos_import(project=project, actor=expert, data=THIRD_PARTY)
    assert (result.clusters_created, result.labels_created) == (2, 4)
    assert result.warnings == [
        "http://vocab.example.org/support/refunds has 2 broader concepts; kept "
        "http://vocab.example.org/support/invoices"
    ]
    assert sorted(Cluster.objects.filter(project=project).values_list("key", "name", "description")) == [
        ("billing", "Billing", "Everything about money."),
        ("security-privacy", "Security & privacy", ""),
    ]
    labels = {x.name: x for x in Label.objects.filter(project=project).select_related("cluster", "parent")}
    assert sorted(labels) == ["Credit notes", "Invoice", "Passwords", "Remboursements"]
    invoice = labels["Invoice"]
    assert (invoice.cluster.key, invoice.parent, invoice.depth) == ("billing", None, 0)
    assert invoice.synonyms == ["bill", "receipt"]
    assert invoice.examples == ["where is my invoice"]
    assert invoice.description == "A request for payment."
    assert invoice.status == "ACTIVE"
    assert labels["Credit notes"].parent == invoice
    assert labels["Remboursements"].parent == invoice
    assert labels["Remboursements"].path == "Billing › Invoice › Remboursements"
    assert labels["Passwords"].label_id == "L00042"
    assert (labels["Passwords"].cluster.key, labels["Passwords"].parent) == ("security-privacy", None)
    # new LabelIDs follow the kept one, and the counter never falls back below it
    assert sorted(x.label_id for x in labels.values()) == ["L00042", "L00043", "L00044", "L00045"]
    project.refresh_from_db()
    assert project.label_seq == 45


def test_reimporting_a_file_without_notations_updates_instead_of_duplicating(project, expert):
    skos_import(project=project, actor=expert, data=THIRD_PARTY)
    before = snapshot(project)
    result = skos_import(project=project, actor=expert, data=THIRD_PARTY.replace('"bill"@en, ', ""))
    assert (result.clusters_created, result.labels_created, result.labels_updated) == (0, 0, 1)
    assert Label.objects.get(project=project, name="Invoice").synonyms == ["receipt"]
    assert len(snapshot(project)["labels"]) == len(before["labels"])


def test_the_language_option_picks_labels(project, expert):
    skos_import(project=project, actor=expert, data=THIRD_PARTY, language="fr")
    assert sorted(Cluster.objects.filter(project=project).values_list("name", flat=True)) == [
        "Facturation",
        "Sécurité",
    ]
    assert Label.objects.get(project=project, name="Facture").synonyms == ["note"]


CYCLE = """
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
@prefix ex: <http://vocab.example.org/cycle/> .
ex:top a skos:Concept ; skos:prefLabel "Top"@en .
ex:ok a skos:Concept ; skos:prefLabel "Fine"@en ; skos:broader ex:top .
ex:a a skos:Concept ; skos:prefLabel "A"@en ; skos:broader ex:b .
ex:b a skos:Concept ; skos:prefLabel "B"@en ; skos:broader ex:a .
"""


def test_a_broader_cycle_is_refused_and_nothing_changes(project, taxonomy, expert):
    before, rows = snapshot(project), counts()
    project.refresh_from_db()
    seq, revision = project.label_seq, project.knowledge_revision
    with pytest.raises(RuleViolation) as exc:
        skos_import(project=project, actor=expert, data=CYCLE)
    assert [v.rule for v in exc.value.violations] == ["taxonomy.no_cycles"]
    assert exc.value.violations[0].location.startswith("http://vocab.example.org/cycle/")
    assert (snapshot(project), counts()) == (before, rows)
    project.refresh_from_db()
    assert (project.label_seq, project.knowledge_revision) == (seq, revision)


def test_duplicate_sibling_names_are_refused(project, expert):
    data = """
    @prefix skos: <http://www.w3.org/2004/02/skos/core#> .
    <urn:x:top> a skos:Concept ; skos:prefLabel "Top" .
    <urn:x:one> a skos:Concept ; skos:prefLabel "Same" ; skos:broader <urn:x:top> .
    <urn:x:two> a skos:Concept ; skos:prefLabel "same" ; skos:broader <urn:x:top> .
    """
    with pytest.raises(RuleViolation) as exc:
        skos_import(project=project, actor=expert, data=data)
    assert [v.rule for v in exc.value.violations] == ["taxonomy.sibling_unique"]
    assert counts() == (0, 0, 0)


def test_malformed_turtle_is_refused_with_the_parser_message(project, taxonomy, expert):
    before, rows = snapshot(project), counts()
    with pytest.raises(RuleViolation) as exc:
        skos_import(
            project=project,
            actor=expert,
            data="@prefix skos: <http://www.w3.org/2004/02/skos/core#> .\n"
            '<urn:x:a> skos:prefLabel "unterminated .\n',
        )
    assert [v.rule for v in exc.value.violations] == ["skos.parse"]
    assert exc.value.message.startswith("[skos.parse] the turtle document could not be parsed: ")
    assert "line" in exc.value.message
    assert (snapshot(project), counts()) == (before, rows)


def test_a_file_without_concepts_is_refused(project, expert):
    with pytest.raises(RuleViolation) as exc:
        skos_import(project=project, actor=expert, data="<urn:x:a> <urn:x:p> <urn:x:b> .")
    assert [v.rule for v in exc.value.violations] == ["skos.empty"]


def test_dry_run_reports_and_writes_nothing(project, expert):
    result = skos_import(project=project, actor=expert, data=THIRD_PARTY, dry_run=True)
    assert (result.clusters_created, result.labels_created, result.dry_run) == (2, 4, True)
    assert counts() == (0, 0, 0)


# --- management commands --------------------------------------------------------------------------


def test_commands_export_and_import(project, other_project, taxonomy, tmp_path):
    out = tmp_path / "acme.ttl"
    call_command("skos_export", "--project", "acme", "--out", str(out), stderr=StringIO())
    assert out.read_text(encoding="utf-8") == skos_export(project=project)
    stdout = StringIO()
    call_command("skos_import", "--project", "globex", str(out), stdout=stdout, stderr=StringIO())
    assert stdout.getvalue().strip() == (
        "imported acme.ttl into globex: clusters 2 created, 0 updated; "
        "labels 5 created, 0 updated, 0 unchanged; 0 warning(s)"
    )
    assert snapshot(other_project) == snapshot(project)
    assert (
        AuditEvent.objects.get(project=other_project, action="import").actor_name == "manage.py skos_import"
    )


def test_import_command_fails_on_a_violation_and_writes_nothing(project, tmp_path):
    path = tmp_path / "cycle.ttl"
    path.write_text(CYCLE, encoding="utf-8")
    stderr = StringIO()
    with pytest.raises(CommandError, match=r"cycle.ttl: import refused, nothing was written \(1 violation"):
        call_command("skos_import", "--project", "acme", str(path), stdout=StringIO(), stderr=stderr)
    assert "[taxonomy.no_cycles] parent chain forms a cycle" in stderr.getvalue()
    assert counts() == (0, 0, 0)


def test_import_command_reads_rdf_xml_by_extension(project, taxonomy, other_project, tmp_path):
    path = tmp_path / "acme.rdf"
    path.write_text(
        Graph().parse(data=skos_export(project=project), format="turtle").serialize(format="xml"),
        encoding="utf-8",
    )
    call_command("skos_import", "--project", "globex", str(path), stdout=StringIO(), stderr=StringIO())
    assert snapshot(other_project) == snapshot(project)


# --- API ------------------------------------------------------------------------------------------


def skos_url(project: Any) -> str:
    return f"/api/v1/projects/{project.slug}/skos/"


def test_api_get_returns_turtle_for_readers(project, taxonomy, reviewer, api_as, token_client):
    for client in (api_as(reviewer), token_client(project)):
        resp = client.get(skos_url(project), HTTP_ACCEPT="text/turtle")
        assert resp.status_code == 200
        assert resp["Content-Type"] == "text/turtle; charset=utf-8"
        graph = Graph().parse(data=resp.content.decode("utf-8"), format="turtle")
        assert len(set(graph.subjects(RDF.type, SKOS.Concept))) == 7
    assert api_as(reviewer).get(skos_url(project)).content.decode("utf-8") == skos_export(project=project)


def test_api_post_as_expert_imports(project, other_project, taxonomy, make_user, api_as):
    globex_expert = make_user("gus-expert", "expert", other_project)
    resp = api_as(globex_expert).post(
        skos_url(other_project), data=skos_export(project=project), content_type="text/turtle"
    )
    assert resp.status_code == 200, resp.content
    assert resp.json() == {
        "clusters_created": 2,
        "clusters_updated": 0,
        "labels_created": 5,
        "labels_updated": 0,
        "labels_unchanged": 0,
        "warnings": [],
        "dry_run": False,
    }
    assert snapshot(other_project) == snapshot(project)


def test_api_post_refusals(project, taxonomy, expert, reviewer, api_as):
    before, rows = snapshot(project), counts()
    resp = api_as(reviewer).post(skos_url(project), data=THIRD_PARTY, content_type="text/turtle")
    assert resp.status_code == 403
    resp = api_as(expert).post(skos_url(project), data="<urn:x:a> skos:broader", content_type="text/turtle")
    assert resp.status_code == 400
    assert resp.json()["rules"] == ["skos.parse"]
    resp = api_as(expert).post(skos_url(project), data=CYCLE, content_type="text/turtle")
    assert resp.status_code == 400
    assert resp.json()["rules"] == ["taxonomy.no_cycles"]
    resp = api_as(expert).post(skos_url(project), data="", content_type="text/turtle")
    assert resp.status_code == 400
    assert resp.json()["rules"] == ["skos.parse"]
    resp = api_as(expert).post(skos_url(project), data={"x": 1}, format="json")
    assert resp.status_code == 415
    assert (snapshot(project), counts()) == (before, rows)


def test_api_other_project_is_not_found(project, other_project, taxonomy, expert, api_as, token_client):
    assert api_as(expert).get(skos_url(other_project)).status_code == 404
    resp = api_as(expert).post(skos_url(other_project), data=THIRD_PARTY, content_type="text/turtle")
    assert resp.status_code == 404
    assert token_client(project).get(skos_url(other_project)).status_code == 404
    assert Label.objects.filter(project=other_project).count() == 0
