"""Step E: lifecycle application of proposals to the demo pack's draft, then publication."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from arg_platform.errors import RuleViolation

PARENT = "N-billing-invoice-download"
SURVIVOR, DUPLICATE = "N-deploy-tls-info", "N-deploy-tls-faq"


def _split_ops(project: Any) -> tuple[Any, ...]:
    from ontology.store import get_graph_store
    from review.loop.generators.split import split_changeset

    store = get_graph_store()
    parent = store.get_node(project.pk, PARENT)
    children = [
        replace(
            parent,
            node_id=f"{PARENT}.s1",
            title="Download one invoice PDF",
            chunk="Each invoice has a PDF link.",
        ),
        replace(
            parent,
            node_id=f"{PARENT}.s2",
            title="Export invoices in bulk",
            chunk="Export gives a ZIP of PDFs.",
        ),
    ]
    out_edges = store.neighbours(project.pk, PARENT, "out")
    users = {out_edges[0].key: {1}} if out_edges else {}
    return split_changeset(
        parent,
        children,
        in_edges=store.neighbours(project.pk, PARENT, "in"),
        out_edges=out_edges,
        edge_users=users,
        reason="two intents",
    )


def _merge_ops(project: Any) -> tuple[Any, ...]:
    from ontology.store import get_graph_store
    from review.loop.generators.merge import merge_changeset

    graph = get_graph_store().export_graph(project.pk)
    return merge_changeset(graph, SURVIVOR, DUPLICATE, reason="duplicate TLS content")


@pytest.mark.django_db
def test_split_publishes_children_first_with_aliases_and_matches_its_shadow(demo_release, stored_proposal):
    from arg_platform.models import AuditEvent
    from ontology.models import Release
    from ontology.releases import release_snapshot
    from ontology.store import get_graph_store
    from review.loop.application import proposal_apply
    from review.loop.shadow import BaseRelease, shadow_build
    from review.models import ProposalDecision, ProposalStatus

    project, base = demo_release
    ops = _split_ops(project)
    shadow = shadow_build(BaseRelease.load(base), ops, kind="SPLIT")
    split = stored_proposal(project, base, "SPLIT", ops)

    release = proposal_apply(proposal=split, actor=None)

    assert release.version == base.version + 1 and release.is_active
    published = release_snapshot(release=release)
    assert published.node(PARENT).status == "DEPRECATED"
    assert published.node(f"{PARENT}.s1").status == published.node(f"{PARENT}.s2").status == "ACTIVE"
    assert published.resolve_alias(PARENT) == (f"{PARENT}.s1", f"{PARENT}.s2")
    store = get_graph_store()
    parent_sources = {e.source for e in store.neighbours(project.pk, PARENT, "in")}
    for child in (f"{PARENT}.s1", f"{PARENT}.s2"):  # every in-edge of the parent also reaches each child
        assert {e.source for e in store.neighbours(project.pk, child, "in")} == parent_sources
    split.refresh_from_db()
    assert (split.status, split.applied_release_id) == (ProposalStatus.APPLIED, release.pk)
    # the shadow replay ran on is the release the application published
    assert shadow.violations == ()
    assert shadow.snapshot.release_id is None
    assert shadow.snapshot.node_ids == published.node_ids
    assert shadow.snapshot.node_labels == published.node_labels
    assert list(shadow.snapshot.status) == list(published.status)
    assert dict(shadow.snapshot.aliases) == dict(published.aliases)
    assert shadow.snapshot.edge_count == published.edge_count

    counts = (Release.objects.count(), AuditEvent.objects.count())
    again = proposal_apply(proposal=split, actor=None)  # a retried task or a double click

    assert again.pk == release.pk
    assert (Release.objects.count(), AuditEvent.objects.count()) == counts
    assert list(split.decisions.values_list("action", "status_after")) == [
        (ProposalDecision.Action.APPLY, ProposalStatus.APPLIED)
    ]


@pytest.mark.django_db
def test_merge_creates_the_merged_node_retires_both_and_publishes(demo_release, stored_proposal):
    from ontology.releases import release_snapshot
    from ontology.store import get_graph_store
    from review.loop.application import proposal_apply

    project, base = demo_release
    store = get_graph_store()
    merged = f"{SURVIVOR}.m1"
    sources = {e.source for n in (SURVIVOR, DUPLICATE) for e in store.neighbours(project.pk, n, "in")}
    labels = {label for n in (SURVIVOR, DUPLICATE) for label in store.get_node(project.pk, n).labels}
    merge = stored_proposal(project, base, "MERGE", _merge_ops(project), status="APPROVED")

    release = proposal_apply(proposal=merge, actor=None)

    snapshot = release_snapshot(release=release)
    assert snapshot.node(SURVIVOR).status == snapshot.node(DUPLICATE).status == "DEPRECATED"
    assert snapshot.node(merged).status == "ACTIVE"
    assert snapshot.resolve_alias(SURVIVOR) == snapshot.resolve_alias(DUPLICATE) == (merged,)
    assert set(store.get_node(project.pk, merged).labels) == labels
    assert {e.source for e in store.neighbours(project.pk, merged, "in")} == sources - {SURVIVOR, DUPLICATE}
    merge.refresh_from_db()
    assert merge.status == "APPLIED" and merge.applied_release_id == release.pk


@pytest.mark.django_db
def test_a_proposal_still_in_review_is_not_applied(small_release, stored_proposal):
    from ontology.models import Release
    from review.changeset import EdgeSetWeight
    from review.loop.application import proposal_apply

    project, base = small_release
    op = EdgeSetWeight("N-invoice-download", "N-resend-invoice", "LEADS_TO", 0.9, previous=0.7)
    pending = stored_proposal(project, base, "EDGE_WEIGHT", [op], status="PENDING_REVIEW")
    releases = Release.objects.count()

    with pytest.raises(RuleViolation) as refused:
        proposal_apply(proposal=pending, actor=None)

    assert refused.value.violations[0].rule == "review.apply_status"
    pending.refresh_from_db()
    assert pending.status == "FAILED"
    assert Release.objects.count() == releases


@pytest.mark.django_db
def test_a_merge_that_fuses_an_action_into_an_info_node_is_refused_and_rolled_back(
    small_release, stored_proposal
):
    from ontology.models import NodeAlias, OntologyEdge, Release
    from ontology.store import get_graph_store
    from review.loop.application import proposal_apply
    from review.loop.generators.merge import merge_changeset

    project, base = small_release
    graph = get_graph_store().export_graph(project.pk)
    # every landing on the Info node would execute the action, skipping its precondition check
    ops = merge_changeset(graph, "N-invoice-download", "N-resend-invoice", reason="unsafe")
    proposal = stored_proposal(project, base, "MERGE", ops)
    before = (OntologyEdge.objects.count(), NodeAlias.objects.count(), Release.objects.count())

    with pytest.raises(RuleViolation) as refused:
        proposal_apply(proposal=proposal, actor=None)

    assert "integrity.type_family" in {v.rule for v in refused.value.violations}
    proposal.refresh_from_db()
    assert proposal.status == "FAILED"
    assert (OntologyEdge.objects.count(), NodeAlias.objects.count(), Release.objects.count()) == before
    assert get_graph_store().get_node(project.pk, "N-resend-invoice").status == "ACTIVE"


@pytest.mark.django_db
def test_the_nightly_apply_publishes_proposals_reviewers_approved_in_batch_mode(
    small_release, stored_proposal
):
    from ontology.models import Release
    from review.changeset import EdgeSetWeight
    from review.loop.run import offline_run_open, step_apply

    project, base = small_release
    op = EdgeSetWeight("N-invoice-download", "N-resend-invoice", "LEADS_TO", 0.9, previous=0.7)
    batched = stored_proposal(project, base, "EDGE_WEIGHT", [op], status="APPROVED")
    run = offline_run_open(project=project, idempotency_key="batch-test")

    result = step_apply(run)

    batched.refresh_from_db()
    release = Release.objects.get(project=project, is_active=True)
    assert result["applied"] == [batched.pk] and result["release"] == release.version
    assert batched.status == "APPLIED" and batched.applied_release_id == release.pk
    assert release.version == base.version + 1
