"""Taxonomy evolution candidates, child-label first (ARG §3.2.4, §3.2.4.1).

**LABEL_ADD.** Triggers: interactions flagged NEW_INTENT_CANDIDATE, UNKNOWN_LABEL_CANDIDATE or (repeated)
VECTOR_AMBIGUITY, interactions the weaver could place only at a *parent* label (the most specific label
of ``L_final`` has live children: no child fits — the granularity gap child-label-first is for), and
episodic writes flagged MISSING_LABEL_CANDIDATE. Their prompts are grouped by embedding, one entry per
distinct text (leader clustering at cosine ``cluster_cosine``, densest first); a group with at least
``min_support`` members from ``min_sources`` distinct sources, worded in at least ``min_wordings``
different ways (one phrase repeated by many users is one request, not an intent the taxonomy lacks),
becomes a *child label* proposal:

* **parent** — the deepest common ancestor of the labels that recur (≥ half the group) in the group's
  weaver top-3; it must be ACTIVE; the child lives in the parent's cluster (always under an existing
  parent, within an existing cluster);
* **name, synonyms, description, examples** — up to ``max_examples`` prompts closest to the group
  centroid; the name is the words of the closest one that at least half the group uses, in its order
  (``request_phrase``: "Export invoice bulk accounting"), or, with fewer than two such words, the
  group's distinctive words (absent from the parent's own text), which are also its synonyms and
  description. Logged prompts arrive
  with their PII replaced by the Memory Guard's placeholders: a placeholder counts as no word, and a
  prompt that held PII supports a group but is never copied into its examples;
* **automatic checks** — uniqueness vs siblings (name; cosine of the new label's index text, and of the
  group centroid, to every sibling's label vector < ``sibling_cosine``; cosine of the group centroid to
  every sibling's validated-examples centroid < ``sibling_cosine``), parent/child coherence, cluster↔label
  compatibility and no new incompatibility (the deterministic taxonomy validator on the taxonomy with
  the new label), policy non-contradiction (the child inherits its parent's restrictions through the
  policies' subtree expansion; a parent that a policy both allows and forbids is refused);
* **examples the curation guard accepts** — a prompt identical or very close (``taxonomy.term_guard``:
  cosine ≥ ``TERM_SIMILARITY_THRESHOLD``) to a term of another routing label is left out of the examples
  (the next closest prompt takes its place): it is that label's wording, the guard would refuse the
  label at approval, and as evidence of a new intent it is ambiguous (``distinct_examples``);
* **attachment** — the ACTIVE node of the parent's cluster whose content is closest to the group
  (cosine ≥ ``attach_cosine``) is attached to the new label, which is created CANDIDATE → SHADOW:
  evaluated on live traffic, not routed.

**LABEL_ADD for unreached content.** An ACTIVE informational node that no label carries and no edge
leads to can never be reached: the weaver lands only on nodes of the labels it chooses, traversal only
follows edges. Its content is an answer the taxonomy has no door to — typically a page written before
anyone asked, or whose label was retired. The requests it answers are those of the window (a sample of
``max_prompts``) whose prompt is closer to its content (cosine ≥ ``attach_cosine``) than to the content
of every node the graph can reach, whatever served them. When they pass the support, source and wording
gates above, the node gets a label: named after the node's title (its distinctive words when a sibling
already has that name), under the deepest common ancestor of their recurring weaver labels when one
lives in the node's cluster (otherwise at the top of the node's cluster), with the prompts closest to
the node's content as examples (never one that held PII) — the content is what the label will route
to, while the requests' own centroid leans towards the neighbours some of them come from — those no
answer served first (unrouted, or reported unhelpful or failed): a sibling intent's request that sits
near this content was served by its own label, a request of the missing intent was not — the same
uniqueness, taxonomy and policy checks, created SHADOW and attached to the node.

**LABEL_PROMOTE.** A SHADOW label that the weaver would have chosen (its label-index cosine beat every
ACTIVE label) for at least ``min_shadow_support`` interactions from ``min_sources`` sources is proposed
SHADOW → ACTIVE; replay then measures what routing it changes.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from arg_platform.embedder import get_embedder
from inference.runtime import taxonomy_view_from_documents
from memory.pii import PLACEHOLDER_RE
from review.changeset import LabelAdd, LabelStatusSet, NodeAttach, Op
from review.loop.collection import TAXONOMY_TRIGGER_FLAGS, UnifiedOutcome
from review.loop.generators.base import (
    Candidate,
    GeneratorContext,
    distinctive_words,
    request_phrase,
    unit,
    words,
)
from taxonomy.term_guard import term_conflicts
from taxonomy.validator import LabelRecord, validate_taxonomy

NAME_ADD = "taxonomy.child_label"
NAME_UNREACHED = "taxonomy.unreached_label"
NAME_PROMOTE = "taxonomy.promote"
VERSION = "1"
INFORMATIONAL_TYPES = frozenset({"Info", "InfoStable", "FAQ"})
REACHABLE_BLOCK = 4096  # nodes compared with the night's prompts at a time
LABEL_ADD_CHECKS = ("sibling_unique", "parent_child", "cluster_compat", "no_new_incompatibility", "policy")


def _groups(x: np.ndarray, threshold: float, min_size: int) -> list[np.ndarray]:
    """Leader clustering: densest point first takes its unassigned neighbours (cosine ≥ threshold)."""
    if x.shape[0] == 0:
        return []
    sims = x @ x.T
    density = (sims >= threshold).sum(axis=1)
    free = np.ones(x.shape[0], dtype=bool)
    out: list[np.ndarray] = []
    for i in np.lexsort((np.arange(x.shape[0]), -density)):
        if not free[i]:
            continue
        members = np.flatnonzero(free & (sims[i] >= threshold))
        if members.shape[0] >= min_size:
            out.append(members)
            free[members] = False
    return out


def _ancestors(labels: dict, label_id: str) -> list[str]:
    """``label_id`` and its ancestors, nearest first."""
    chain, current, seen = [], labels.get(label_id), set()
    while current is not None and current["id"] not in seen:
        chain.append(current["id"])
        seen.add(current["id"])
        current = labels.get(current.get("parent") or "")
    return chain


def _common_parent(labels: dict, recurring: list[str]) -> str | None:
    chains = [_ancestors(labels, lid) for lid in recurring if lid in labels]
    if not chains:
        return None
    common = set(chains[0]).intersection(*map(set, chains[1:]))
    for lid in chains[0]:  # nearest first: the deepest common ancestor
        if lid in common:
            return lid
    return None


def _policy_contradiction(documents: dict, parent: str) -> bool:
    for policy in documents.get("policies", []):
        if parent in (policy.get("allowed_labels") or []) and parent in (
            policy.get("forbidden_labels") or []
        ):
            return True
    return False


def generate_child_labels(context: GeneratorContext) -> list[Candidate]:
    params = context.params.labels
    base, collection = context.base, context.collection
    labels = {label["id"]: label for label in base.documents.get("labels", [])}
    parents = {label.get("parent") for label in labels.values() if label["status"] in ("ACTIVE", "SHADOW")}
    triggered = np.array(
        [
            i
            for i, flags in enumerate(collection.flags)
            if flags & TAXONOMY_TRIGGER_FLAGS or _parent_only(collection.labels[i], parents, labels)
        ],
        dtype=np.int64,
    )
    rows = context.sample(triggered, params.max_prompts, "labels")
    out: list[Candidate] = []
    # one entry per distinct text (a phrase repeated by many users is one wording with more support)
    by_text: dict[str, list[int | None]] = {}
    original: dict[str, str] = {}
    with_pii: set[str] = set()  # texts whose PII the Memory Guard replaced: support, never an example
    for text, row in [(collection.prompts[r], int(r)) for r in rows] + [
        (e.text, None)
        for e in collection.episodes[: params.max_prompts]
        if "MISSING_LABEL_CANDIDATE" in e.flags and e.text.strip()
    ]:
        clean = " ".join(PLACEHOLDER_RE.sub(" ", text).split())  # a placeholder is no word of the intent
        key = clean.lower()
        if not key:
            continue
        by_text.setdefault(key, []).append(row)
        original.setdefault(key, clean)
        if clean != " ".join(text.split()):
            with_pii.add(key)
    if sum(len(v) for v in by_text.values()) < params.min_support:
        return out
    embedder = get_embedder()
    uniques = sorted(by_text)
    counts = np.array([len(by_text[t]) for t in uniques], dtype=np.float64)
    x = embedder.embed(uniques)
    label_ids = [e["label_id"] for e in base.documents.get("label_index", {}).get("entries", [])]
    label_vectors = base.matrices.get("label_embeddings")
    accepted: list[np.ndarray] = []
    for n, members in enumerate(_groups(x, params.cluster_cosine, 1)):
        member_rows = [r for i in members for r in by_text[uniques[i]] if r is not None]
        support = int(counts[members].sum())
        wordings = {frozenset(words(uniques[i])) for i in members}
        if support < params.min_support or len(wordings) < params.min_wordings:
            continue  # one phrase repeated is one request, not an intent the taxonomy lacks
        sources = {int(collection.sources[r]) for r in member_rows}
        if len(sources) < params.min_sources:
            continue
        centroid = unit((x[members] * counts[members, None]).mean(axis=0))
        if any(float(c @ centroid) >= params.sibling_cosine for c in accepted):
            continue  # the same region as a group proposed a moment ago
        top3 = Counter(lid for r in member_rows for lid, _ in collection.top_labels[r][:3])
        recurring = [lid for lid, c in top3.items() if c >= 0.5 * max(1, len(member_rows))]
        parent = _common_parent(labels, recurring)
        if (
            parent is None
            or labels[parent]["status"] != "ACTIVE"
            or _policy_contradiction(base.documents, parent)
        ):
            continue
        texts = [original[uniques[i]] for i in members]
        parent_doc = labels[parent]
        parent_text = " ".join(
            [parent_doc["name"], parent_doc.get("description", ""), *parent_doc.get("synonyms", [])]
        )
        others = [collection.prompts[r] for r in rows if r not in set(member_rows)][:500] + [parent_text]
        keys = distinctive_words(texts, others, top=3, exclude=set(words(parent_text)))
        if not keys:
            continue
        closest = np.argsort(-(x[members] @ centroid), kind="stable")
        examples = list(dict.fromkeys(texts[i] for i in closest if uniques[members[i]] not in with_pii))
        examples = distinct_examples(examples, base.documents, params.max_examples)
        phrase = request_phrase(texts, examples[0]) if examples else []
        name = " ".join(phrase if len(phrase) >= 2 else keys).capitalize()[:80]
        description = f"{name} — requests about {', '.join(keys)} ({parent_doc['name']})."
        candidate_text = " | ".join([parent_doc["name"], name, description, ", ".join(keys)])
        siblings = [
            lid
            for lid, doc in labels.items()
            if doc.get("parent") == parent and doc["status"] != "DEPRECATED"
        ]
        if any(labels[s]["name"].strip().lower() == name.lower() for s in siblings):
            continue
        new_vector = embedder.embed_one(candidate_text)
        if label_vectors is not None and len(label_ids):
            index = {lid: i for i, lid in enumerate(label_ids)}
            sibling_cos = [float(label_vectors[index[s]] @ new_vector) for s in siblings if s in index]
            sibling_cos += [float(label_vectors[index[s]] @ centroid) for s in siblings if s in index]
            if sibling_cos and max(sibling_cos) >= params.sibling_cosine:
                continue
        if _covered_by_sibling(siblings, labels, centroid, embedder, params.sibling_cosine):
            continue  # a sibling (a SHADOW one proposed earlier, typically) already holds these requests
        if not _taxonomy_ok(base.documents, parent, name, parent_doc["cluster"]):
            continue
        ref = f"c{n + 1}"
        ops: list[Op] = [
            LabelAdd(
                ref=ref,
                name=name,
                cluster=parent_doc["cluster"],
                parent=parent,
                description=description,
                synonyms=tuple(keys),
                examples=tuple(examples),
                status="SHADOW",
            )
        ]
        attach = _attachment(context, parent, centroid)
        if attach is not None:
            ops.append(NodeAttach(attach, labels=(f"new:{ref}",)))
        flags = Counter(f for r in member_rows for f in collection.flags[r] & TAXONOMY_TRIGGER_FLAGS)
        accepted.append(centroid)
        out.append(
            Candidate(
                kind="LABEL_ADD",
                title=f"Child label {name!r} under {parent} {parent_doc['name']!r}",
                summary=(
                    f"{len(members)} flagged requests from {len(sources)} sources form a group the taxonomy has "
                    f"no label for; proposed as a SHADOW child of {parent_doc['name']!r}"
                    + (f", attached to {attach}" if attach else "")
                ),
                ops=tuple(ops),
                evidence={
                    "support": support,
                    "wordings": len(wordings),
                    "sources": len(sources),
                    "episodes": support - len(member_rows),
                    "flags": dict(sorted(flags.items())),
                    "recurring_labels": recurring,
                    "parent": parent,
                    "examples": examples,
                    "checks": list(LABEL_ADD_CHECKS),
                    "log_ids": context.log_refs(member_rows),
                },
                generator={"name": NAME_ADD, "version": VERSION, "params": params.as_json()},
                zone_rows=tuple(sorted(member_rows)),
            )
        )
    return out


def distinct_examples(candidates: list[str], documents: dict, limit: int) -> list[str]:
    """The first ``limit`` of ``candidates`` (best first) that the curation guard accepts as a new label's
    examples: none colliding (``taxonomy.term_guard.term_conflicts``, identical or very close) with a
    term of another routing label of the release's taxonomy (``documents``)."""
    if not candidates or limit <= 0:
        return []
    view = taxonomy_view_from_documents(documents)
    out: list[str] = []
    for start in range(0, len(candidates), 4 * limit):  # best first: most groups need only the first chunk
        chunk = candidates[start : start + 4 * limit]
        refused = {c.text for c in term_conflicts(view, label_id="", new_terms={"examples": chunk})}
        out.extend(c for c in chunk if c not in refused)
        if len(out) >= limit:
            break
    return out[:limit]


