"""Lifecycle proposals of the offline loop (issue 28 item 4): OBSOLESCENCE from persistent negatives or no
traffic, NODE_REMOVE after an observation window without alias traffic, LABEL_REATTACH under a better
cluster. Each is exercised through the nightly loop (``offline_loop_run``: collect → generate → replay
→ bin → apply), approved by a reviewer through the review API, and read back from the published release;
the gates are also checked against noise (too little evidence proposes nothing)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.utils import timezone

from tests.review.loop_fixtures import SMALL_PACK, nightly_run_on_worker

pytestmark = pytest.mark.django_db

EXTRA_NODES = [
    {
        "id": "N-invoice-archive",
        "type": "Info",
        "title": "Invoice archive",
        "chunk": "Invoices older than two years are in Billing › Archive as PDF files.",
        "risk": "low",
        "status": "ACTIVE",
        "labels": ["L00002"],
        "clusters": ["billing"],
        "preconditions": [],
        "parameters": [],
        "handler": "",
    },
    {
        "id": "N-login-help",
        "type": "Info",
        "title": "Cannot sign in",
        "chunk": (
            "If you cannot sign in, check your email address, then use the forgotten password link on the "
            "login page to receive a password reset email. Accounts lock after five failed attempts."
        ),
        "risk": "low",
        "status": "ACTIVE",
        "labels": ["L00003"],
        "clusters": ["access"],
        "preconditions": [],
        "parameters": [],
        "handler": "",
    },
    {
        "id": "N-password-reset",
        "type": "Info",
        "title": "Reset your password",
        "chunk": (
            "To reset your password, click 'Forgot password' on the sign-in page and follow the link in "
            "the email; the link expires after one hour."
        ),
        "risk": "low",
        "status": "ACTIVE",
        "labels": ["L00005"],
        "clusters": ["billing"],
        "preconditions": [],
        "parameters": [],
        "handler": "",
    },
    {
        "id": "N-old-invoices",
        "type": "Info",
        "title": "Old invoice page",
        "chunk": "The old billing portal listed invoices by month.",
        "risk": "low",
        "status": "DEPRECATED",
        "status_reason": "replaced by the invoice download page",
        "labels": ["L00002"],
        "clusters": ["billing"],
        "preconditions": [],
        "parameters": [],
        "handler": "",
    },
]
MISFILED_LABEL = {  # a password label filed under Billing by mistake
    "id": "L00005",
    "name": "Password reset",
    "cluster": "billing",
    "parent": None,
    "status": "ACTIVE",
    "description": "Resetting a forgotten password.",
    "synonyms": [],
    "examples": ["reset my password"],
}
PASSWORD_PROMPTS = [
    "I forgot my password",
    "how do I reset my password",
    "password reset link not arriving",
    "cannot remember my password to sign in",
    "change my forgotten password",
    "the reset password email expired",
    "locked out, need a new password",
    "where is the forgot password link",
    "reset password for my login",
    "my password does not work anymore",
    "send me a password reset email",
    "help me recover my account password",
    "password recovery steps",
    "new password please, I can't log in",
]
INVOICE_PROMPTS = [
    "where is my invoice pdf",
    "download my invoice",
    "get the invoice for march",
    "I need a copy of my bill",
    "invoice for last month please",
    "how can I download invoices",
]


def _release(tmp_path: Path, *, days_ago: float) -> tuple[Any, Any]:
    """The small pack with the extra nodes and label, published and active since ``days_ago`` days."""
    from ontology.models import Release
    from ontology.releases import release_publish
    from taxonomy.packs import pack_import, pack_read

    pack = yaml.safe_load(SMALL_PACK.read_text())
    pack["labels"].append(MISFILED_LABEL)
    pack["nodes"].extend(EXTRA_NODES)
    pack["edges"].append(
        {"source": "N-old-invoices", "target": "N-invoice-download", "type": "RELATED_TO", "weight": 0.5}
    )
    pack["aliases"] = [
        {"source": "N-old-invoices", "targets": ["N-invoice-download"], "reason": "replaced"},
    ]
    path = tmp_path / "pack.yaml"
    path.write_text(yaml.safe_dump(pack, allow_unicode=True))
    project = pack_import(pack_read(path)).project
    release = release_publish(project=project, actor=None)
    then = timezone.now() - timedelta(days=days_ago)
    Release.objects.filter(pk=release.pk).update(created_at=then, activated_at=then)
    release.refresh_from_db()
    return project, release


def _log(
    project: Any,
    release: Any,
    *,
    prompt: str,
    target: str,
    at: datetime,
    labels: tuple[str, ...] = ("L00002",),
    status: str = "INFO_UNCERTAIN_SUCCESS",
    silent: bool = True,
    user: str = "u1",
    kind: str = "INFO",
    details: dict | None = None,
    path: tuple[str, ...] = (),
    landing: str | None = None,
) -> Any:
    from inference.models import InferenceLog

    log = InferenceLog.objects.create(
        project=project,
        request_id=uuid.uuid4().hex,
        release=release,
        release_version=release.version,
        session_id=f"s-{uuid.uuid4().hex[:8]}",
        user_id=user,
        prompt=prompt,
        context={"user_id": user},
        labels_final=list(labels),
        landing={"node_start": landing or target, "candidates": [[landing or target, 0.8]]},
        path_nodes=list(path or ((landing, target) if landing else (target,))),
        target_node=target,
        outcome_kind=kind,
        outcome_status=status,
        silent_outcome=silent,
        outcome_details=details or {},
    )
    InferenceLog.objects.filter(pk=log.pk).update(created_at=at)
    return log


def _night(project: Any, generators: list[str], **lifecycle: Any) -> Any:
    from review.loop.run import offline_loop_run

    overrides: dict[str, Any] = {"generators": generators}
    if lifecycle:
        overrides["lifecycle"] = lifecycle
    run = offline_loop_run(project=project, overrides=overrides, idempotency_key=uuid.uuid4().hex)
    assert run.status == "SUCCEEDED", run.job.message if run.job else run
    return run


def _approve(api_as: Any, make_user: Any, run_jobs: Any, proposal: Any) -> dict[str, Any]:
    """A reviewer approves ``proposal`` through the review API ("now") and the job publishes it."""
    client = api_as(make_user(f"rev-{uuid.uuid4().hex[:6]}", "reviewer", proposal.project))
    url = f"/api/v1/projects/{proposal.project.slug}/proposals/{proposal.pk}/approve/"
    with run_jobs():
        response = client.post(url, {"mode": "now", "reason": "checked the evidence"}, format="json")
    assert response.status_code == 202, response.content
    job = client.get(response["Location"]).json()
    assert job["status"] == "SUCCEEDED", job
    return job


def _proposal(project: Any, kind: str, node_id: str) -> Any:
    """The one proposal of ``kind`` about ``node_id``."""
    from review.models import Proposal

    (found,) = [
        p for p in Proposal.objects.filter(project=project, kind=kind) if p.evidence["node"] == node_id
    ]
    return found


def _active_state(project: Any) -> Any:
    from ontology.models import Release
    from review.loop.shadow import BaseRelease

    return BaseRelease.load(Release.objects.get(project=project, is_active=True))


def _deprecations_from_failures(project: Any, release: Any) -> list[Any]:
    """The OBSOLESCENCE candidates from persistent failures the generator makes on ``project``'s logs."""
    from review.loop.collection import collect
    from review.loop.generators.base import GeneratorContext
    from review.loop.generators.lifecycle import generate_obsolescence
    from review.loop.params import loop_params
    from review.loop.shadow import BaseRelease

    base = BaseRelease.load(release)
    context = GeneratorContext(
        project=project,
        base=base,
        collection=collect(project=project, node_ids=base.arrays.node_ids),
        params=loop_params(),
        seed=1,
    )
    return [c for c in generate_obsolescence(context) if c.evidence["trigger"] == "negatives"]


