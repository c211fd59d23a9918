"""Expert-written patterns through the doors people use (``arg_platform.patterns``, docs/security.md):

* an expert saving a policy over the API or with the browser form, a pack import and a publication
  are refused a pattern RE2 cannot run (backreference, lookaround, over the length bound), with a
  message that names the pattern, and nothing is written;
* a catastrophic pattern RE2 accepts (``(a+)+$``) is matched by RE2 on the online path, so a request
  crafted against it is answered like any other;
* a release that still carries a pattern RE2 refuses fails closed: its policy refuses every request.
"""

from __future__ import annotations

import dataclasses
import logging
from html import unescape
from types import MappingProxyType
from typing import Any

import pytest
import re2
import yaml
from django.test import Client

from arg_platform.errors import RuleViolation
from arg_platform.patterns import MAX_PATTERN_CHARS, ExpertPattern
from inference.contracts import PolicyState, RequestContext
from inference.models import InferenceLog
from inference.pipeline import InferenceRequest, run_inference
from inference.runtime import runtime_for
from ontology.releases import release_publish
from ontology.snapshot_registry import pin_snapshot
from projects.models import Project
from taxonomy.models import Policy, Role
from taxonomy.packs import pack_import
from taxonomy.packs.reader import pack_parse
from tests.security.conftest import SMALL_PACK
from tests.taxonomy.test_views import _field_error

pytestmark = pytest.mark.django_db

RE2_REFUSES = {
    "backreference": r"(\w+) \1",
    "lookahead": r"card(?=\d{16})",
    "lookbehind": r"(?<!not )hack",
    "too_long": "x" * (MAX_PATTERN_CHARS + 1),
}
CATASTROPHIC = "(a+)+$"


def _named(pattern: str) -> str:
    """How a refusal names the pattern (a long one by its first 60 characters)."""
    return f"'{pattern}'" if len(pattern) <= 60 else f"'{pattern[:60]}…'"


def _small_pack(**customer_policy: Any) -> str:
    data = yaml.safe_load(SMALL_PACK.read_text(encoding="utf-8"))
    data["policies"][0].update(customer_policy)
    return yaml.safe_dump(data, sort_keys=False)


# --- the expert's doors: API, browser form, pack import, publication ------------------------------


@pytest.mark.parametrize("case", sorted(RE2_REFUSES))
def test_the_api_refuses_a_pattern_re2_cannot_run_naming_it(project, expert, api_as, case):
    pattern = RE2_REFUSES[case]
    resp = api_as(expert).post(
        f"/api/v1/projects/{project.slug}/policies/",
        {"key": "agent", "name": "Agent", "blocked_patterns": [r"\bssn\b", pattern]},
        format="json",
    )
    assert resp.status_code == 400, resp.content
    body = resp.json()
    assert body["rules"] == ["policy.pattern"]
    (message,) = body["errors"]["blocked_patterns"]
    assert message.startswith(f"blocked_patterns: {_named(pattern)} ")
    assert not Policy.objects.filter(project=project).exists()


def test_the_api_refuses_such_a_pattern_on_an_existing_policy(project, expert, api_as):
    client = api_as(expert)
    url = f"/api/v1/projects/{project.slug}/policies/"
    assert client.post(url, {"key": "agent", "name": "Agent"}, format="json").status_code == 201
    resp = client.patch(f"{url}agent/", {"blocked_patterns": [r"(a)\1"]}, format="json")
    assert resp.status_code == 400
    assert resp.json()["errors"]["blocked_patterns"] == [
        r"blocked_patterns: '(a)\1' cannot run on RE2: invalid escape sequence: \1 "
        "(backreferences are not supported)"
    ]
    assert Policy.objects.get(project=project, key="agent").blocked_patterns == []


@pytest.mark.parametrize("case", ["backreference", "lookahead"])
def test_the_policy_form_shows_the_refusal_next_to_the_field(project, expert, case):
    pattern = RE2_REFUSES[case]
    client = Client()
    client.force_login(expert)
    response = client.post(
        f"/p/{project.slug}/policies/",
        {"key": "agent", "name": "Agent", "blocked_patterns": f"\\bssn\\b\n{pattern}\n"},
    )
    assert response.status_code == 422
    error = _field_error(response.content.decode(), "new-policy-blocked_patterns")
    assert error.startswith(f"policy.pattern blocked_patterns: {_named(pattern)} cannot run on RE2: ")
    assert not Policy.objects.filter(project=project).exists()
    page = unescape(client.get(f"/p/{project.slug}/policies/").content.decode())
    assert "RE2 syntax: no backreferences or lookaround" in page


