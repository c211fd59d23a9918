"""The policy guarantees of the online loop, end to end (``run_inference`` and ``POST /api/v1/infer``):

* no BLOCKed prompt reaches retrieval — neither the lexical step nor the embedder is called;
* no forbidden label or node type ever appears in a RESTRICTed response (property-based, 1,000 cases);
* no structural write during a request — no write to taxonomy, ontology or release tables, no call
  to the graph store at all, and the pinned snapshot's arrays are read-only.

Component-level properties live beside the components (tests/inference/test_lexical.py, test_landing.py,
test_traversal.py, test_policy_manager.py); these check the assembled pipeline and its answer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import ontology.store as store_module
from inference.contracts import PolicyState, RequestContext
from inference.pipeline import InferenceRequest, run_inference
from ontology.releases import release_publish
from ontology.snapshot_registry import pin_snapshot
from taxonomy.models import Role
from taxonomy.packs import pack_import
from taxonomy.packs.reader import pack_parse

pytestmark = pytest.mark.django_db

SMALL_PACK = Path(__file__).resolve().parents[1] / "taxonomy" / "fixtures" / "small_pack.yaml"
FORBIDDEN_LABELS = {"L00003"}
FORBIDDEN_TYPES = {"Action"}
RESTRICT_TERMS = ["refund", "chargeback", "dispute"]
BLOCKED_TERMS = ["idiot", "moron"]
CAUTIOUS_REFOCUS = "Cautious callers get invoice help only."
PROMPTS = [
    "where is my invoice",
    "download my bill",
    "get invoice pdf",
    "please resend invoice 2024-17",
    "I cannot log in",
    "sign-in fails with my password",
    "my login is broken and I need an invoice",
]


def _pack() -> str:
    """The small pack plus a login help node, a 'cautious' role whose policy restricts on money
    disputes, forbids the login label and Action nodes, and blocks insults, and an 'agent' role whose
    policy forbids no label."""
    data = yaml.safe_load(SMALL_PACK.read_text(encoding="utf-8"))
    data["nodes"].append(
        {
            "id": "N-login-help",
            "type": "Info",
            "title": "Login help",
            "chunk": "Reset your password from the sign-in page.",
            "risk": "low",
            "status": "ACTIVE",
            "labels": ["L00003"],
            "clusters": ["access"],
            "preconditions": [],
            "parameters": [],
            "handler": "",
        }
    )
    cautious = dict(data["policies"][0])
    cautious.update(
        key="cautious",
        name="Cautious",
        forbidden_labels=sorted(FORBIDDEN_LABELS),
        forbidden_node_types=sorted(FORBIDDEN_TYPES),
        blocked_terms=BLOCKED_TERMS,
        sensitive_topics=[{"topic": "money disputes", "terms": RESTRICT_TERMS, "action": "RESTRICT"}],
        refocus_template=CAUTIOUS_REFOCUS,
    )
    data["policies"].append(cautious)
    data["roles"].append(
        {"key": "cautious", "name": "Cautious", "policy": "cautious", "default_typology": "quick"}
    )
    agent = dict(data["policies"][0], key="agent", name="Agent", forbidden_labels=[])  # may use every label
    data["policies"].append(agent)
    data["roles"].append({"key": "agent", "name": "Agent", "policy": "agent", "default_typology": "quick"})
    return yaml.safe_dump(data, sort_keys=False)


@pytest.fixture
def guarded() -> dict[str, Any]:
    project = pack_import(pack_parse(_pack(), source="guarded.yaml")).project
    release_publish(project=project, actor=None)
    snapshot = pin_snapshot(project.pk)
    assert snapshot is not None
    return {"project": project, "snapshot": snapshot}


def _run(project: Any, prompt: str, role: str = "cautious") -> Any:
    return run_inference(InferenceRequest("r-guard", project, prompt, RequestContext(), default_role=role))


FILLER = st.lists(st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=2, max_size=9), max_size=3)


def _compose(base: str, term: str, filler: list[str], at: int, shout: bool) -> str:
    words = base.split()
    words.insert(at % (len(words) + 1), term)
    words += filler
    text = " ".join(words)
    return text.upper() if shout else text


restricted_prompts = st.builds(
    _compose,
    st.sampled_from(PROMPTS),
    st.sampled_from(RESTRICT_TERMS),
    FILLER,
    st.integers(0, 20),
    st.booleans(),
)


@settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(prompt=restricted_prompts)
def test_no_forbidden_label_or_node_type_in_a_restricted_response(guarded, prompt):
    result = _run(guarded["project"], prompt)
    snapshot = guarded["snapshot"]

    # random filler may spell an off-domain request (refocused) — only RESTRICTed cases count
    assume(result.decision is not None and result.decision.state == PolicyState.RESTRICT)
    labels = set(result.weaver.l_final) if result.weaver else set()
    assert not labels & FORBIDDEN_LABELS, (prompt, labels)
    shown = set()
    if result.landing is not None and result.landing.node_start:
        shown.add(result.landing.node_start)
    if result.route is not None:
        shown |= set(result.route.path_nodes) | ({result.route.target} if result.route.target else set())
    types = {snapshot.node(node_id).type for node_id in shown}
    assert not types & FORBIDDEN_TYPES, (prompt, shown)
    assert "N-login-help" not in shown and "N-resend-invoice" not in shown
    assert result.outcome is not None and result.outcome.kind != "ACTION"


def test_a_restricted_api_answer_hides_the_path_and_names_no_forbidden_label(guarded, token_client):
    project = guarded["project"]
    client = token_client(project, role=Role.objects.get(project=project, key="cautious"))
    for base in PROMPTS:
        body = client.post("/api/v1/infer", {"prompt": f"{base}, refund"}, format="json").json()
        assert body["policy"]["state"] == "RESTRICT"
        assert body["path"] == {"nodes": [], "edges": []}
        assert not set(body["labels"]) & FORBIDDEN_LABELS
        assert "Login help" not in body["explanation"] and "Resend an invoice" not in body["explanation"]
        assert body["outcome"]["kind"] != "ACTION"


def test_a_request_about_a_label_the_role_may_not_use_is_refocused_with_its_policys_message(
    guarded, token_client
):
    """The login label exists but the cautious policy forbids it: the answer is that policy's refocus
    message, not the text of the nearest OutOfScope node nor a fallback; the same prompt under a role
    that may use the label is answered."""
    project = guarded["project"]
    result = _run(project, "I cannot log in")
    assert result.weaver.policy_gated and result.weaver.rejected == (("L00003", "policy.label_gate"),)
    assert result.landing.abstained and result.route is None
    assert (result.outcome.kind, result.outcome.answer) == ("REFOCUS", CAUTIOUS_REFOCUS)
    assert result.explanation == "Outside what this role may ask; refocused (policy.label_gate)."

    body = (
        token_client(project, role=Role.objects.get(project=project, key="cautious"))
        .post("/api/v1/infer", {"prompt": "sign-in fails with my password"}, format="json")
        .json()
    )
    assert body["outcome"]["kind"] == "REFOCUS" and body["outcome"]["answer"] == CAUTIOUS_REFOCUS
    assert body["path"] == {"nodes": [], "edges": []} and body["labels"] == {}

    allowed = _run(project, "I cannot log in", role="agent")
    assert not allowed.weaver.policy_gated and "L00003" in allowed.weaver.l_final
    assert allowed.outcome.kind == "INFO" and allowed.route.target == "N-login-help"

    off_domain = _run(project, "what is the weather in paris")  # refocused by the scope guard, as before
    assert off_domain.decision.state == PolicyState.ALLOW_WITH_REFOCUS and off_domain.weaver is None


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(
    base=st.sampled_from(PROMPTS),
    term=st.sampled_from(BLOCKED_TERMS),
    spelling=st.sampled_from([str.lower, str.upper, str.title]),
    filler=FILLER,
    at=st.integers(0, 20),
)
def test_a_blocked_prompt_never_reaches_retrieval(guarded, monkeypatch, base, term, spelling, filler, at):
    calls: list[str] = []
    import inference.steps.lexical as lexical
    from arg_platform.embedder import get_embedder

    embedder = get_embedder()
    monkeypatch.setattr(lexical, "lexical_candidates", lambda *a, **k: calls.append("lexical"))
    monkeypatch.setattr(embedder, "embed_one", lambda *a, **k: calls.append("embed"))
    prompt = _compose(base, spelling(term), filler, at, shout=False)

    result = _run(guarded["project"], prompt)

    assert result.decision.state == PolicyState.BLOCK, prompt
    assert calls == []
    assert result.lexical is None and result.weaver is None and result.landing is None
    assert result.outcome.kind == "REFUSE"


class _CountingStore:
    def __init__(self, real: Any) -> None:
        self.real, self.calls = real, []

    def __getattr__(self, name: str) -> Any:
        self.calls.append(name)
        return getattr(self.real, name)


def test_no_structural_write_during_requests(guarded, token_client, monkeypatch):
    project = guarded["project"]
    counting = _CountingStore(store_module.get_graph_store())
    monkeypatch.setattr(store_module, "_store", counting)
    client = token_client(project, role=Role.objects.get(project=project, key="customer"))
    cautious = token_client(project, role=Role.objects.get(project=project, key="cautious"), name="cautious")
    with CaptureQueriesContext(connection) as queries:
        for prompt in PROMPTS:
            for caller in (client, cautious):
                answer = caller.post("/api/v1/infer", {"prompt": prompt, "dry_run": True}, format="json")
                assert answer.status_code == 200
        request_id = answer.json()["request_id"]
        assert client.post(
            "/api/v1/feedback", {"request_id": request_id, "kind": "helpful", "helpful": True}, format="json"
        ).status_code in (200, 404)
    writes = [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE", "REPLACE"))
    ]
    written = {sql.split('"')[1] for sql in writes}
    assert written <= {
        "inference_inferencelog",
        "inference_feedback",
        "projects_apitoken",
        "inference_actionexecution",
    }
    assert counting.calls == []  # the hot path never touches the graph store: it reads the snapshot
    snapshot = guarded["snapshot"]
    arrays = [v for v in vars(snapshot).values() if isinstance(v, np.ndarray)]
    assert arrays and all(not a.flags.writeable for a in arrays)