# --- OBSOLESCENCE ---------------------------------------------------------------------------------


def _negative_traffic(
    project: Any,
    release: Any,
    *,
    days: int,
    per_day: int,
    negative_every: int,
    landing: str | None = None,
    silent: bool = False,
    status: str = "INFO_LOW_CONFIDENCE",
) -> None:
    """Requests ending on N-invoice-archive (from ``landing`` when given), all but every
    ``negative_every``-th of them answered with ``status`` (by default a low-confidence answer the user
    reports: a FAILURE; ``silent``, nobody says anything), the rest confirmed: ``days`` calendar days,
    each request between 03:00 and 22:00 of its day (23:00 of a day at most 48 h back is the anchor, so
    no day's requests cross midnight whatever the hour the test runs)."""
    now = (timezone.now() - timedelta(hours=24)).replace(hour=23, minute=0, second=0, microsecond=0)
    n = 0
    for day in range(days):
        for i in range(per_day):
            n += 1
            bad = n % negative_every != 0
            _log(
                project,
                release,
                prompt=INVOICE_PROMPTS[n % len(INVOICE_PROMPTS)],
                target="N-invoice-archive",
                at=now - timedelta(days=day, hours=1 + i % 20),
                status=status if bad else "INFO_CONFIRMED_SUCCESS",
                silent=silent and bad,
                user=f"u{n % 7}",
                landing=landing,
            )