def _covered_by_sibling(
    siblings: list[str], labels: dict, centroid: np.ndarray, embedder, threshold: float
) -> bool:  # type: ignore[no-untyped-def]
    """A sibling whose validated examples sit where the group sits (centroid cosine ≥ ``threshold``)."""
    for sibling in siblings:
        examples = [e for e in labels[sibling].get("examples", []) if e.strip()]
        if examples and float(unit(embedder.embed(examples).mean(axis=0)) @ centroid) >= threshold:
            return True
    return False


def _taxonomy_ok(documents: dict, parent: str | None, name: str, cluster: str) -> bool:

    view = taxonomy_view_from_documents(documents)
    before = {(v.rule, v.message) for v in validate_taxonomy(view)}
    record = LabelRecord("L99999999", name, cluster, parent, "SHADOW")
    after = {(v.rule, v.message) for v in validate_taxonomy(view.with_label(record))}
    return not (after - before)


def _parent_only(final: tuple[str, ...], parents: set, labels: dict) -> bool:
    """The weaver could place the request only at a parent label: no child of it fits (the gap
    child-label-first fills). True when the most specific label of ``L_final`` has live children."""
    if not final:
        return False
    specific = [lid for lid in final if not any(lid in _ancestors(labels, o)[1:] for o in final if o != lid)]
    return any(lid in parents for lid in specific)


