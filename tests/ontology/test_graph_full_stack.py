"""The platform end to end on each graph backend — on ``neo4j`` against a real server: a knowledge pack
imported, published, routed over the API, changed by the offline loop's application step and published
again, rolled back, and exported (pack and SKOS), with the draft graph read back from the store."""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from tests.review.loop_fixtures import store_proposal

ROOT = Path(__file__).resolve().parents[2]
DEMO_PACK = ROOT / "packs" / "demo" / "pack.yaml"
SURVIVOR, DUPLICATE = "N-deploy-tls-info", "N-deploy-tls-faq"


def _infer(client: Any, prompt: str) -> dict[str, Any]:
    response = client.post("/api/v1/infer", {"prompt": prompt}, format="json")
    assert response.status_code == 200, response.content
    return response.json()  # type: ignore[no-any-return]


@pytest.mark.django_db
def test_pack_publish_infer_apply_publish_rollback_export(app_store: Any, token_client: Any) -> None:
    from ontology.models import Release
    from ontology.snapshot_registry import registry
    from projects.models import Project
    from review.loop.application import proposal_apply
    from review.loop.generators.merge import merge_changeset
    from taxonomy.models import Role
    from taxonomy.packs import pack_read

    registry.clear()
    call_command("import_pack", str(DEMO_PACK), "--no-progress", stdout=StringIO())
    project = Project.objects.get(slug="acme-support")
    imported = app_store.export_graph(project.pk)
    assert len(imported.nodes) == len(pack_read(DEMO_PACK).section("nodes")) > 20
    call_command("publish_release", "acme-support", "--notes", "first", stdout=StringIO())

    client = token_client(project, role=Role.objects.get(project=project, key="customer"))
    first = _infer(client, "I need a copy of last month's invoice")
    assert first["release"]["version"] == 1 and first["path"]["nodes"]
    assert all(app_store.get_node(project.pk, n["node_id"]) for n in first["path"]["nodes"])

    # the offline loop's application step: an approved merge, applied and published as v2
    ops = merge_changeset(imported, SURVIVOR, DUPLICATE, reason="duplicate TLS content")
    proposal = store_proposal(
        project, Release.objects.get(project=project, version=1), "MERGE", ops, "APPROVED"
    )
    release = proposal_apply(proposal=proposal, actor=None)
    assert release.version == 2
    assert app_store.get_node(project.pk, DUPLICATE).status == "DEPRECATED"
    assert app_store.resolve_alias(project.pk, DUPLICATE) == (f"{SURVIVOR}.m1",)  # A + B → AB
    assert _infer(client, "how do I renew my TLS certificate")["release"]["version"] == 2

    call_command("activate_release", "acme-support", "1", "--reason", "roll back", stdout=StringIO())
    assert _infer(client, "I need a copy of last month's invoice")["release"]["version"] == 1

    pack_out, skos_out = StringIO(), StringIO()
    call_command("export_pack", "acme-support", stdout=pack_out)
    call_command("skos_export", "--project", "acme-support", stdout=skos_out)
    assert f"id: {DUPLICATE}" in pack_out.getvalue() and "status: DEPRECATED" in pack_out.getvalue()
    assert "skos:ConceptScheme" in skos_out.getvalue()
    if app_store.backend == "neo4j":  # the draft really lives in Neo4j
        with app_store.driver.session(database=app_store.database) as session:
            stored = session.run(
                "MATCH (n:OntologyNode {project_id: $p}) RETURN count(n) AS n", p=project.pk
            ).single()["n"]
        assert stored == len(app_store.export_graph(project.pk).nodes) >= len(imported.nodes)
    registry.clear()