def test_persistent_negatives_over_several_nights_are_proposed_deprecated_and_a_reviewer_publishes_it(
    tmp_path, fresh_snapshots, api_as, make_user, run_jobs
):

    project, release = _release(tmp_path, days_ago=10)
    # 80 % negative over 4 days, every request landing on the download page and ending on the archive
    _negative_traffic(project, release, days=4, per_day=8, negative_every=5, landing="N-invoice-download")

    _night(project, ["obsolescence"])

    # the outcome judges the node the route ended on, not the landing point it passed through
    from review.models import Proposal

    negatives = Proposal.objects.filter(project=project, kind="OBSOLESCENCE", evidence__trigger="negatives")
    assert [p.evidence["node"] for p in negatives] == ["N-invoice-archive"]
    proposal = _proposal(project, "OBSOLESCENCE", "N-invoice-archive")
    assert proposal.evidence["trigger"] == "negatives" and proposal.evidence["failure_days"] == 4
    assert proposal.evidence["failure_share_lower"] >= 0.5
    assert proposal.replay.get("score") is not None and proposal.confidence_bin  # replayed and binned
    assert proposal.status == "PENDING_REVIEW", proposal.replay.get("bin_reason")
    ops = proposal.changeset
    assert ops[0] == {
        "op": "node_status",
        "node_id": "N-invoice-archive",
        "status": "DEPRECATED",
        "reason": ops[0]["reason"],
    }

    job = _approve(api_as, make_user, run_jobs, proposal)

    proposal.refresh_from_db()
    assert proposal.status == "APPLIED" and job["result"]["release"] == proposal.applied_release.version
    node = _active_state(project).nodes["N-invoice-archive"]
    assert node.status == "DEPRECATED" and "persistent failures" in node.status_reason


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_the_nightly_task_on_a_real_worker_proposes_the_deprecation(tmp_path, fresh_snapshots):
    """The same persistent negatives, through the beat's nightly task on a real Celery worker, with the
    generators the settings list: the OBSOLESCENCE proposal is replayed, binned and queued for review."""

    project, release = _release(tmp_path, days_ago=10)
    _negative_traffic(project, release, days=4, per_day=8, negative_every=5)

    run = nightly_run_on_worker(project)
    assert run.status == "SUCCEEDED", run.stats
    proposal = _proposal(project, "OBSOLESCENCE", "N-invoice-archive")
    assert proposal.run_id == run.pk and proposal.evidence["trigger"] == "negatives"
    assert proposal.status == "PENDING_REVIEW", proposal.replay.get("bin_reason")
    assert proposal.replay["gedig_gate"]["source"] == "fixed"  # a first night: no gauges to calibrate on


def test_negatives_on_a_single_night_or_too_few_landings_propose_nothing(tmp_path, fresh_snapshots):
    project, release = _release(tmp_path, days_ago=10)
    _negative_traffic(project, release, days=1, per_day=30, negative_every=5)  # one bad evening

    def proposed() -> list[str]:
        return [c.evidence["node"] for c in _deprecations_from_failures(project, release)]

    assert proposed() == []
    from inference.models import InferenceLog

    InferenceLog.objects.filter(project=project).delete()
    _negative_traffic(project, release, days=4, per_day=2, negative_every=5)  # 8 < min_landings
    assert proposed() == []
    _negative_traffic(project, release, days=4, per_day=1, negative_every=5)  # 12 landings, 4 nights
    assert proposed() == ["N-invoice-archive"]