def _attachment(context: GeneratorContext, parent: str, centroid: np.ndarray) -> str | None:
    """The ACTIVE node of the parent's cluster whose content is closest to the group (cosine ≥
    ``attach_cosine``): the node these requests should have reached."""
    params = context.params.labels
    base = context.base
    snapshot = base.snapshot
    if snapshot.embeddings is None:
        return None
    cluster = next((lab["cluster"] for lab in base.documents.get("labels", []) if lab["id"] == parent), None)
    positions = snapshot.cluster_nodes.get(cluster) if cluster else None
    if positions is None or positions.size == 0:
        return None
    best, best_score = None, params.attach_cosine
    for p in positions.tolist():
        node = snapshot.node(p)
        if node.status != "ACTIVE" or node.type in ("OutOfScope", "Clarify", "Decision", "Shortcut"):
            continue
        score = float(snapshot.embeddings[p] @ centroid)
        if score > best_score:
            best, best_score = node.node_id, score
    return best


def _unreached_nodes(base) -> list[str]:  # type: ignore[no-untyped-def]
    """ACTIVE informational nodes no label carries and no edge from an ACTIVE node leads to."""
    nodes = base.nodes
    reached = {
        e.target
        for e in base.graph.edges
        if e.source in nodes and nodes[e.source].status == "ACTIVE" and e.source != e.target
    }
    return sorted(
        n.node_id
        for n in nodes.values()
        if n.status == "ACTIVE"
        and n.type in INFORMATIONAL_TYPES
        and not n.labels
        and n.node_id not in reached
    )


