"""Step E — lifecycle application of accepted proposals and publication (ARG §3.5).

What a reviewer approves is exactly what clients get. Applying accepted proposals publishes a release
built from **the active release + their changesets** — never from the draft, so an expert's
unpublished draft edit (a node title, an Action's handler) does not ride along with an approval. The
changesets are also written to the draft, so the expert's next draft publication keeps them. Both
applications go through the one changeset interpreter (``review.changeset_apply``):

1. on the draft: the interpreter's effects are written through the ontology and taxonomy services
   (validated and audited like an expert's edits; LabelIDs issued from the project's counter);
2. on the active release's state, with the LabelIDs the draft issued; the result is frozen by
   ``ontology.releases.release_freeze`` with the active release as parent (the function replay's
   shadow release is built by, so what replay scored is what is published) and stored with its lineage
   (``Release.parent``, ``source=CHANGESETS``, the proposals' ``applied_release``).

A changeset must land identically in both: when an object it changes differs between the draft and the
release after application — an unpublished draft edit on the same node, edge, alias or label — it is
refused (``review.draft_conflict``) naming those objects, and the proposal keeps its status: the admin
publishes (or reverts) the draft first. The integrity test and the validators run on both results.
Everything happens in **one unit of work** across the database and the graph store (``graph_atomic``).

Lifecycle rules are carried by the changesets the generators write (``review.changeset``):

* split N → {N1, N2}: children created first, edges redistributed or conditionally duplicated onto
  them, N moved to DEPRECATED (not removed: observation window), redirection N → (N1, N2);
* merge A + B → AB: AB created with the merged content, the union of the attachments and every
  precondition, the highest risk and A's and B's edges re-pointed to it; A and B moved to DEPRECATED,
  redirections A → (AB,) and B → (AB,); the integrity test must pass;
* obsolescence: N moved to DEPRECATED with its reason (and a redirection when a replacement exists);
* removal: a DEPRECATED node past its observation window with no alias traffic moved to REMOVED, its
  edges removed first and redirections that pointed to it re-pointed to where it redirects;
* taxonomy: a child label created CANDIDATE then SHADOW; a SHADOW label promoted to ACTIVE; a label
  re-attached under a better cluster (``label_move``: the subtree follows, LabelIDs unchanged).

Idempotent: applying an APPLIED proposal returns its release and writes nothing, and the interpreter
skips an operation whose change is already made, so a retried task applies once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from django.db import transaction

from arg_platform.audit import audit_record
from arg_platform.errors import DomainError, RuleViolation, Violation
from ontology.models import Release
from ontology.releases import draft_state, knowledge_digest, knowledge_validate, release_active, release_store
from ontology.services import (
    alias_add,
    edge_add,
    edge_remove,
    edge_update,
    node_create,
    node_set_status,
    node_update,
)
from ontology.store.port import GraphData
from ontology.store.unit_of_work import graph_atomic, graph_savepoint
from projects.models import Project
from review.changeset import Changeset, changeset_load
from review.changeset_apply import (
    AliasPut,
    Applied,
    ChangesetConflict,
    EdgeDeleted,
    EdgePut,
    Effect,
    KnowledgeState,
    LabelCreated,
    LabelMoved,
    LabelStatusChanged,
    NodeChanged,
    NodeCreated,
    NodeStatusChanged,
    changeset_apply,
)
from review.integrity import integrity_violations
from review.loop.shadow import BaseRelease, shadow_freeze
from review.models import Proposal, ProposalDecision, ProposalStatus
from taxonomy.models import Label
from taxonomy.services import label_create, label_move, label_set_status, next_label_id

APPLICABLE = frozenset({ProposalStatus.APPROVED, ProposalStatus.AUTO_COMMITTED})


class DraftConflict(RuleViolation):
    """A changeset touches objects with unpublished draft edits: applying it would have to guess."""


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


# --- writing the interpreter's effects to the draft ---------------------------------------------------


def _write_label_created(project: Project, actor: Any, effect: LabelCreated, reason: str) -> None:
    record = effect.record
    label = label_create(
        project=project,
        actor=actor,
        label_id=record["id"],
        name=record["name"],
        cluster_key=record["cluster"],
        parent_id=record["parent"],
        description=record["description"],
        synonyms=record["synonyms"],
        examples=record["examples"],
        status="CANDIDATE",
        reason=reason,
    )
    if record["status"] != "CANDIDATE":
        label_set_status(label=label, actor=actor, status=record["status"], reason=reason)


def _write_label_status(project: Project, actor: Any, effect: LabelStatusChanged, reason: str) -> None:
    label = Label.objects.get(project=project, label_id=effect.label_id)
    label_set_status(label=label, actor=actor, status=effect.status, reason=effect.reason)


def _write_label_moved(project: Project, actor: Any, effect: LabelMoved, reason: str) -> None:
    label = Label.objects.get(project=project, label_id=effect.label_id)
    label_move(
        label=label, actor=actor, parent_id=effect.parent, cluster_key=effect.cluster, reason=effect.reason
    )


def _write_node_created(project: Project, actor: Any, effect: NodeCreated, reason: str) -> None:
    node_create(project=project, actor=actor, node=effect.node)


def _write_node_changed(project: Project, actor: Any, effect: NodeChanged, reason: str) -> None:
    node_update(project=project, actor=actor, node_id=effect.node_id, changes=effect.changes)


def _write_node_status(project: Project, actor: Any, effect: NodeStatusChanged, reason: str) -> None:
    node_set_status(
        project=project, actor=actor, node_id=effect.node_id, status=effect.status, reason=effect.reason
    )


def _write_edge_put(project: Project, actor: Any, effect: EdgePut, reason: str) -> None:
    edge = effect.edge
    if not effect.existed:
        edge_add(project=project, actor=actor, edge=edge)
        return
    edge_update(
        project=project,
        actor=actor,
        source=edge.source,
        target=edge.target,
        type=edge.type,
        weight=edge.weight,
        semantics=edge.semantics,
    )


def _write_edge_deleted(project: Project, actor: Any, effect: EdgeDeleted, reason: str) -> None:
    source, target, type_ = effect.key
    edge_remove(project=project, actor=actor, source=source, target=target, type=type_, reason=effect.reason)


def _write_alias_put(project: Project, actor: Any, effect: AliasPut, reason: str) -> None:
    alias_add(project=project, actor=actor, alias=effect.alias)


WRITERS: dict[type, Callable[[Project, Any, Any, str], None]] = {
    LabelCreated: _write_label_created,
    LabelStatusChanged: _write_label_status,
    LabelMoved: _write_label_moved,
    NodeCreated: _write_node_created,
    NodeChanged: _write_node_changed,
    NodeStatusChanged: _write_node_status,
    EdgePut: _write_edge_put,
    EdgeDeleted: _write_edge_deleted,
    AliasPut: _write_alias_put,
}
"""One service call per effect type: the draft writer decides nothing the interpreter did not."""


def effects_write(*, project: Project, actor: Any, effects: Sequence[Effect], reason: str) -> None:
    """Write the interpreter's effects to the draft, in order (call inside ``graph_atomic``)."""
    for effect in effects:
        WRITERS[type(effect)](project, actor, effect, reason)