def test_only_reported_failures_condemn_a_node_and_silent_answers_count_as_landings_that_did_not_fail(
    tmp_path, fresh_snapshots
):
    from inference.models import InferenceLog

    project, release = _release(tmp_path, days_ago=10)

    # 32 landings over 4 days, 26 of them low-confidence answers nobody reported: the router's doubt,
    # not a collapse of the node
    _negative_traffic(project, release, days=4, per_day=8, negative_every=5, silent=True)
    assert _deprecations_from_failures(project, release) == []

    # the same answers, reported by their users: 26 failures of 32
    InferenceLog.objects.filter(project=project).delete()
    _negative_traffic(project, release, days=4, per_day=8, negative_every=5)
    [candidate] = _deprecations_from_failures(project, release)
    assert (candidate.evidence["landings_with_outcome"], candidate.evidence["failures"]) == (32, 26)
    assert candidate.evidence["outcomes"] == {"CONFIRMED": 6, "FAILURE": 26}
    assert candidate.evidence["failure_days"] == 4 and candidate.evidence["failure_share_lower"] >= 0.5

    # 12 reported failures over 3 days among 35 landings whose other answers went unchallenged: no collapse
    InferenceLog.objects.filter(project=project).delete()
    _negative_traffic(project, release, days=3, per_day=5, negative_every=5)
    _negative_traffic(
        project,
        release,
        days=4,
        per_day=5,
        negative_every=10**6,
        status="INFO_UNCERTAIN_SUCCESS",
        silent=True,
    )
    assert _deprecations_from_failures(project, release) == []


def test_a_reachable_node_without_traffic_for_the_idle_window_is_proposed_deprecated(
    tmp_path, fresh_snapshots
):
    from review.models import Proposal

    project, release = _release(tmp_path, days_ago=10)
    now = timezone.now()
    for i in range(12):  # its label L00002 brings requests; all are served by the download page
        _log(
            project,
            release,
            prompt=INVOICE_PROMPTS[i % len(INVOICE_PROMPTS)],
            target="N-invoice-download",
            at=now - timedelta(days=i % 6, hours=2),
            user=f"u{i}",
        )

    _night(project, ["obsolescence"])

    idle = _proposal(project, "OBSOLESCENCE", "N-invoice-archive")
    assert idle.evidence["trigger"] == "no_traffic" and idle.evidence["door_traffic"] == {"L00002": 12}
    assert idle.confidence_bin in ("MID_CONF", "LOW_CONF") and idle.replay.get("sample")
    assert not [
        p for p in Proposal.objects.filter(project=project) if p.evidence["node"] == "N-invoice-download"
    ]


def test_a_node_younger_than_the_idle_window_is_not_proposed_for_having_no_traffic(tmp_path, fresh_snapshots):
    from review.models import Proposal

    project, release = _release(tmp_path, days_ago=2)  # published two days ago: not idle, new
    now = timezone.now()
    for i in range(12):
        _log(
            project,
            release,
            prompt=INVOICE_PROMPTS[i % 6],
            target="N-invoice-download",
            at=now - timedelta(hours=i),
        )

    _night(project, ["obsolescence"])

    assert not Proposal.objects.filter(project=project, kind="OBSOLESCENCE").exists()


# --- NODE_REMOVE ---------------------------------------------------------------------------------


def _ordinary_traffic(project: Any, release: Any) -> None:
    now = timezone.now()
    for i in range(6):
        _log(
            project,
            release,
            prompt=INVOICE_PROMPTS[i],
            target="N-invoice-download",
            at=now - timedelta(days=i),
        )