def generate_unreached_labels(context: GeneratorContext) -> list[Candidate]:
    """LABEL_ADD proposals that give unreached content a label (see the module doc)."""
    params = context.params.labels
    base, collection = context.base, context.collection
    snapshot = base.snapshot
    orphans = _unreached_nodes(base)
    if not orphans or snapshot.embeddings is None or not collection.prompts:
        return []
    position = {node_id: i for i, node_id in enumerate(snapshot.node_ids)}
    orphans = [o for o in orphans if o in position]
    if not orphans:
        return []
    rows = context.sample(np.arange(len(collection.prompts)), params.max_prompts, "unreached")
    x = context.prompt_vectors(rows.tolist())
    to_orphans = x @ snapshot.embeddings[[position[o] for o in orphans]].T  # (rows, orphans)
    unreached = set(orphans)
    reachable = [
        i
        for i, node_id in enumerate(snapshot.node_ids)
        if node_id not in unreached and base.nodes[node_id].status == "ACTIVE"
    ]
    # the closest content the graph can reach (-1 when none): the unreached node must beat it;
    # by blocks of nodes, so a large graph never makes a (prompts × nodes) matrix
    best_reachable = np.full(rows.shape[0], -1.0)
    for start in range(0, len(reachable), REACHABLE_BLOCK):
        block = snapshot.embeddings[reachable[start : start + REACHABLE_BLOCK]]
        best_reachable = np.maximum(best_reachable, (x @ block.T).max(axis=1))
    best = to_orphans.argmax(axis=1)
    best_cos = to_orphans.max(axis=1)
    closer = (best_cos >= params.attach_cosine) & (best_cos > best_reachable)
    labels = {label["id"]: label for label in base.documents.get("labels", [])}
    out: list[Candidate] = []
    for k, orphan in enumerate(orphans):
        members = np.flatnonzero(closer & (best == k))
        content = snapshot.embeddings[position[orphan]]
        candidate = _unreached_candidate(context, orphan, rows[members], x[members], content, labels)
        if candidate is not None:
            out.append(candidate)
    return out


