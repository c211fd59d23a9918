"""``contracts.plain`` gives what ``dataclasses.asdict`` gives once JSON-encoded, on real results."""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

import pytest

from inference.contracts import RequestContext, plain
from inference.pipeline import InferenceRequest, run_inference
from ontology.releases import release_publish
from taxonomy.packs import pack_import, pack_read
from tests.inference.conftest import DEMO_PACK

pytestmark = pytest.mark.django_db

PROMPTS = (
    "where can I download my invoice pdf",
    "I forgot my password and cannot log in",
    "reset my password please",
    "what is the refund policy for annual plans",
    "the app crashes on startup",
    "remember that I prefer email",
    "tell me a joke about the weather",
)


def _asdict_json(value: Any) -> str:
    def default(x: Any) -> Any:
        if isinstance(x, set | frozenset):
            return sorted(str(v) for v in x)
        return str(x)

    return json.dumps(asdict(value), default=default, sort_keys=True)


def test_plain_encodes_like_asdict_for_every_part_of_real_results() -> None:
    project = pack_import(pack_read(DEMO_PACK)).project
    release_publish(project=project, actor=None)
    kinds = set()
    context = RequestContext(channel="web", history=("hi",), timestamp=datetime(2026, 11, 22, tzinfo=UTC))
    for prompt in PROMPTS:
        result = run_inference(
            InferenceRequest(uuid.uuid4().hex, project, prompt, context, default_role="customer")
        )
        assert result.error is None
        kinds.add(str(result.outcome.kind))
        for part in (result.outcome, result.landing, result.weaver, result.route, result.envelope, context):
            if part is not None:
                assert json.dumps(plain(part), default=str, sort_keys=True) == _asdict_json(part)
    assert len(kinds) >= 3, kinds  # several outcome kinds, not one shape