def test_a_deprecated_node_without_alias_traffic_is_removed_after_the_observation_window(
    tmp_path, fresh_snapshots, api_as, make_user, run_jobs
):
    from review.models import Proposal

    project, release = _release(tmp_path, days_ago=10)
    _ordinary_traffic(project, release)

    _night(project, ["removal"])

    proposal = Proposal.objects.get(project=project, kind="NODE_REMOVE")
    assert proposal.evidence["node"] == "N-old-invoices"
    assert proposal.evidence["alias_traffic"] == {"served": 0, "memory_reads": 0, "episodes": 0}
    assert [op["op"] for op in proposal.changeset] == ["edge_remove", "node_status"]
    assert proposal.status == "PENDING_REVIEW", proposal.replay.get("bin_reason")
    reviewer = api_as(make_user("remy-reviewer", "reviewer", project))
    page = reviewer.get(f"/p/{project.slug}/review/proposals/{proposal.pk}/")
    assert page.status_code == 200 and "N-old-invoices" in page.content.decode()
    preview = reviewer.get(f"/api/v1/projects/{project.slug}/proposals/{proposal.pk}/preview/").json()
    assert preview["applies"] and preview["problems"] == []
    assert [(n["node_id"], n["after"]["status"]) for n in preview["nodes"] if n["change"] == "status"] == [
        ("N-old-invoices", "REMOVED")
    ]

    _approve(api_as, make_user, run_jobs, proposal)

    state = _active_state(project)
    assert state.nodes["N-old-invoices"].status == "REMOVED"
    assert not [e for e in state.graph.edges if "N-old-invoices" in (e.source, e.target)]
    aliases = {a.source: a.targets for a in state.graph.aliases}
    assert aliases["N-old-invoices"] == ("N-invoice-download",)  # old memories keep their way
    assert state.snapshot.resolve_alias("N-old-invoices") == ("N-invoice-download",)


def test_alias_traffic_in_the_observation_window_keeps_a_deprecated_node(tmp_path, fresh_snapshots):
    from review.models import Proposal

    project, release = _release(tmp_path, days_ago=10)
    _ordinary_traffic(project, release)
    _log(  # a MemoryRead that followed the old node's redirection two days ago
        project,
        release,
        prompt="what did I say about my invoices",
        target="N-invoice-download",
        at=timezone.now() - timedelta(days=2),
        kind="MEMORY",
        status="MEMORY",
        details={"memory": {"mode": "read", "items": [{"node_id": "N-old-invoices", "redirected": True}]}},
    )

    _night(project, ["removal"])

    assert not Proposal.objects.filter(project=project, kind="NODE_REMOVE").exists()


def test_a_node_deprecated_for_less_than_the_observation_window_is_kept(tmp_path, fresh_snapshots):
    from review.models import Proposal

    project, release = _release(tmp_path, days_ago=3)  # DEPRECATED for 3 days only: the window is 7
    _ordinary_traffic(project, release)

    _night(project, ["removal"])

    assert not Proposal.objects.filter(project=project, kind="NODE_REMOVE").exists()


# --- LABEL_REATTACH -----------------------------------------------------------------------------


def _password_traffic(project: Any, release: Any, prompts: list[str]) -> None:
    now = timezone.now()
    for i, prompt in enumerate(prompts):
        _log(
            project,
            release,
            prompt=prompt,
            target="N-password-reset",
            labels=("L00005",),
            at=now - timedelta(days=i % 5, hours=1),
            user=f"u{i % 5}",
        )


def test_a_label_whose_traffic_sits_in_another_cluster_is_reattached_there_and_published(
    tmp_path, fresh_snapshots, api_as, make_user, run_jobs
):
    from review.models import Proposal
    from taxonomy.models import Label

    project, release = _release(tmp_path, days_ago=10)
    _password_traffic(project, release, PASSWORD_PROMPTS)
    _ordinary_traffic(project, release)

    _night(project, ["reattach"])

    proposal = Proposal.objects.get(project=project, kind="LABEL_REATTACH")
    assert (
        proposal.evidence["label"],
        proposal.evidence["from_cluster"],
        proposal.evidence["to_cluster"],
    ) == (
        "L00005",
        "billing",
        "access",
    )
    assert proposal.evidence["gap_lower"] >= 0.08
    assert proposal.changeset[0]["op"] == "label_move" and proposal.changeset[0]["cluster"] == "access"
    assert proposal.status == "PENDING_REVIEW", proposal.replay.get("bin_reason")
    # the reviewer may pick another parent: one of another cluster is refused with the reason, nothing lost
    reviewer = make_user("rhea-reviewer", "reviewer", project)
    client = api_as(reviewer)
    page = client.get(f"/p/{project.slug}/review/proposals/{proposal.pk}/edit/").content.decode()
    assert 'name="op-0-cluster"' in page and 'name="op-0-parent"' in page
    preview = client.get(f"/api/v1/projects/{project.slug}/proposals/{proposal.pk}/preview/").json()
    assert [(x["label_id"], x["cluster"]) for x in preview["labels"]] == [("L00005", "access")]
    edit = f"/api/v1/projects/{project.slug}/proposals/{proposal.pk}/edit/"
    wrong = [dict(proposal.changeset[0], parent="L00001"), *proposal.changeset[1:]]
    refused = client.post(edit, {"changeset": wrong, "reason": "under Invoices"}, format="json")
    assert refused.status_code in (400, 409, 422) and "L00001" in refused.content.decode()
    proposal.refresh_from_db()
    assert proposal.changeset[0]["parent"] != "L00001" and proposal.status == "PENDING_REVIEW"
    root = [dict(proposal.changeset[0], parent=None), *proposal.changeset[1:]]
    edited = client.post(edit, {"changeset": root, "reason": "at the root of Access"}, format="json")
    assert edited.status_code == 200, edited.content
    proposal.refresh_from_db()

    _approve(api_as, make_user, run_jobs, proposal)

    labels = {label["id"]: label for label in _active_state(project).documents["labels"]}
    assert labels["L00005"]["cluster"] == "access"
    assert labels["L00005"]["parent"] is None
    assert Label.objects.get(project=project, label_id="L00005").cluster.key == "access"  # the draft too
    node = _active_state(project).nodes["N-password-reset"]
    assert "access" in node.clusters and "billing" not in node.clusters