def _unreached_candidate(context, orphan, rows, x, content, labels) -> Candidate | None:  # type: ignore[no-untyped-def]
    params = context.params.labels
    base, collection = context.base, context.collection
    node = base.nodes[orphan]
    cluster = node.clusters[0] if node.clusters else ""
    if not cluster or rows.shape[0] < params.min_support:
        return None
    texts = [" ".join(collection.prompts[int(r)].split()) for r in rows]
    cleaned = [" ".join(PLACEHOLDER_RE.sub(" ", t).split()) for t in texts]  # a placeholder is no word
    member_rows = [int(r) for r in rows]
    wordings = {frozenset(words(c)) for c in cleaned if c}
    sources = {int(collection.sources[r]) for r in member_rows}
    if len(wordings) < params.min_wordings or len(sources) < params.min_sources:
        return None
    centroid = unit(x.mean(axis=0))
    top3 = Counter(lid for r in member_rows for lid, _ in collection.top_labels[r][:3])
    recurring = [lid for lid, c in top3.items() if c >= 0.5 * len(member_rows)]
    parent = _common_parent(labels, recurring)
    if parent is not None and (labels[parent]["status"] != "ACTIVE" or labels[parent]["cluster"] != cluster):
        parent = None
    if parent is not None and _policy_contradiction(base.documents, parent):
        return None
    siblings = [
        lid
        for lid, doc in labels.items()
        if doc.get("parent") == parent and doc["cluster"] == cluster and doc["status"] != "DEPRECATED"
    ]
    taken = set(member_rows)
    others = [p for r, p in enumerate(collection.prompts) if r not in taken][:500]
    keys = distinctive_words(cleaned, others, top=3)
    name = node.title.strip()[:80]
    if not name or any(labels[s]["name"].strip().lower() == name.lower() for s in siblings):
        name = " ".join(keys).capitalize()[:80]
    if not name or any(labels[s]["name"].strip().lower() == name.lower() for s in siblings):
        return None
    embedder = get_embedder()
    if _covered_by_sibling(siblings, labels, centroid, embedder, params.sibling_cosine):
        return None
    if not _taxonomy_ok(base.documents, parent, name, cluster):
        return None
    # requests no answer served (unrouted, or reported unhelpful or failed) first: a sibling intent's
    # request near this content was served by its own label, a request of the missing intent was not
    unserved = np.array(
        [
            collection.target[r] < 0
            or int(collection.outcome[r]) in (UnifiedOutcome.LOW_CONFIDENCE, UnifiedOutcome.FAILURE)
            for r in member_rows
        ]
    )
    closest = np.lexsort((-(x @ np.asarray(content, dtype=x.dtype)), ~unserved))
    # a prompt that held PII supports the group but is never an example
    examples = list(dict.fromkeys(texts[i] for i in closest if cleaned[i] == texts[i]))
    examples = distinct_examples(examples, base.documents, params.max_examples)
    if not examples:
        return None
    description = f"{name} — requests the content of {orphan} answers" + (
        f" ({', '.join(keys)})." if keys else "."
    )
    ops: tuple[Op, ...] = (
        LabelAdd(
            ref="u1",
            name=name,
            cluster=cluster,
            parent=parent,
            description=description,
            synonyms=tuple(keys),
            examples=tuple(examples),
            status="SHADOW",
        ),
        NodeAttach(orphan, labels=("new:u1",)),
    )
    where = f"under {parent} {labels[parent]['name']!r}" if parent else f"in cluster {cluster}"
    return Candidate(
        kind="LABEL_ADD",
        title=f"Label {name!r} for unreached node {orphan}",
        summary=(
            f"{orphan} ({node.title!r}) has no label and no edge leads to it; {len(member_rows)} requests from "
            f"{len(sources)} sources are closer to its content than to what served them: a SHADOW label {where}, "
            "attached to it"
        ),
        ops=ops,
        evidence={
            "node": orphan,
            "support": len(member_rows),
            "wordings": len(wordings),
            "sources": len(sources),
            "served_elsewhere": dict(
                Counter(collection.target_id(r) or "(none)" for r in member_rows).most_common(5)
            ),
            "recurring_labels": recurring,
            "parent": parent,
            "examples": examples,
            "checks": list(LABEL_ADD_CHECKS),
            "log_ids": context.log_refs(member_rows),
        },
        generator={"name": NAME_UNREACHED, "version": VERSION, "params": params.as_json()},
        zone_rows=tuple(sorted(member_rows)),
    )


