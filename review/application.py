"""Step E — lifecycle application of accepted proposals and publication (ARG §3.5).

``proposal_apply`` is the one entry point the review queue's *approve* action and the nightly
auto-commit use. It applies a proposal's changeset to the project's **draft** through the ontology and
taxonomy services (so every write is validated and audited like an expert's), runs the integrity test,
then publishes a new release (refreshed lexical / node-vector / label indexes, the alias table and the
structural signals all come with publication) — in **one unit of work** across the database and the graph
store (``graph_atomic``): either the proposal is APPLIED with its release, or nothing changed.

Lifecycle rules are carried by the changesets the generators write (``review.changeset``):

* split N → {N1, N2}: children created first, edges redistributed or conditionally duplicated onto
  them, N moved to DEPRECATED (not removed: observation window), redirection N → (N1, N2);
* merge B into A: A takes the union of the attachments, the highest risk and every precondition, B's
  edges are re-pointed to A, B moved to DEPRECATED, redirection B → (A,); the integrity test must pass;
* obsolescence: N moved to DEPRECATED with its reason (and a redirection when a replacement exists);
* taxonomy: a child label created CANDIDATE then SHADOW; a SHADOW label promoted to ACTIVE.

Idempotent: applying an APPLIED proposal returns its release and writes nothing; each operation is also
idempotent against the draft (an edge that exists is updated, a status already reached is kept, a child
label with the same name under the same parent is reused), so a retried task applies once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from django.db import transaction

from arg_platform.audit import audit_record
from arg_platform.errors import DomainError, RuleViolation, Violation
from ontology.models import Release
from ontology.store import get_graph_store
from ontology.store.port import AliasData, EdgeData, GraphData, NodeData
from ontology.store.unit_of_work import graph_atomic, graph_savepoint
from projects.models import Project

from .changeset import (
    NEW_LABEL_PREFIX,
    AliasSet,
    EdgeAdd,
    EdgeRemove,
    EdgeSetWeight,
    LabelAdd,
    LabelStatusSet,
    NodeAdd,
    NodeAttach,
    NodeContentSet,
    NodeDetach,
    NodeStatusSet,
    Op,
    changeset_load,
)
from .integrity import integrity_violations
from .models import Proposal, ProposalDecision, ProposalStatus

APPLICABLE = frozenset({ProposalStatus.APPROVED, ProposalStatus.AUTO_COMMITTED})


@dataclass
class ApplyReport:
    """What applying one changeset to the draft did."""

    label_map: dict[str, str] = field(default_factory=dict)  # new:<ref> → issued LabelID
    applied: int = 0
    skipped: int = 0


def _conflict(message: str) -> RuleViolation:
    return RuleViolation(Violation("review.apply_conflict", message, "changeset"))


def _actor_label(actor: Any) -> str:
    return getattr(actor, "username", "") or (str(actor) if actor is not None else "system")


def _user(actor: Any) -> Any:
    return (
        actor
        if getattr(actor, "pk", None) is not None and getattr(actor, "is_authenticated", False)
        else None
    )


def changeset_apply_to_draft(*, project: Project, actor: Any, ops: Sequence[Op], reason: str) -> ApplyReport:
    """Apply ``ops`` in order to the draft through the services (call inside a transaction)."""
    from ontology.services import (
        alias_add,
        edge_add,
        edge_remove,
        edge_update,
        node_create,
        node_set_status,
        node_update,
    )
    from taxonomy.models import Label
    from taxonomy.services import label_create, label_set_status

    store = get_graph_store()
    report = ApplyReport()

    def resolve(label: str) -> str:
        if label.startswith(NEW_LABEL_PREFIX):
            if label not in report.label_map:
                raise _conflict(f"{label} is used before its label_add")
            return report.label_map[label]
        return label

    def node(node_id: str) -> NodeData:
        current = store.get_node(project.pk, node_id)
        if current is None:
            raise _conflict(f"node {node_id} does not exist in the draft")
        return current

    def edge(source: str, target: str, type: str) -> EdgeData | None:
        return next(
            (e for e in store.neighbours(project.pk, source, "out", (type,)) if e.target == target), None
        )

    for op in ops:
        did = True
        if isinstance(op, LabelAdd):
            twin = (
                Label.objects.filter(
                    project=project,
                    cluster__key=op.cluster,
                    name__iexact=op.name.strip(),
                    parent__label_id=op.parent,
                )
                .exclude(status="DEPRECATED")
                .first()
                if op.parent
                else None
            )
            if twin is not None:
                report.label_map[NEW_LABEL_PREFIX + op.ref] = twin.label_id
                did = False
            else:
                label = label_create(
                    project=project,
                    actor=actor,
                    name=op.name,
                    cluster_key=op.cluster,
                    parent_id=op.parent,
                    description=op.description,
                    synonyms=op.synonyms,
                    examples=op.examples,
                    status="CANDIDATE",
                    reason=reason,
                )
                if op.status != "CANDIDATE":
                    label = label_set_status(label=label, actor=actor, status=op.status, reason=reason)
                report.label_map[NEW_LABEL_PREFIX + op.ref] = label.label_id
        elif isinstance(op, LabelStatusSet):
            label = Label.objects.filter(project=project, label_id=op.label_id).first()
            if label is None:
                raise _conflict(f"label {op.label_id} does not exist")
            did = label.status != op.status
            if did:
                label_set_status(label=label, actor=actor, status=op.status, reason=op.reason or reason)
        elif isinstance(op, NodeAdd):
            new = NodeData(
                node_id=op.node_id,
                type=op.type,
                title=op.title,
                chunk=op.chunk,
                risk=op.risk,
                labels=tuple(dict.fromkeys(resolve(x) for x in op.labels)),
                clusters=tuple(dict.fromkeys(op.clusters)),
                preconditions=op.preconditions,
                parameters=op.parameters,
                handler=op.handler,
            )
            current = store.get_node(project.pk, op.node_id)
            if current is not None:
                if replace(current, embedding=None, status_reason="") != new:
                    raise _conflict(f"node {op.node_id} already exists with other content")
                did = False
            else:
                node_create(project=project, actor=actor, node=new)
        elif isinstance(op, NodeContentSet):
            current = node(op.node_id)
            changes = {
                k: v
                for k, v in (
                    ("title", op.title),
                    ("chunk", op.chunk),
                    ("risk", op.risk),
                    ("preconditions", op.preconditions),
                )
                if v is not None and getattr(current, k) != v
            }
            did = bool(changes)
            if did:
                node_update(project=project, actor=actor, node_id=op.node_id, changes=changes)
        elif isinstance(op, NodeAttach | NodeDetach):
            current = node(op.node_id)
            if isinstance(op, NodeAttach):
                labels = tuple(dict.fromkeys([*current.labels, *(resolve(x) for x in op.labels)]))
                clusters = tuple(dict.fromkeys([*current.clusters, *op.clusters]))
            else:
                dropped = {resolve(x) for x in op.labels}
                labels = tuple(x for x in current.labels if x not in dropped)
                clusters = tuple(x for x in current.clusters if x not in set(op.clusters))
            did = (labels, clusters) != (current.labels, current.clusters)
            if did:
                node_update(
                    project=project,
                    actor=actor,
                    node_id=op.node_id,
                    changes={"labels": labels, "clusters": clusters},
                )
        elif isinstance(op, NodeStatusSet):
            did = node(op.node_id).status != op.status
            if did:
                node_set_status(
                    project=project, actor=actor, node_id=op.node_id, status=op.status, reason=op.reason
                )
        elif isinstance(op, EdgeAdd):
            existing = edge(op.source, op.target, op.type)
            if existing is None:
                edge_add(
                    project=project,
                    actor=actor,
                    edge=EdgeData(op.source, op.target, op.type, op.weight, op.semantics),
                )
            elif (existing.weight, existing.semantics) != (op.weight, op.semantics):
                edge_update(
                    project=project,
                    actor=actor,
                    source=op.source,
                    target=op.target,
                    type=op.type,
                    weight=op.weight,
                    semantics=op.semantics,
                )
            else:
                did = False
        elif isinstance(op, EdgeSetWeight):
            existing = edge(op.source, op.target, op.type)
            if existing is None:
                raise _conflict(f"edge {op.source} -[{op.type}]-> {op.target} does not exist")
            did = abs(existing.weight - op.weight) > 1e-9
            if did:
                edge_update(
                    project=project,
                    actor=actor,
                    source=op.source,
                    target=op.target,
                    type=op.type,
                    weight=op.weight,
                    semantics=existing.semantics,
                )
        elif isinstance(op, EdgeRemove):
            did = edge(op.source, op.target, op.type) is not None
            if did:
                edge_remove(
                    project=project,
                    actor=actor,
                    source=op.source,
                    target=op.target,
                    type=op.type,
                    reason=op.reason or reason,
                )
        elif isinstance(op, AliasSet):
            current_targets = store.resolve_alias(project.pk, op.source)
            did = tuple(current_targets) != tuple(op.targets)
            if did:
                alias_add(
                    project=project, actor=actor, alias=AliasData(op.source, tuple(op.targets), op.reason)
                )
        if did:
            report.applied += 1
        else:
            report.skipped += 1
    return report


def _draft_documents(project: Project) -> dict[str, Any]:
    from taxonomy.packs import pack_export

    pack = pack_export(project=project)
    return {k: pack[k] for k in ("labels", "clusters", "policies", "incompatibilities") if k in pack}


def _check_integrity(project: Project, before: GraphData, ops: Sequence[Op]) -> None:
    after = get_graph_store().export_graph(project.pk)
    violations = integrity_violations(before, after, ops, documents=_draft_documents(project))
    if violations:
        raise RuleViolation(violations)


def _decide(
    proposal: Proposal, action: str, actor: Any, before: str, reason: str = "", **changes: Any
) -> None:
    ProposalDecision.objects.create(
        proposal=proposal,
        action=action,
        actor=_user(actor),
        actor_name=_actor_label(actor)[:150],
        reason=reason[:1000],
        status_before=before,
        status_after=proposal.status,
        changes=changes,
    )


def _mark_failed(proposal_id: int, actor: Any, error: DomainError) -> None:
    with transaction.atomic():
        proposal = Proposal.objects.select_for_update().get(pk=proposal_id)
        if proposal.status == ProposalStatus.APPLIED:
            return
        before = proposal.status
        proposal.status = ProposalStatus.FAILED
        proposal.decision_reason = error.message[:1000]
        proposal.save(update_fields=["status", "decision_reason", "updated_at"])
        _decide(proposal, ProposalDecision.Action.APPLY, actor, before, error.message)


def _apply_locked(proposal: Proposal, actor: Any) -> ApplyReport:
    if proposal.status not in APPLICABLE:
        raise RuleViolation(
            Violation(
                "review.apply_status",
                f"proposal #{proposal.pk} is {proposal.status}; only APPROVED or AUTO_COMMITTED proposals apply",
                "status",
            )
        )
    ops = changeset_load(proposal.changeset)
    before = get_graph_store().export_graph(proposal.project_id)
    report = changeset_apply_to_draft(
        project=proposal.project,
        actor=actor,
        ops=ops,
        reason=f"offline proposal #{proposal.pk} ({proposal.kind}): {proposal.title}"[:500],
    )
    _check_integrity(proposal.project, before, ops)
    return report


def _finish(proposal: Proposal, actor: Any, release: Release, report: ApplyReport) -> None:
    before = proposal.status
    proposal.status = ProposalStatus.APPLIED
    proposal.applied_release = release
    proposal.save(update_fields=["status", "applied_release", "updated_at"])
    _decide(
        proposal,
        ProposalDecision.Action.APPLY,
        actor,
        before,
        f"published v{release.version}",
        release=release.version,
        label_map=report.label_map,
        operations_applied=report.applied,
        operations_skipped=report.skipped,
    )
    audit_record(
        project=proposal.project,
        actor=actor,
        action="apply",
        object_type="proposal",
        object_key=str(proposal.pk),
        before={"status": before},
        after={"status": proposal.status, "release": release.version, "labels": report.label_map},
        reason=proposal.title,
    )


def proposal_apply(*, proposal: Proposal, actor: Any) -> Release:
    """Apply an APPROVED or AUTO_COMMITTED proposal and publish the new release; returns that release.

    * Applying an APPLIED proposal returns its ``applied_release`` and changes nothing (idempotent: a
      retried task or a double click applies once).
    * Any other status raises ``RuleViolation`` (rule ``review.apply_status``) and changes nothing.
    * A changeset that no longer applies to the draft (``review.apply_conflict``), a draft the validators
      refuse, or a failed integrity test (``integrity.*``) rolls everything back, then marks the
      proposal FAILED (with a ProposalDecision saying why) and re-raises the ``RuleViolation``.

    ``actor`` is the approving user, or ``None`` / a name for the offline loop ("system").
    """
    from ontology.releases import PublishOptions, release_publish

    try:
        with graph_atomic():
            locked = (
                Proposal.objects.select_for_update(of=("self",)).select_related("project").get(pk=proposal.pk)
            )
            if locked.status == ProposalStatus.APPLIED and locked.applied_release_id:
                return Release.objects.get(pk=locked.applied_release_id)
            report = _apply_locked(locked, actor)
            release = release_publish(
                project=locked.project,
                actor=actor,
                options=PublishOptions(notes=f"proposal #{locked.pk} {locked.kind}: {locked.title}"[:500]),
            )
            _finish(locked, actor, release, report)
    except DomainError as exc:
        _mark_failed(proposal.pk, actor, exc)
        raise
    proposal.refresh_from_db()
    return release


@dataclass
class BatchResult:
    """What ``proposals_apply`` did: the release it published (None: nothing applied) and the outcomes."""

    release: Release | None
    applied: list[int] = field(default_factory=list)
    failed: dict[int, str] = field(default_factory=dict)
    already: list[int] = field(default_factory=list)


def proposals_apply(*, project: Project, proposal_ids: Sequence[int], actor: Any, notes: str) -> BatchResult:
    """Apply several accepted proposals of one project under **one** publication (the nightly auto-commit).

    Each changeset runs in its own savepoint: a proposal that fails (conflict, validators, integrity) is
    rolled back alone and marked FAILED; the others are applied in order and published together. Already
    APPLIED proposals are skipped, so a retried task publishes nothing twice.
    """
    from ontology.releases import PublishOptions, release_publish

    result = BatchResult(release=None)
    with graph_atomic():
        reports: dict[int, tuple[Proposal, ApplyReport]] = {}
        for proposal_id in proposal_ids:
            locked = (
                Proposal.objects.select_for_update(of=("self",)).select_related("project").get(pk=proposal_id)
            )
            if locked.project_id != project.pk:
                raise RuleViolation(
                    Violation("review.apply_project", "proposal of another project", "proposal")
                )
            if locked.status == ProposalStatus.APPLIED:
                result.already.append(proposal_id)
                continue
            try:
                with graph_savepoint(project.pk):
                    reports[proposal_id] = (locked, _apply_locked(locked, actor))
            except DomainError as exc:
                before = locked.status
                locked.status = ProposalStatus.FAILED
                locked.decision_reason = exc.message[:1000]
                locked.save(update_fields=["status", "decision_reason", "updated_at"])
                _decide(locked, ProposalDecision.Action.APPLY, actor, before, exc.message)
                result.failed[proposal_id] = exc.message
        if reports:
            release = release_publish(project=project, actor=actor, options=PublishOptions(notes=notes[:500]))
            for proposal_id, (locked, report) in reports.items():
                _finish(locked, actor, release, report)
                result.applied.append(proposal_id)
            result.release = release
    return result