def test_a_label_with_too_little_traffic_or_at_home_is_not_reattached(tmp_path, fresh_snapshots):
    from review.models import Proposal

    project, release = _release(tmp_path, days_ago=10)
    _password_traffic(project, release, PASSWORD_PROMPTS[:5])  # 5 < reattach_min_support
    now = timezone.now()
    for i in range(14):  # invoice requests on the invoice label: at home in Billing
        _log(
            project,
            release,
            prompt=INVOICE_PROMPTS[i % 6],
            target="N-invoice-download",
            at=now - timedelta(hours=i),
            user=f"u{i}",
        )

    _night(project, ["reattach"])

    assert not Proposal.objects.filter(project=project, kind="LABEL_REATTACH").exists()


# --- the label_move operation: in memory (replay) = through the services (approval) ----------------


@pytest.mark.parametrize(
    ("label_id", "cluster", "parent"),
    [
        ("L00001", "access", None),  # a root with a child moves to another cluster, its child with it
        ("L00002", "access", None),  # a child becomes a root of another cluster
        ("L00005", "billing", "L00001"),  # a root goes under a label of its own cluster
    ],
)
def test_label_move_in_memory_equals_label_move_through_the_services(
    tmp_path, fresh_snapshots, label_id, cluster, parent
):
    from ontology.releases import draft_state
    from review.changeset import LabelMove
    from review.changeset_apply import KnowledgeState, changeset_apply
    from review.loop.application import effects_write

    project, release = _release(tmp_path, days_ago=1)
    base = _active_state(project)
    ops = (LabelMove(label_id, cluster, parent, "better cluster"),)

    in_memory = changeset_apply(base.state, ops, reason="test")
    on_draft = changeset_apply(KnowledgeState(*draft_state(project)), ops, reason="test")
    effects_write(project=project, actor=None, effects=on_draft.effects, reason="test")
    stored = KnowledgeState(*draft_state(project))

    assert stored.documents["labels"] == in_memory.documents["labels"]
    moved = {label["id"]: label for label in in_memory.documents["labels"]}
    assert (moved[label_id]["cluster"], moved[label_id]["parent"]) == (cluster, parent)
    children = [lid for lid, label in moved.items() if label["parent"] == label_id]
    assert all(moved[c]["cluster"] == cluster for c in children)  # the subtree follows
    assert changeset_apply(in_memory.state, ops).effects == []  # applied twice: nothing the second time


def test_label_move_refuses_a_parent_of_another_cluster_or_its_own_descendant(tmp_path, fresh_snapshots):
    from review.changeset import LabelMove
    from review.changeset_apply import ChangesetConflict, changeset_apply

    project, release = _release(tmp_path, days_ago=1)
    state = _active_state(project).state

    with pytest.raises(ChangesetConflict, match="lives in"):
        changeset_apply(state, (LabelMove("L00005", "billing", "L00003"),))
    with pytest.raises(ChangesetConflict, match="descendant"):
        changeset_apply(state, (LabelMove("L00001", "billing", "L00002"),))