def test_a_pack_whose_policy_holds_such_a_pattern_is_refused_at_import():
    pattern = RE2_REFUSES["lookbehind"]
    with pytest.raises(RuleViolation) as info:
        pack_import(pack_parse(_small_pack(blocked_patterns=[pattern]), source="expert.yaml"))
    (violation,) = [v for v in info.value.violations if v.rule == "policy.pattern"]
    assert violation.message == (
        f"blocked_patterns: {_named(pattern)} cannot run on RE2: invalid perl operator: (?<! "
        "(lookbehind is not supported)"
    )
    assert violation.location.startswith("expert.yaml")
    assert not Project.objects.exists() and not Policy.objects.exists()


def test_a_stored_pattern_re2_refuses_stops_publication():
    """Data saved under the old rules (Python ``re``) is judged again when the draft is published."""
    project = pack_import(pack_parse(_small_pack(), source="tiny.yaml")).project
    Policy.objects.filter(project=project, key="customer").update(blocked_patterns=[r"(?<!not )hack"])
    with pytest.raises(RuleViolation) as info:
        release_publish(project=project, actor=None)
    assert any(
        v.rule == "release.invalid_draft" and "'(?<!not )hack' cannot run on RE2" in v.message
        for v in info.value.violations
    ), info.value.violations


# --- the online path ------------------------------------------------------------------------------


def test_a_catastrophic_pattern_runs_on_re2_and_its_request_is_answered(token_client):
    project = pack_import(
        pack_parse(_small_pack(blocked_patterns=[CATASTROPHIC]), source="catastrophic.yaml")
    ).project
    release_publish(project=project, actor=None)
    snapshot = pin_snapshot(project.pk)
    assert snapshot is not None
    (compiled,) = runtime_for(snapshot).policy_for_role("customer").blocked_patterns
    # checked before any request is sent: a backtracking engine fails here instead of stalling
    assert isinstance(compiled, ExpertPattern)
    assert isinstance(compiled.regexp, type(re2.compile("x")))

    client = token_client(project, role=Role.objects.get(project=project, key="customer"))
    resp = client.post("/api/v1/infer", {"prompt": "a" * 29 + "!"}, format="json")
    assert resp.status_code == 200, resp.content
    assert resp.json()["policy"]["state"] != "BLOCK"
    assert (
        "blocked_pattern" not in InferenceLog.objects.get(request_id=resp.json()["request_id"]).policy_reasons
    )
    resp = client.post("/api/v1/infer", {"prompt": "a" * 30}, format="json")
    assert resp.status_code == 200, resp.content
    assert resp.json()["policy"]["state"] == "BLOCK"
    assert InferenceLog.objects.get(request_id=resp.json()["request_id"]).policy_reasons == [
        "blocked_pattern"
    ]


def test_a_release_carrying_a_pattern_re2_refuses_fails_closed(caplog):
    project = pack_import(pack_parse(_small_pack(), source="tiny.yaml")).project
    release_publish(project=project, actor=None)
    published = pin_snapshot(project.pk)
    assert published is not None
    documents = dict(published.documents)
    documents["policies"] = [
        {**p, "blocked_patterns": [r"(?i)\bhack into\b", r"(?<!not )hack"]} for p in documents["policies"]
    ]
    stale = dataclasses.replace(
        published, documents=MappingProxyType(documents), checksum=f"{published.checksum}-stale"
    )
    with caplog.at_level(logging.ERROR, logger="inference.steps.policy_manager"):
        result = run_inference(
            InferenceRequest(
                "r-stale", project, "where can I download my invoice", RequestContext(),
                default_role="customer", snapshot=stale,
            )
        )  # fmt: skip
    assert result.error is None
    assert result.decision is not None and result.decision.state is PolicyState.BLOCK
    assert result.decision.reasons == ("blocked_pattern_unusable",)
    assert result.outcome is not None and result.outcome.answer == "I can't help with that."
    assert "policy customer: blocked pattern '(?<!not )hack' cannot run on RE2" in caplog.text
