"""The demo knowledge pack `make run` loads: realistic, complete, valid on import."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from arg_platform.vocabulary import NODE_TYPES
from projects.models import Project
from taxonomy.models import Label, Policy, Role
from taxonomy.packs import pack_export, pack_import, pack_read

DEMO = Path(__file__).resolve().parents[2] / "packs" / "demo" / "pack.yaml"


@pytest.mark.django_db
def test_demo_pack_imports_and_has_the_promised_size():
    result = pack_import(pack_read(DEMO))
    project = result.project
    assert project.slug == "acme-support"
    assert project.clusters.count() >= 5
    labels = Label.objects.filter(project=project)
    assert labels.count() >= 60
    assert max(labels.values_list("depth", flat=True)) >= 2  # root → parent → child: three levels
    assert all(len(label.examples) >= 3 for label in labels.filter(status="ACTIVE"))
    assert project.typologies.count() >= 3
    roles = Role.objects.filter(project=project)
    assert roles.count() >= 3
    assert len({r.policy_id for r in roles}) >= 3
    policies = Policy.objects.filter(project=project)
    signatures = {
        (tuple(p.allowed_labels), tuple(p.forbidden_labels), tuple(p.forbidden_node_types)) for p in policies
    }
    assert len(signatures) == policies.count()  # the policies really differ
    pack = pack_export(project=project)
    types = Counter(node["type"] for node in pack["nodes"])
    assert set(types) == NODE_TYPES
    assert len(pack["nodes"]) >= 150
    assert len(pack["edges"]) >= 400


@pytest.mark.django_db
def test_demo_pack_round_trips_exactly():
    pack_import(pack_read(DEMO))
    first = pack_export(project=Project.objects.get(slug="acme-support"))
    from taxonomy.packs import pack_dump
    from taxonomy.packs.reader import pack_parse

    pack_import(pack_parse(pack_dump(first), source="export.yaml"), project_slug="acme-copy")
    second = pack_export(project=Project.objects.get(slug="acme-copy"))
    second["project"] = first["project"]
    assert second == first


@pytest.mark.django_db
def test_demo_pack_declares_distinct_terms_the_registry_applies():
    from memory.models import TermDistinction

    pack_import(pack_read(DEMO))

    pairs = set(TermDistinction.objects.values_list("first", "second"))
    assert {
        ("bank transfer", "card"),
        ("card", "paypal"),
        ("pro plan", "team plan"),
        ("enterprise plan", "hobby plan"),
    } <= pairs
    assert len(pairs) == 3 + 3 + 6
