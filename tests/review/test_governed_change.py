"""What a reviewer approves is exactly what clients get (issue 21, parts 1–3).

Approving a proposal publishes *active release + its changeset* — an expert's unpublished draft edits
stay in the draft until an admin publishes it; the release records its lineage; a changeset that
collides with an unpublished draft edit is refused with the objects named; replay's shadow release is
the release approval publishes.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.review.test_loop_application import PARENT, _split_ops

pytestmark = pytest.mark.django_db

ACTION = "N-billing-resend-invoice"
OTHER = "N-deploy-tls-info"


def _member(project: Any, role: str) -> Any:
    from django.contrib.auth import get_user_model

    from projects.models import Membership

    user = get_user_model().objects.create_user(f"{role}-{project.slug}", password="x")
    Membership.objects.create(project=project, user=user, role=role)
    return user


def _expert_edits(project: Any, expert: Any) -> None:
    from ontology.services import node_update

    node_update(project=project, actor=expert, node_id=OTHER, changes={"title": "TLS certificates (draft)"})
    node_update(project=project, actor=expert, node_id=ACTION, changes={"handler": "python:billing.evil"})


def test_approval_publishes_the_active_release_plus_the_changeset_not_the_draft(
    demo_release, stored_proposal, make_user
):
    from ontology.models import Release
    from ontology.releases import draft_publish, release_snapshot
    from ontology.store import get_graph_store
    from review.loop.application import proposal_apply

    project, base = demo_release
    expert, admin = make_user("expert"), make_user("admin")
    _expert_edits(project, expert)
    split = stored_proposal(project, base, "SPLIT", _split_ops(project), status="APPROVED")

    release = proposal_apply(proposal=split, actor=None)

    served = release_snapshot(release=release)
    assert served.node(PARENT).status == "DEPRECATED" and served.node(f"{PARENT}.s1") is not None
    assert served.node(OTHER).title == "How HTTPS certificates are managed"  # the expert's edit is not in
    assert served.node(ACTION).extras.get("handler") == "python:billing.resend_invoice"
    assert (release.source, release.parent_id) == (Release.Source.CHANGESETS, base.pk)
    assert release.knowledge_revision == 0  # the draft holds more than this release
    split.refresh_from_db()
    assert split.applied_release_id == release.pk
    # the draft keeps both: the expert's edits and the approved change
    store = get_graph_store()
    assert store.get_node(project.pk, OTHER).title == "TLS certificates (draft)"
    assert store.get_node(project.pk, PARENT).status == "DEPRECATED"

    from django.test import Client

    browser = Client()
    browser.force_login(_member(project, "admin"))
    lineage = browser.get(f"/p/{project.slug}/graph/releases/").content.decode()
    assert f"v{base.version} + approved" in lineage and f"#{split.pk}" in lineage
    api = browser.get(f"/api/v1/projects/{project.slug}/releases/{release.version}/").json()
    assert (api["source"], api["parent_version"], api["proposals"]) == (
        "CHANGESETS",
        base.version,
        [split.pk],
    )

    published, created = draft_publish(project=project, actor=admin)
    assert created and (published.source, published.parent_id) == (Release.Source.DRAFT, release.pk)
    served = release_snapshot(release=published)
    assert served.node(OTHER).title == "TLS certificates (draft)"
    assert served.node(ACTION).extras.get("handler") == "python:billing.evil"
    assert served.node(PARENT).status == "DEPRECATED"


def test_a_changeset_on_an_object_with_an_unpublished_draft_edit_is_refused_and_keeps_its_status(
    demo_release, stored_proposal, make_user
):
    from ontology.models import Release
    from ontology.services import node_update
    from ontology.store import get_graph_store
    from review.loop.application import DraftConflict, draft_conflicts, proposal_apply

    project, base = demo_release
    split = stored_proposal(project, base, "SPLIT", _split_ops(project), status="APPROVED")
    node_update(project=project, actor=make_user("expert"), node_id=PARENT, changes={"chunk": "Rewritten."})
    before = get_graph_store().export_graph(project.pk)

    assert f"node {PARENT}" in draft_conflicts(proposal=split)
    from django.test import Client

    reviewer = Client()
    reviewer.force_login(_member(project, "reviewer"))
    page = reviewer.get(f"/p/{project.slug}/review/proposals/{split.pk}/").content.decode()
    assert 'id="draft-conflict"' in page and "review.draft_conflict" in page and f"node {PARENT}" in page
    with pytest.raises(DraftConflict) as refused:
        proposal_apply(proposal=split, actor=None)

    assert refused.value.violations[0].rule == "review.draft_conflict"
    assert (
        f"node {PARENT}" in refused.value.message and "publish or revert the draft" in refused.value.message
    )
    split.refresh_from_db()
    assert split.status == "APPROVED" and split.applied_release_id is None
    assert list(Release.objects.filter(project=project)) == [base]
    assert get_graph_store().export_graph(project.pk) == before


def test_after_an_approval_on_a_clean_draft_publishing_the_draft_is_a_no_op(demo_release, stored_proposal):
    from ontology.releases import draft_publish
    from review.loop.application import proposal_apply

    project, base = demo_release
    split = stored_proposal(project, base, "SPLIT", _split_ops(project))
    release = proposal_apply(proposal=split, actor=None)
    project.refresh_from_db()
    assert release.knowledge_revision == project.knowledge_revision  # the draft equals the release
    assert draft_publish(project=project, actor=None) == (release, False)


def test_the_shadow_replay_scores_is_the_release_approval_publishes(demo_release, stored_proposal):
    from review.loop.application import _reason, proposal_apply
    from review.loop.shadow import BaseRelease, shadow_build

    project, base = demo_release
    ops = _split_ops(project)
    split = stored_proposal(project, base, "SPLIT", ops)
    shadow = shadow_build(BaseRelease.load(base), ops, kind="SPLIT", reason=_reason(split))

    release = proposal_apply(proposal=split, actor=None)

    assert release.checksum == shadow.frozen.checksum
    assert release.content_digest == shadow.frozen.digest


def test_a_batch_applies_the_clean_proposals_and_leaves_the_conflicting_one_approved(
    demo_release, stored_proposal, make_user
):
    from ontology.services import node_update
    from review.changeset import EdgeSetWeight
    from review.loop.application import proposals_apply
    from review.loop.shadow import BaseRelease

    project, base = demo_release
    edge = next(e for e in BaseRelease.load(base).graph.edges if PARENT not in (e.source, e.target))
    reweight = stored_proposal(
        project,
        base,
        "EDGE",
        (EdgeSetWeight(edge.source, edge.target, edge.type, weight=0.31, previous=edge.weight),),
    )
    split = stored_proposal(project, base, "SPLIT", _split_ops(project))
    node_update(project=project, actor=make_user("expert"), node_id=PARENT, changes={"title": "Invoices!"})

    result = proposals_apply(project=project, proposal_ids=[reweight.pk, split.pk], actor=None, notes="night")

    assert result.applied == [reweight.pk] and list(result.blocked) == [split.pk] and result.failed == {}
    split.refresh_from_db()
    assert split.status == "AUTO_COMMITTED"
    released = BaseRelease.load(result.release)
    assert {e.key: e.weight for e in released.graph.edges}[edge.key] == pytest.approx(0.31)
    assert released.nodes[PARENT].title == "Download an invoice"
