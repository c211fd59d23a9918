"""What the proposal page shows, so that a reviewer can decide without opening another tool.

* **What changes** — before/after neighbourhood pictures of the nodes the change is about (laid out by
  the graph UI's own ``picture_layout``; new nodes and edges are marked on the *after* side, removed
  edges on the *before* side), and the node, edge, label-tree and alias diffs (``review.queue.preview``).
* **Why** — the generator's evidence, the replay measurements before vs after (confirmed / uncertain /
  low-confidence Info outcomes, Action outcomes, the silence penalty, Score(C)), the geDIG gauge, and
  logged requests of the change's zone (with where they landed and how they ended).
* **Risks** — the validators' and the integrity test's findings, the replay's violations, Action nodes
  on new paths, and the aliases and episodic memories pointing at the nodes the change touches.

An open proposal is compared with the current draft (what approval writes to); an applied one with
the release before the one it was published in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.urls import reverse

from inference.models import InferenceLog
from memory.models import EpisodicMemory
from ontology.graph_read import Neighbourhood
from ontology.models import Release
from ontology.views.picture import Picture, picture_layout, picture_select
from projects.access import Capability, ProjectAccess
from review.changeset_apply import KnowledgeState
from review.loop.application import APPLICABLE, draft_conflicts
from review.models import Proposal, ProposalStatus
from review.queue import forms
from review.queue.filtersets import DECIDABLE_STATUSES
from review.queue.preview import ChangesetPreview, changeset_preview, neighbourhood_of, release_state
from review.queue.selectors import proposal_decision_list, reviewer_list

PICTURE_CAP = 24  # nodes per picture, the centre included
ZONE_REQUESTS = 8  # logged requests of the zone listed
MEMORY_EXAMPLES = 5
CHANNELS = (
    ("confirmed", "Info confirmed", True),
    ("uncertain", "Info uncertain (silent)", None),
    ("low_confidence", "Info low confidence", False),
    ("action_success", "Action success", True),
    ("action_failure", "Action failure", False),
    ("margin", "Landing margin", True),
    ("ambiguity", "Ambiguity", False),
    ("path_length", "Path length", False),
)
GAINS = (
    ("penalty_silent", "Silence penalty κ·max(0, ΔUncertain − ΔConfirmed)"),
    ("gain_info", "Gain_info"),
    ("gain_action", "Gain_action"),
    ("gain_routing", "Gain_routing"),
    ("complexity", "Complexity (geDIG b)"),
    ("violations_taxonomy", "Violations taxonomy/ontology"),
    ("violations_security", "Violations security"),
)
GEDIG = (
    ("F", "F = ΔEPC_norm − λ(ΔH_norm + γ ΔSP_rel)"),
    ("delta_epc_norm", "ΔEPC_norm (edit path cost)"),
    ("delta_h_norm", "ΔH_norm (routing entropy)"),
    ("g0", "g0 (0-hop)"),
    ("gmin", "gmin (multi-hop)"),
    ("b", "b = min(g0, gmin)"),
    ("edit_cost", "edit cost"),
)


@dataclass(frozen=True)
class MarkedPicture:
    """A neighbourhood picture with the nodes and edges the change adds or removes marked."""

    picture: Picture
    nodes: list[tuple[Any, str]]  # (PictureNode, "added" | "deprecated" | "")
    edges: list[tuple[Any, str]]  # (PictureEdge, "added" | "removed" | "reweighted" | "")
    side: str  # before | after
    dom_id: str


def _picture(
    access: ProjectAccess, preview: ChangesetPreview, center: str, side: str, index: int
) -> MarkedPicture:
    graph = preview.before if side == "before" else preview.after
    nodes, edges = neighbourhood_of(graph, center, limit=200)
    hood, more = picture_select(
        Neighbourhood(center=center, source=side, nodes=nodes, edges=edges), cap=PICTURE_CAP
    )
    existing = {n.node_id for n in preview.before.nodes}

    def url(node_id: str) -> str:
        return (
            reverse("graph:node_detail", args=[access.project.slug, node_id]) if node_id in existing else ""
        )

    picture = picture_layout(hood, depth=1, node_url=url, more=more)
    reweighted = {(c.source, c.target, c.type) for c in preview.edge_changes if c.change == "reweighted"}
    deprecated = {
        c.node_id for c in preview.node_changes if c.change == "status" and c.after.get("status") != "ACTIVE"
    }
    marked_nodes = []
    for node in picture.nodes:
        mark = ""
        if side == "after" and node.node_id in preview.added_nodes:
            mark = "added"
        elif node.node_id in deprecated:
            mark = "deprecated"
        marked_nodes.append((node, mark))
    marked_edges = []
    for edge in picture.edges:
        key = (edge.source, edge.target, edge.type)
        mark = ""
        if side == "after" and key in preview.added_edges:
            mark = "added"
        elif side == "before" and key in preview.removed_edges:
            mark = "removed"
        elif key in reweighted:
            mark = "reweighted"
        marked_edges.append((edge, mark))
    return MarkedPicture(picture, marked_nodes, marked_edges, side, f"picture-{side}-{index}")


def _previous_release(release: Release) -> Release | None:
    return (
        Release.objects.filter(project_id=release.project_id, version__lt=release.version)
        .order_by("-version")
        .first()
    )


def proposal_preview(proposal: Proposal) -> tuple[ChangesetPreview, str]:
    """The preview of ``proposal`` and what it is compared with (a sentence for the page)."""
    applied = proposal.applied_release if proposal.status == ProposalStatus.APPLIED else None
    if applied is not None:
        previous = _previous_release(applied)
        if previous is not None:
            preview = changeset_preview(
                project=proposal.project, changeset=proposal.changeset, base=release_state(previous)
            )
            return (
                preview,
                f"release v{previous.version}, the release before v{applied.version}",
            )
    return changeset_preview(project=proposal.project, changeset=proposal.changeset), "the current draft"


def _metric_rows(replay: dict[str, Any]) -> list[dict[str, Any]]:
    before, after = replay.get("before") or {}, replay.get("after") or {}
    rows = []
    for key, label, higher_is_better in CHANNELS:
        if key not in before and key not in after:
            continue
        a, b = before.get(key), after.get(key)
        delta = (b - a) if isinstance(a, int | float) and isinstance(b, int | float) else None
        verdict = ""
        if delta is not None and abs(delta) > 1e-9 and higher_is_better is not None:
            verdict = "better" if (delta > 0) == higher_is_better else "worse"
        elif delta is not None and abs(delta) > 1e-9:
            verdict = "weak"
        rows.append({"key": key, "label": label, "before": a, "after": b, "delta": delta, "verdict": verdict})
    return rows


def _labelled(values: dict[str, Any], spec: tuple[tuple[str, str], ...]) -> list[tuple[str, str, Any]]:
    return [(key, label, values[key]) for key, label in spec if key in values]


def _zone_requests(proposal: Proposal, access: ProjectAccess) -> list[Any]:
    plan = (proposal.replay or {}).get("plan") or {}
    ids = [i for i in plan.get("zone_log_ids", []) if isinstance(i, int)][:ZONE_REQUESTS]
    if not ids:
        return []
    logs = {log.pk: log for log in InferenceLog.objects.filter(project=access.project, pk__in=ids)}
    return [logs[i] for i in ids if i in logs]


def _rerouted(proposal: Proposal) -> list[dict[str, Any]]:
    """Replayed requests that land elsewhere on the shadow release, when the replay recorded them."""
    rows = (proposal.replay or {}).get("rerouted") or []
    return [row for row in rows if isinstance(row, dict)][:ZONE_REQUESTS]


def _memories(access: ProjectAccess, node_ids: list[str]) -> dict[str, Any]:
    items = EpisodicMemory.objects.filter(project=access.project, node_id__in=node_ids).defer("embedding")
    return {"count": items.count(), "examples": list(items.order_by("-id")[:MEMORY_EXAMPLES])}


def _evidence(evidence: dict[str, Any]) -> dict[str, Any]:
    scalars = [(k, v) for k, v in evidence.items() if isinstance(v, str | int | float | bool) or v is None]
    groups = evidence.get("groups") if isinstance(evidence.get("groups"), list) else []
    lists = [
        (k, v)
        for k, v in evidence.items()
        if isinstance(v, list) and k != "groups" and all(isinstance(x, str | int | float) for x in v)
    ]
    other = [
        (k, v)
        for k, v in evidence.items()
        if k != "groups" and (isinstance(v, dict) or (isinstance(v, list) and (k, v) not in lists))
    ]
    return {"scalars": scalars, "groups": groups, "lists": lists, "other": other}


def proposal_context(access: ProjectAccess, proposal: Proposal, **bound: Any) -> dict[str, Any]:
    """Everything the proposal page shows; ``bound`` carries refused forms back with their errors."""
    preview, compared_with = proposal_preview(proposal)
    replay = proposal.replay or {}
    open_ = proposal.status in DECIDABLE_STATUSES
    can_review = access.can(Capability.REVIEW)
    can_edit = open_ and (can_review or access.can(Capability.CURATE))
    pictures = {
        "before": [_picture(access, preview, c, "before", i) for i, c in enumerate(preview.before_pivots)]
        if preview.applies
        else [],
        "after": [_picture(access, preview, c, "after", i) for i, c in enumerate(preview.after_pivots)]
        if preview.applies
        else [],
    }
    applied = proposal.applied_release
    previous = _previous_release(applied) if applied is not None else None
    touched = preview.touched_nodes
    pending = open_ or proposal.status in APPLICABLE
    return {
        "nav": "review",
        "proposal": proposal,
        "draft_conflict": draft_conflicts(
            proposal=proposal, draft=KnowledgeState(preview.before, preview.documents)
        )
        if pending and preview.applies
        else "",
        "preview": preview,
        "compared_with": compared_with,
        "pictures": pictures,
        "open": open_,
        "can_review": can_review,
        "can_edit": can_edit,
        "can_publish": access.can(Capability.PUBLISH),
        "replay": replay,
        "metric_rows": _metric_rows(replay),
        "gains": _labelled(replay.get("gains") or {}, GAINS),
        "gedig": _labelled(replay.get("gedig") or {}, GEDIG),
        "gedig_gate": replay.get("gedig_gate") or {},
        "replay_violations": replay.get("violations") or {},
        "plan": replay.get("plan") or {},
        "zone_requests": _zone_requests(proposal, access),
        "rerouted": _rerouted(proposal),
        "evidence": _evidence(proposal.evidence or {}),
        "memories": _memories(access, touched) if touched else {"count": 0, "examples": []},
        "decisions": list(proposal_decision_list(proposal=proposal)),
        "applied_release": applied,
        "previous_release": previous,
        "approve_form": bound.get("approve_form") or forms.ApproveForm(auto_id="approve-%s"),
        "reject_form": bound.get("reject_form") or forms.RejectForm(auto_id="reject-%s"),
        "changes_form": bound.get("changes_form") or forms.RequestChangesForm(auto_id="changes-%s"),
        "defer_form": bound.get("defer_form") or forms.DeferForm(auto_id="defer-%s"),
        "assign_form": bound.get("assign_form")
        or forms.AssignForm(
            reviewers=reviewer_list(project=access.project),
            initial={"assignee": proposal.assignee_id},
            auto_id="assign-%s",
        ),
        "open_panel": bound.get("open_panel", ""),
    }