# --- one changeset on the release and on the draft ----------------------------------------------------


def _keyed(state: KnowledgeState) -> dict[tuple[str, Any], Any]:
    """Every object of a state by a readable key: nodes, edges, aliases and labels."""
    graph = state.graph
    out: dict[tuple[str, Any], Any] = {("node", n.node_id): replace(n, embedding=None) for n in graph.nodes}
    out.update({("edge", "|".join(e.key)): e for e in graph.edges})
    out.update({("alias", a.source): a for a in graph.aliases})
    out.update({("label", label["id"]): label for label in state.documents.get("labels", [])})
    return out


def diverging(
    release_before: KnowledgeState,
    release_after: KnowledgeState,
    draft_before: KnowledgeState,
    draft_after: KnowledgeState,
) -> list[str]:
    """Objects a changeset changed (in the release or the draft) that do not end up equal in both."""
    rb, ra, db, da = (_keyed(s) for s in (release_before, release_after, draft_before, draft_after))
    touched = {k for k in rb.keys() | ra.keys() if rb.get(k) != ra.get(k)}
    touched |= {k for k in db.keys() | da.keys() if db.get(k) != da.get(k)}
    return sorted(f"{kind} {key}" for kind, key in touched if ra.get((kind, key)) != da.get((kind, key)))


@dataclass
class BothApplied:
    """One changeset applied to the release's state and to the draft's."""

    on_release: Applied
    on_draft: Applied


