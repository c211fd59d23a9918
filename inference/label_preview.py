"""What would route here: a label's prompts and its neighbours', each routed by the active release.

The *preview* of a label takes, from the draft taxonomy, the ``PREVIEW_OWN`` examples of the label
closest to another label's terms (its name when it has none; ``taxonomy.term_guard.examples_at_risk``)
and the ``PREVIEW_OTHERS`` examples of other labels closest to its terms
(``taxonomy.term_guard.nearest_other_examples``), and routes each through the whole pipeline of the
active release in dry run (``InferenceRequest.dry_run``; each request in a rolled-back transaction, so
nothing is written and no log row is left). A row *collides* when one of the label's own prompts lands
on another label, or another label's prompt lands on this label: the curator sees the overlap before
publishing. The requests run as one policy role: the curator's pick, by default the role whose policy
admits this label and the most labels in all (so that policy gating hides as few collisions as
possible). Routing is by the active release; the prompts are the draft's, so an example added since
the last publication already shows where the live release would send it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.db import transaction

from inference.contracts import RequestContext
from inference.pipeline import InferenceRequest, run_inference
from inference.runtime import ReleaseRuntime, runtime_for
from ontology import snapshot_registry
from projects.models import Project
from taxonomy.selectors import taxonomy_view
from taxonomy.term_guard import (
    CompetingLabel,
    competing_labels,
    examples_at_risk,
    nearest_other_examples,
)

PREVIEW_OWN = 6  # the label's own examples routed per preview
PREVIEW_OTHERS = 6  # other labels' nearest examples routed per preview
PREVIEW_COMPETING = 5  # competing labels listed


@dataclass(frozen=True)
class PreviewRow:
    """One prompt of the preview and where the active release sends it."""

    prompt: str
    source_label: str  # the label the prompt is an example of
    source_name: str
    similarity: float | None  # other labels' prompts: cosine with this label's closest term
    landed_label: str | None  # the best label of the validated set L_final (None: no label)
    landed_name: str
    confidence: float
    outcome: str  # outcome kind, or "ERROR"
    target: str  # the node the request reached (title), or the error message
    collides: bool


@dataclass(frozen=True)
class LabelPreview:
    label_id: str
    release_version: int | None  # None: no active release, nothing routed
    role: str | None
    roles: tuple[str, ...]
    competing: tuple[CompetingLabel, ...]
    rows: tuple[PreviewRow, ...]

    @property
    def collisions(self) -> int:
        return sum(1 for row in self.rows if row.collides)


def _default_role(runtime: ReleaseRuntime, label_id: str) -> str | None:
    """The role whose policy admits ``label_id`` and the most labels in all (ties: the first key);
    None when the release has no roles."""

    def reach(key: str) -> tuple[bool, int]:
        policy = runtime.policies.get(runtime.roles[key].policy)
        if policy is None:
            return (False, 0)
        admits = policy.constraints.admits_label
        return (admits(label_id), sum(1 for lid in runtime.labels if admits(lid)))

    keys = sorted(runtime.roles)
    return max(keys, key=lambda k: (*reach(k), -keys.index(k))) if keys else None


def label_preview(*, project: Project, label_id: str, role: str | None = None) -> LabelPreview:
    """Competing labels (draft) and the routed preview prompts (active release) of ``label_id``."""
    view = taxonomy_view(project=project)
    competing = tuple(competing_labels(view, label_id=label_id, limit=PREVIEW_COMPETING))
    snapshot = snapshot_registry.pin_snapshot(project.pk)
    if snapshot is None:
        return LabelPreview(label_id, None, None, (), competing, ())
    runtime = runtime_for(snapshot)
    roles = tuple(sorted(runtime.roles))
    if role not in runtime.roles:
        role = _default_role(runtime, label_id)
    prompts: list[tuple[str, str, str, float | None]] = [
        (term.text, label_id, term.label_name, None)
        for term, _ in examples_at_risk(view, label_id=label_id, limit=PREVIEW_OWN)
    ]
    prompts += [
        (term.text, term.label_id, term.label_name, sim)
        for term, sim in nearest_other_examples(view, label_id=label_id, limit=PREVIEW_OTHERS)
    ]
    names = {lid: rec.name for lid, rec in view.labels.items()}
    rows = []
    for text, source, source_name, sim in prompts:
        with transaction.atomic():  # a dry run writes nothing that outlives it
            result = run_inference(
                InferenceRequest(
                    request_id=f"preview-{uuid.uuid4().hex}",
                    project=project,
                    prompt=text,
                    context=RequestContext(role=role),
                    dry_run=True,
                    snapshot=snapshot,
                )
            )
            transaction.set_rollback(True)
        l_final = result.weaver.l_final if result.weaver is not None else {}
        landed = max(l_final, key=lambda k: (l_final[k], k)) if l_final else None
        if result.error is not None:
            kind, target = "ERROR", result.error.message
        else:
            kind = str(result.outcome.kind) if result.outcome is not None else ""
            node_id = (result.route.target if result.route else None) or (
                result.landing.node_start if result.landing else None
            )
            target = snapshot.node(node_id).title if node_id else ""
        own = source == label_id
        rows.append(
            PreviewRow(
                prompt=text,
                source_label=source,
                source_name=source_name,
                similarity=sim,
                landed_label=landed,
                landed_name=names.get(landed, "") if landed else "",
                confidence=float(result.weaver.confidence) if result.weaver is not None else 0.0,
                outcome=kind,
                target=target,
                collides=(landed is not None and landed != label_id) if own else (landed == label_id),
            )
        )
    return LabelPreview(label_id, snapshot.version, role, roles, competing, tuple(rows))