def test_a_label_move_the_taxonomy_forbids_is_found_by_replay_and_refused_by_the_services(
    tmp_path, fresh_snapshots
):
    from arg_platform.errors import RuleViolation
    from ontology.releases import draft_state
    from review.changeset import LabelMove
    from review.changeset_apply import KnowledgeState, changeset_apply
    from review.loop.application import effects_write
    from review.loop.shadow import shadow_violations

    project, release = _release(tmp_path, days_ago=1)
    ops = (LabelMove("L00001", "access", "L00003"),)  # its child L00002 is incompatible with L00003

    in_memory = changeset_apply(_active_state(project).state, ops)
    assert any(v.rule == "taxonomy.incompatible_lineage" for v in shadow_violations(in_memory))
    on_draft = changeset_apply(KnowledgeState(*draft_state(project)), ops)
    with pytest.raises(RuleViolation, match="incompatible_lineage"):
        effects_write(project=project, actor=None, effects=on_draft.effects, reason="test")


def test_alias_traffic_counts_requests_still_served_by_the_old_node_and_memory_reads_through_its_alias(
    tmp_path, fresh_snapshots
):
    from review.loop.collection import collect
    from review.loop.generators.base import GeneratorContext
    from review.loop.generators.lifecycle import alias_traffic
    from review.loop.params import loop_params

    project, release = _release(tmp_path, days_ago=10)
    now = timezone.now()
    _ordinary_traffic(project, release)
    _log(project, release, prompt="old invoices page", target="N-old-invoices", at=now - timedelta(days=1))
    _log(  # a pinned client whose route passed through the old node
        project,
        release,
        prompt="monthly invoices",
        target="N-invoice-download",
        at=now - timedelta(days=3),
        path=("N-old-invoices", "N-invoice-download"),
    )
    _log(project, release, prompt="an old one", target="N-old-invoices", at=now - timedelta(days=9))  # before
    for _ in range(2):
        _log(
            project,
            release,
            prompt="what did I note about invoices",
            target="N-invoice-download",
            at=now - timedelta(days=2),
            kind="MEMORY",
            status="MEMORY",
            details={"memory": {"read": {"items": [{"node_id": "N-old-invoices", "redirected": True}]}}},
        )
    from memory.models import EpisodicMemory

    def episode(text: str, **dates: Any) -> None:
        memory = EpisodicMemory.objects.create(
            project=project,
            scope="USER",
            subject="u1",
            info_type="Event",
            text=text,
            node_id="N-old-invoices",
        )
        EpisodicMemory.objects.filter(pk=memory.pk).update(**dates)

    episode("written on the old page yesterday", created_at=now - timedelta(days=1))
    episode(  # written long ago, followed through the redirection two days ago
        "my March invoice was wrong",
        created_at=now - timedelta(days=60),
        redirected_at=now - timedelta(days=2),
    )
    episode("written long ago, never read since", created_at=now - timedelta(days=60))
    base = _active_state(project)
    context = GeneratorContext(
        project=project,
        base=base,
        collection=collect(project=project, node_ids=base.arrays.node_ids, window_days=10),
        params=loop_params(),
        seed=1,
    )

    traffic = alias_traffic(context, ["N-old-invoices"], now - timedelta(days=7))

    assert traffic == {"N-old-invoices": {"served": 2, "memory_reads": 2, "episodes": 2}}


