"""One changeset interpreter (issue 21, parts 1 and 2), checked on random changesets.

For each of 500 random changesets over a seeded synthetic project (60 nodes, published): applying it in memory to the
active release and freezing the result (what replay scores) gives the same nodes, edges, attachments,
aliases, label tree and release checksum as applying it to the stores (the draft, through the services)
and freezing what the stores then hold. When the stores refuse a changeset, the in-memory side must
have found a reason too (a conflict, or a validator finding). Each example runs in a unit of work of
both stores that is rolled back, so every changeset starts from the same seeded graph.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arg_platform.errors import RuleViolation
from ontology.store.port import GraphData

pytestmark = pytest.mark.django_db

EXAMPLES = 500
WORDS = ("invoice", "refund", "deploy", "certificate", "password", "export", "ticket", "region", "plan")
REASON = "offline proposal #0 (PROPERTY): random changeset"


class _Undo(Exception):
    """Raised at the end of an example so that ``graph_atomic`` rolls both stores back."""


def _phrase() -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(lambda w: " ".join(w).capitalize())


def _changesets(graph: GraphData, labels: list[dict[str, Any]]) -> st.SearchStrategy[tuple[Any, ...]]:
    from arg_platform.vocabulary import EDGE_TYPE_CHOICES
    from review import changeset as c

    node_ids = sorted(n.node_id for n in graph.nodes)
    edges = sorted(e.key for e in graph.edges)
    live = [label for label in labels if label["status"] in ("ACTIVE", "SHADOW")]
    label_ids = sorted(label["id"] for label in live)
    cluster_of = {label["id"]: label["cluster"] for label in labels}
    node = st.sampled_from(node_ids)
    weight = st.integers(-100, 100).map(lambda x: x / 100)

    node_add = st.builds(
        lambda k, title, chunk, label: c.NodeAdd(
            f"N-prop-{k}", "Info", title, chunk, labels=(label,), clusters=(cluster_of[label],)
        ),
        st.integers(0, 3),
        _phrase(),
        _phrase(),
        st.sampled_from(label_ids),
    )
    ops = st.one_of(
        node_add,
        st.builds(lambda n, t: c.NodeContentSet(n, title=t), node, _phrase()),
        st.builds(lambda n, t: c.NodeContentSet(n, chunk=t, risk="medium"), node, _phrase()),
        st.builds(lambda n, label: c.NodeAttach(n, labels=(label,)), node, st.sampled_from(label_ids)),
        st.builds(lambda n, label: c.NodeDetach(n, labels=(label,)), node, st.sampled_from(label_ids)),
        st.builds(lambda n: c.NodeStatusSet(n, "DEPRECATED", "obsolete"), node),
        st.builds(c.EdgeAdd, node, node, st.sampled_from(EDGE_TYPE_CHOICES), weight),
        st.builds(lambda e, w: c.EdgeSetWeight(*e, weight=w), st.sampled_from(edges), weight),
        st.builds(lambda e: c.EdgeRemove(*e, reason="unused"), st.sampled_from(edges)),
        st.builds(lambda s, t: c.AliasSet(s, (t,), "redirect"), node, node),
        st.builds(
            lambda k, name, parent, status: c.LabelAdd(
                f"r{k}", name, cluster_of[parent], parent, examples=(f"{name} please",), status=status
            ),
            st.integers(0, 1),
            _phrase(),
            st.sampled_from(label_ids),
            st.sampled_from(["CANDIDATE", "SHADOW"]),
        ),
        st.builds(c.LabelStatusSet, st.sampled_from(label_ids), st.sampled_from(["DEPRECATED", "ACTIVE"])),
    )
    return st.lists(ops, min_size=1, max_size=5).map(tuple)


def _comparable(graph: GraphData) -> tuple[Any, ...]:
    """Nodes, edges (at the float32 precision a release keeps) and aliases, comparable by value."""
    nodes = tuple(sorted((n.node_id, n.__dict__ | {"embedding": None}) for n in graph.nodes))
    edges = tuple(sorted((e.key, float(np.float32(e.weight)), e.semantics) for e in graph.edges))
    aliases = tuple(sorted((a.source, a.targets, a.reason) for a in graph.aliases))
    return nodes, edges, aliases


@pytest.fixture
def seeded_release(db: Any) -> tuple[Any, Any]:
    from bench.synthetic import synthetic_pack
    from ontology.releases import release_publish
    from taxonomy.packs import pack_import
    from taxonomy.packs.reader import PackDocument

    pack = synthetic_pack(nodes=60, seed=21, slug="property")
    project = pack_import(PackDocument(data=pack, source="synthetic")).project
    return project, release_publish(project=project, actor=None)


def test_applying_in_memory_then_freezing_equals_applying_to_the_stores_then_freezing(seeded_release):
    from ontology.releases import draft_state, knowledge_digest, knowledge_violations
    from ontology.store.unit_of_work import graph_atomic
    from review.changeset_apply import Applied, ChangesetConflict, KnowledgeState, changeset_apply
    from review.loop.application import effects_write
    from review.loop.shadow import BaseRelease, shadow_freeze, shadow_violations
    from taxonomy.services import next_label_id

    project, release = seeded_release
    base = BaseRelease.load(release)
    draft = KnowledgeState(*draft_state(project))  # every example starts from it: each one is rolled back
    assert knowledge_digest(draft.graph, draft.documents) == release.content_digest
    labels = base.documents["labels"]
    project.refresh_from_db()
    assert project.label_seq == max(int(label["id"][1:]) for label in labels)  # both sides issue the same IDs
    outcomes: Counter[str] = Counter()

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(ops=_changesets(base.graph, labels))
    def check(ops: tuple[Any, ...]) -> None:
        try:
            in_memory: Applied | None = changeset_apply(base.state, ops, reason=REASON)
        except ChangesetConflict:
            in_memory = None
        stored: KnowledgeState | None = None
        try:
            with graph_atomic():
                try:
                    on_draft = changeset_apply(
                        draft,
                        ops,
                        reason=REASON,
                        issue_label_id=lambda: next_label_id(project=project),
                    )
                except ChangesetConflict:
                    on_draft = None
                assert (on_draft is None) == (in_memory is None), ops  # the same conflicts on both
                if on_draft is not None:
                    effects_write(project=project, actor=None, effects=on_draft.effects, reason=REASON)
                    stored = KnowledgeState(*draft_state(project))
                raise _Undo
        except _Undo:
            pass
        except RuleViolation:  # a service refused a write: the in-memory side must have a finding too
            assert in_memory is not None
            findings = shadow_violations(in_memory) or knowledge_violations(
                in_memory.graph, in_memory.documents
            )
            assert findings, ops
            outcomes["refused by both"] += 1
            return
        if in_memory is None:
            outcomes["conflict on both"] += 1
            return
        assert stored is not None
        assert _comparable(stored.graph) == _comparable(in_memory.graph), ops
        assert stored.documents["labels"] == in_memory.documents["labels"], ops
        frozen_memory = shadow_freeze(base, in_memory)
        frozen_stores = shadow_freeze(base, Applied(state=stored))
        assert frozen_stores.checksum == frozen_memory.checksum, ops
        assert frozen_stores.digest == frozen_memory.digest, ops
        outcomes["equal"] += 1

    check()
    assert sum(outcomes.values()) >= EXAMPLES
    assert outcomes["equal"] >= EXAMPLES // 2, outcomes  # most changesets really went through both paths
