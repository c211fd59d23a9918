"""The per-release runtime: built once from the frozen snapshot, cached by release, read-only."""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from types import MappingProxyType

import pytest
import yaml

from inference import runtime as release_runtime
from inference.runtime import RoleBinding, runtime_cache_clear, runtime_for
from tests.inference.conftest import DEMO_PACK

pytestmark = pytest.mark.django_db  # the session fixture publishes the demo release once

PACK = yaml.safe_load(DEMO_PACK.read_text(encoding="utf-8"))


def test_runtime_holds_the_release_taxonomy_roles_and_policies(demo, demo_snapshot):
    assert (demo.project_id, demo.release_id, demo.version, demo.checksum) == (
        demo_snapshot.project_id,
        demo_snapshot.release_id,
        demo_snapshot.version,
        demo_snapshot.checksum,
    )
    assert len(demo.taxonomy.labels) == len(PACK["labels"]) == 104
    assert demo.taxonomy.clusters == frozenset(c["key"] for c in PACK["clusters"])
    assert len(demo.taxonomy.incompatibilities) == len(PACK["incompatibilities"])
    assert demo.taxonomy.labels["L00008"].parent == "L00007"
    assert demo.roles["privacy-officer"] == RoleBinding(
        "privacy-officer", "privacy-desk", "compliance-careful"
    )
    assert sorted(demo.policies) == [
        "anonymous-visitor",
        "customer",
        "privacy-desk",
        "sre-operator",
        "support-agent",
    ]
    assert sorted(demo.typologies) == [
        "compliance-careful",
        "guided-troubleshooting",
        "operator-console",
        "quick-answer",
    ]
    assert demo.default_typology == "quick-answer"
    assert demo.labels["L00056"]["status"] == "SHADOW"


def test_runtime_is_read_only(demo):
    with pytest.raises(dataclasses.FrozenInstanceError):
        demo.default_typology = "operator-console"
    with pytest.raises(TypeError):
        demo.roles["intruder"] = RoleBinding("intruder", "sre-operator", None)
    with pytest.raises(ValueError):
        demo.lexical.postings["invoice"][1][0] = 99.0


def test_runtime_is_built_once_per_release(demo, demo_snapshot):
    assert runtime_for(demo_snapshot) is demo
    rebuilt = dataclasses.replace(demo_snapshot, documents=MappingProxyType(dict(demo_snapshot.documents)))
    assert runtime_for(rebuilt) is demo  # same project, release and checksum


def test_another_release_gets_its_own_runtime_and_the_cache_is_bounded(demo, demo_snapshot, monkeypatch):
    monkeypatch.setattr(release_runtime, "RUNTIME_CACHE_SIZE", 2)
    monkeypatch.setattr(release_runtime, "_cache", OrderedDict(release_runtime._cache))  # restored after
    runtime_cache_clear()
    first = runtime_for(demo_snapshot)
    assert first is not demo  # the cache was cleared: rebuilt
    other = dataclasses.replace(
        demo_snapshot, release_id=(demo_snapshot.release_id or 0) + 1000, checksum="other"
    )
    second = runtime_for(other)
    assert second is not first and second.checksum == "other"
    third = runtime_for(dataclasses.replace(demo_snapshot, checksum="third"))
    assert runtime_for(other) is second
    assert runtime_for(demo_snapshot) is not first  # evicted as the least recently used
    assert len(release_runtime._cache) == 2
    assert third.policies.keys() == first.policies.keys()
