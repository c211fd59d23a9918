"""``context.product`` narrows routing to the nodes of that product (``inference.steps.products``),
through the API door on the demo pack with two nodes of one label tagged with different products."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import DEMO_PACK

pytestmark = pytest.mark.django_db

PROMPT = "how do preview deployments work for pull requests"
TAGGED = {"N-deploy-preview-envs": ["dashboard"], "N-deploy-preview-faq": ["cli", "api"]}  # label L00051


@pytest.fixture(scope="module")
def acme_pk(django_db_setup: Any, django_db_blocker: Any, tmp_path_factory: Any) -> Iterator[int]:
    """The demo pack with ``products`` on the two preview nodes, committed for this module."""
    from projects.models import Project
    from tests.review.queue_fixtures import _module_project

    pack = yaml.safe_load(DEMO_PACK.read_text())
    for node in pack["nodes"]:
        if node["id"] in TAGGED:
            node["products"] = TAGGED[node["id"]]
    path = Path(tmp_path_factory.mktemp("pack")) / "pack.yaml"
    path.write_text(yaml.safe_dump(pack, sort_keys=False, allow_unicode=True))
    with django_db_blocker.unblock():
        Project.objects.create(slug="id-taken", name="id taken").delete()
    yield from _module_project(path, django_db_blocker)


def infer(client: Any, product: str | None = None, prompt: str = PROMPT) -> Any:
    context = {"product": product} if product else {}
    return client.post("/api/v1/infer", {"prompt": prompt, "context": context}, format="json")


def target(resp: Any) -> str:
    assert resp.status_code == 200, resp.content
    return resp.json()["path"]["nodes"][-1]["node_id"]


def test_a_product_narrows_the_route_to_its_own_node(customer):
    """Without a product the prompt lands on the dashboard's node; a CLI request is routed to the CLI's
    node of the same label instead (the dashboard's is excluded); an untagged node still serves both."""
    from inference.models import InferenceLog

    assert target(infer(customer)) == "N-deploy-preview-envs"
    assert target(infer(customer, "dashboard")) == "N-deploy-preview-envs"
    cli = infer(customer, "cli")
    assert target(cli) == "N-deploy-preview-faq"
    assert "N-deploy-preview-envs" not in {c["node_id"] for c in cli.json()["outcome"]["citations"]}
    assert cli.json()["labels"] == infer(customer).json()["labels"]  # the same label: only nodes narrowed
    log = InferenceLog.objects.get(request_id=cli.json()["request_id"])
    assert log.policy_constraints["product"] == "cli"  # the trace shows the narrowing
    # a prompt whose node is tagged with no product is answered whatever the product
    invoices = "where can I download my invoice pdf"
    assert target(infer(customer, "cli", invoices)) == target(infer(customer, None, invoices))


def test_an_unknown_product_is_a_400_naming_the_field_and_the_known_ones(customer):
    from inference.models import InferenceLog

    before = InferenceLog.objects.count()
    resp = infer(customer, "tv-app")
    assert resp.status_code == 400, resp.content
    body = resp.json()
    assert body["rules"] == ["request.product_unknown"]
    assert "api, cli, dashboard" in body["errors"]["product"][0]
    assert InferenceLog.objects.count() == before + 1  # logged like every refused request


def test_a_release_declaring_no_products_ignores_the_product(envelope_for, demo):
    """The plain demo pack tags no node: ``context.product`` is accepted and narrows nothing."""
    from inference.steps.policy_manager import precheck
    from inference.steps.products import narrowed

    assert demo.products == frozenset()
    envelope = envelope_for("where can I download my invoice pdf", product="anything")
    decision = precheck(envelope, demo)
    assert narrowed(decision, "anything", demo.products) is decision


def test_products_are_validated_and_kept_by_export(acme):
    from ontology.store.port import NodeData
    from ontology.validator import node_violations
    from taxonomy.packs.exporter import pack_export

    def rules(*products: str) -> list[str]:
        node = NodeData(node_id="N-x", type="Info", title="x", chunk="x", products=products)
        return [v.rule for v in node_violations(node, labels={}, clusters=set())]

    assert rules("cli", "web_app-2") == []
    assert rules("Not a key") == ["graph.node_products"]
    assert rules("cli", "cli") == ["graph.node_products"]
    exported = {n["id"]: n.get("products") for n in pack_export(project=acme)["nodes"]}
    assert exported["N-deploy-preview-faq"] == ["cli", "api"]
    assert exported["N-deploy-preview-envs"] == ["dashboard"]
    assert exported["N-global-support-hours"] is None  # untagged nodes carry no key


def test_a_pack_with_a_malformed_product_key_is_refused_where_it_says_it(tmp_path, db):
    from arg_platform.errors import RuleViolation
    from projects.models import Project
    from taxonomy.packs import pack_import, pack_read

    from .conftest import SMALL_PACK

    pack = yaml.safe_load(SMALL_PACK.read_text())
    pack["nodes"][1]["products"] = ["Mobile App"]
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(pack, sort_keys=False, allow_unicode=True))
    with pytest.raises(RuleViolation) as info:
        pack_import(pack_read(path))
    (violation,) = info.value.violations
    assert violation.rule == "graph.node_products" and violation.field == "products"
    assert "nodes[1]" in violation.location
    assert not Project.objects.filter(slug=pack["project"]["slug"]).exists()  # nothing written