def changeset_apply_both(
    *,
    release: KnowledgeState,
    draft: KnowledgeState,
    ops: Changeset,
    reason: str,
    issue_label_id: Callable[[], str] | None = None,
) -> BothApplied:
    """Apply ``ops`` to the draft, then to the release with the LabelIDs the draft issued.

    Raises ``RuleViolation``: ``review.apply_conflict`` when the changeset does not apply to one of them,
    ``review.draft_conflict`` (a ``DraftConflict``) when they disagree on an object it changed."""
    try:
        on_draft = changeset_apply(draft, ops, reason=reason, issue_label_id=issue_label_id)
        on_release = changeset_apply(release, ops, reason=reason, issued=on_draft.label_map)
    except ChangesetConflict as exc:
        raise _conflict(str(exc)) from exc
    different = diverging(release, on_release.state, draft, on_draft.state)
    if different:
        shown = ", ".join(different[:8]) + (f" and {len(different) - 8} more" if len(different) > 8 else "")
        raise DraftConflict(
            Violation(
                "review.draft_conflict",
                f"the draft has unpublished edits to what this changeset changes ({shown}): publish or "
                "revert the draft first, then apply",
                "changeset",
            )
        )
    return BothApplied(on_release=on_release, on_draft=on_draft)


def draft_conflicts(*, proposal: Proposal, draft: KnowledgeState | None = None) -> str:
    """Why applying ``proposal`` now would be refused because of the draft ('' when it would not be).

    ``draft`` is the draft's state when the caller has already read it (the proposal page's preview)."""
    active = release_active(project_id=proposal.project_id)
    if active is None:
        return ""
    if draft is None:
        draft = KnowledgeState(*draft_state(proposal.project))
    try:
        changeset_apply_both(
            release=BaseRelease.load(active).state,
            draft=draft,
            ops=changeset_load(proposal.changeset),
            reason="",
        )
    except DraftConflict as exc:
        return exc.message
    except DomainError:
        return ""  # not a draft conflict: the preview reports it
    return ""


def _check(before: GraphData, applied: Applied, ops: Sequence[Any]) -> None:
    violations = integrity_violations(before, applied.graph, ops, documents=applied.documents)
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


def _reason(proposal: Proposal) -> str:
    return f"offline proposal #{proposal.pk} ({proposal.kind}): {proposal.title}"[:500]


class _Publication:
    """Changesets applied one after another to the active release's state and to the draft."""

    def __init__(self, project: Project) -> None:
        active = release_active(project_id=project.pk)
        if active is None:
            raise RuleViolation(
                Violation(
                    "review.no_release",
                    "the project has no active release yet: publish the draft once before applying proposals",
                    "release",
                )
            )
        self.project = project
        self.parent = BaseRelease.load(active)
        self.release_state = self.parent.state
        graph, documents = draft_state(project)
        self.draft_state = KnowledgeState(graph, documents)
        self.issue_label_id = lambda: next_label_id(project=project)

    def apply(self, proposal: Proposal, actor: Any) -> Applied:
        """Apply one proposal's changeset to both states and write it to the draft."""
        if proposal.status not in APPLICABLE:
            raise RuleViolation(
                Violation(
                    "review.apply_status",
                    f"proposal #{proposal.pk} is {proposal.status}; only APPROVED or AUTO_COMMITTED "
                    "proposals apply",
                    "status",
                )
            )
        ops = changeset_load(proposal.changeset)
        reason = _reason(proposal)
        both = changeset_apply_both(
            release=self.release_state,
            draft=self.draft_state,
            ops=ops,
            reason=reason,
            issue_label_id=self.issue_label_id,
        )
        _check(self.release_state.graph, both.on_release, ops)
        _check(self.draft_state.graph, both.on_draft, ops)
        effects_write(project=self.project, actor=actor, effects=both.on_draft.effects, reason=reason)
        self.release_state = both.on_release.state
        self.draft_state = both.on_draft.state
        return both.on_draft

    def publish(self, actor: Any, notes: str, job_id: int | None = None) -> Release:
        """Freeze the release's state with the active release as parent and make it active."""
        state = self.release_state
        knowledge_validate(state.graph, state.documents)
        frozen = shadow_freeze(self.parent, Applied(state=state))
        self.project.refresh_from_db(fields=["knowledge_revision"])
        same_as_draft = knowledge_digest(self.draft_state.graph, self.draft_state.documents) == frozen.digest
        return release_store(
            project=self.project,
            actor=actor,
            frozen=frozen,
            source=Release.Source.CHANGESETS,
            parent=self.parent.release,
            notes=notes,
            knowledge_revision=self.project.knowledge_revision if same_as_draft else 0,
            job_id=job_id,
        )