def test_a_label_moves_only_when_its_nearest_relatives_agree_with_the_cluster_means():
    """A cluster holding two topics (navigation beside maintenance) keeps a navigation label although its
    mean sits farther from the label's requests than another cluster's: the nearest-node view (mean of the
    prompt's ``reattach_neighbours`` highest node cosines) disagrees, and the weaker view decides."""
    from types import SimpleNamespace

    import numpy as np

    from review.loop.generators.lifecycle import cluster_affinities, cluster_members, reattach_target
    from review.loop.params import loop_params

    axes = np.eye(4, dtype=np.float32)
    nav, maintenance, travel = axes[0], axes[1], axes[2]
    embeddings = np.stack([nav] * 3 + [maintenance] * 5 + [travel] * 4 + [nav])
    snapshot = SimpleNamespace(
        embeddings=embeddings,
        node_ids=[f"N{i}" for i in range(len(embeddings))],
        cluster_nodes={"auto": np.arange(0, 8), "travel": np.arange(8, 12), "other": np.array([12])},
        node=lambda p: SimpleNamespace(status="ACTIVE"),
    )
    context: Any = SimpleNamespace(base=SimpleNamespace(snapshot=snapshot))
    k = loop_params().lifecycle.reattach_neighbours
    assert k == 3
    prompts = np.stack([0.8 * nav + 0.6 * travel, 0.75 * nav + 0.66 * travel, 0.85 * nav + 0.53 * travel])

    members = cluster_members(context, {"N12"})  # the label's own node N12 left out
    assert {c: len(v) for c, v in members.items()} == {"auto": 8, "travel": 4}
    centroid = cluster_affinities(members, prompts, 0)
    local = cluster_affinities(members, prompts, k)
    assert set(local) == set(centroid) == {"auto", "travel"}
    assert local["auto"][0] == pytest.approx(0.8) and local["travel"][0] == pytest.approx(0.6)
    assert centroid["travel"][0] == pytest.approx(0.6)
    assert centroid["auto"][0] == pytest.approx(2.4 / np.sqrt(34), abs=1e-6)  # < 0.6: the mean says travel
    assert cluster_affinities(members, prompts, 10)["travel"][0] == pytest.approx(0.6)  # fewer nodes than k

    z = 1.645
    alone = reattach_target([centroid], "auto", z)
    assert alone is not None and alone[1] == "travel" and alone[0] > 0.08  # the centroid alone would move it
    both = reattach_target([centroid, local], "auto", z)
    assert both is not None and both[1] == "travel" and both[0] < 0  # the relatives keep it at home
    assert both[2][0] == pytest.approx(alone[0]) and both[0] == min(both[2])
    # clearly navigation, filed under travel: both views agree it belongs in auto
    clear = np.stack([0.95 * nav + 0.31 * travel, 0.97 * nav + 0.24 * travel, 0.93 * nav + 0.37 * travel])
    views = [cluster_affinities(members, clear, n) for n in (0, k)]
    moved = reattach_target(views, "travel", z)
    assert moved is not None and moved[1] == "auto" and moved[0] > 0.08


def _label(lid: str, cluster: str, parent: str | None = None, status: str = "ACTIVE") -> dict:
    return {"id": lid, "cluster": cluster, "parent": parent, "status": status}


def test_a_reattached_label_goes_beside_its_nearest_relative_not_under_it():
    """The label nearest to an intent's requests is usually a sibling intent: the moved label joins it
    under the same parent; only a relative that is a category (ACTIVE children) takes it under itself."""
    from review.loop.generators.lifecycle import placement

    labels = {
        "L1": _label("L1", "home"),  # a category …
        "L2": _label("L2", "home", "L1"),  # … with two intents
        "L3": _label("L3", "home", "L1"),
        "L4": _label("L4", "home"),  # an intent at the cluster's root
        "L9": _label("L9", "work"),  # the label that moves
    }
    # nearest: the intent L2 → beside it, under L1
    assert placement(labels, "home", {"L2": 0.8, "L1": 0.6, "L4": 0.5}, "L9", 0.5) == ("L1", "L2", 0.8)
    # nearest: the root intent L4 → at the root, beside it
    assert placement(labels, "home", {"L4": 0.7, "L2": 0.6}, "L9", 0.5) == (None, "L4", 0.7)
    # nearest: the category L1 → under it
    assert placement(labels, "home", {"L1": 0.9, "L2": 0.6}, "L9", 0.5) == ("L1", "L1", 0.9)
    # no label close enough, or none ACTIVE in the cluster → the cluster's root, no relative
    assert placement(labels, "home", {"L2": 0.4}, "L9", 0.5) == (None, None, 0.0)
    assert placement(labels, "office", {"L2": 0.9}, "L9", 0.5) == (None, None, 0.0)
    # a category whose only children are retired is an intent again
    retired = {
        **labels,
        "L2": _label("L2", "home", "L1", "DEPRECATED"),
        "L3": _label("L3", "home", "L1", "DEPRECATED"),
    }
    assert placement(retired, "home", {"L1": 0.9}, "L9", 0.5) == (None, "L1", 0.9)