def generate_promotions(context: GeneratorContext) -> list[Candidate]:
    params = context.params.labels
    base, collection = context.base, context.collection
    out: list[Candidate] = []
    shadow = [label for label in base.documents.get("labels", []) if label["status"] == "SHADOW"]
    for label in sorted(shadow, key=lambda x: x["id"]):
        rows = [i for i, lid in enumerate(collection.shadow_wins) if lid == label["id"]]
        sources = {int(collection.sources[r]) for r in rows}
        if len(rows) < params.min_shadow_support or len(sources) < params.min_sources:
            continue
        outcomes = Counter(UnifiedOutcome(int(collection.outcome[r])).name for r in rows)
        out.append(
            Candidate(
                kind="LABEL_PROMOTE",
                title=f"Promote {label['id']} {label['name']!r} SHADOW → ACTIVE",
                summary=(
                    f"The weaver would have chosen {label['name']!r} for {len(rows)} requests from "
                    f"{len(sources)} sources while it was in SHADOW"
                ),
                ops=(LabelStatusSet(label["id"], "ACTIVE", "promoted after shadow evaluation"),),
                evidence={
                    "label": label["id"],
                    "shadow_wins": len(rows),
                    "sources": len(sources),
                    "outcomes_while_shadow": dict(sorted(outcomes.items())),
                    "log_ids": context.log_refs(rows),
                },
                generator={"name": NAME_PROMOTE, "version": VERSION, "params": params.as_json()},
                zone_rows=tuple(rows),
            )
        )
    return out