def _finish(proposal: Proposal, actor: Any, release: Release, applied: Applied) -> None:
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
        label_map=applied.label_map,
        operations_applied=len(applied.effects),
        operations_skipped=applied.skipped,
    )
    audit_record(
        project=proposal.project,
        actor=actor,
        action="apply",
        object_type="proposal",
        object_key=str(proposal.pk),
        before={"status": before},
        after={"status": proposal.status, "release": release.version, "labels": applied.label_map},
        reason=proposal.title,
    )


def proposal_apply(*, proposal: Proposal, actor: Any) -> Release:
    """Apply an APPROVED or AUTO_COMMITTED proposal and publish active release + its changeset.

    * Applying an APPLIED proposal returns its ``applied_release`` and changes nothing (idempotent: a
      retried task or a double click applies once).
    * Any other status raises ``RuleViolation`` (rule ``review.apply_status``) and changes nothing.
    * A changeset that collides with unpublished draft edits raises ``DraftConflict``
      (``review.draft_conflict``): nothing changes and the proposal keeps its status.
    * A changeset that no longer applies (``review.apply_conflict``), a result the validators refuse, or
      a failed integrity test (``integrity.*``) rolls everything back, then marks the proposal FAILED
      (with a ProposalDecision saying why) and re-raises the ``RuleViolation``.

    ``actor`` is the approving user, or ``None`` / a name for the offline loop ("system").
    """
    try:
        with graph_atomic():
            locked = (
                Proposal.objects.select_for_update(of=("self",)).select_related("project").get(pk=proposal.pk)
            )
            if locked.status == ProposalStatus.APPLIED and locked.applied_release_id:
                return Release.objects.get(pk=locked.applied_release_id)
            publication = _Publication(locked.project)
            applied = publication.apply(locked, actor)
            release = publication.publish(actor, f"proposal #{locked.pk} {locked.kind}: {locked.title}")
            _finish(locked, actor, release, applied)
    except DraftConflict:
        raise
    except DomainError as exc:
        violations = exc.violations if isinstance(exc, RuleViolation) else []
        if not any(v.rule == "review.no_release" for v in violations):
            _mark_failed(proposal.pk, actor, exc)
        raise
    proposal.refresh_from_db()
    return release


@dataclass
class BatchResult:
    """What ``proposals_apply`` did: the release it published (None: nothing applied) and the outcomes.

    ``failed`` proposals were refused and are FAILED; ``blocked`` ones collide with unpublished draft
    edits and keep their status; ``already`` were APPLIED before."""

    release: Release | None
    applied: list[int] = field(default_factory=list)
    failed: dict[int, str] = field(default_factory=dict)
    blocked: dict[int, str] = field(default_factory=dict)
    already: list[int] = field(default_factory=list)


def proposals_apply(
    *, project: Project, proposal_ids: Sequence[int], actor: Any, notes: str, job_id: int | None = None
) -> BatchResult:
    """Apply several accepted proposals of one project under **one** publication (the nightly auto-commit).

    Each changeset runs in its own savepoint: a proposal that fails (conflict, validators, integrity) is
    rolled back alone and marked FAILED; one that collides with unpublished draft edits is rolled back
    and left as it is (``blocked``); the others are applied in order and published together as one
    release (active release + their changesets). Already APPLIED proposals are skipped, so a retried task
    publishes nothing twice. ``job_id`` is the job applying them (recorded on the release).
    """
    result = BatchResult(release=None)
    with graph_atomic():
        applied: dict[int, tuple[Proposal, Applied]] = {}
        publication: _Publication | None = None
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
            publication = publication or _Publication(project)
            states = (publication.release_state, publication.draft_state)
            try:
                with graph_savepoint(project.pk):
                    applied[proposal_id] = (locked, publication.apply(locked, actor))
            except DraftConflict as exc:
                publication.release_state, publication.draft_state = states
                result.blocked[proposal_id] = exc.message
            except DomainError as exc:
                publication.release_state, publication.draft_state = states
                before = locked.status
                locked.status = ProposalStatus.FAILED
                locked.decision_reason = exc.message[:1000]
                locked.save(update_fields=["status", "decision_reason", "updated_at"])
                _decide(locked, ProposalDecision.Action.APPLY, actor, before, exc.message)
                result.failed[proposal_id] = exc.message
        if applied and publication is not None:
            release = publication.publish(actor, notes, job_id)
            for proposal_id, (locked, on_draft) in applied.items():
                _finish(locked, actor, release, on_draft)
                result.applied.append(proposal_id)
            result.release = release
    return result
