"""Fixtures of the review-queue tests: projects with a published release and realistic proposals.

Proposals are stored directly (as the offline loop stores them after binning) with changesets in the
operation format of ``review/changeset.py``: a SPLIT and a MERGE against the demo pack ("Acme Cloud
support"), and small EDGE_WEIGHT / EDGE_ADD changes against the tiny test pack.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEMO_PACK = ROOT / "packs" / "demo" / "pack.yaml"
SMALL_PACK = ROOT / "tests" / "taxonomy" / "fixtures" / "small_pack.yaml"

SPLIT_PARENT = "N-billing-invoice-download"
SPLIT_PDF = "N-billing-invoice-download-pdf"
SPLIT_BULK = "N-billing-invoice-bulk-export"
MERGE_SURVIVOR = "N-deploy-tls-info"
MERGE_DUPLICATE = "N-deploy-tls-faq"
MERGE_AB = f"{MERGE_SURVIVOR}.m1"  # the node a merge of the two creates


def split_changeset() -> list[dict[str, Any]]:
    """Split "Download an invoice" into one-invoice PDFs and bulk exports, with a SHADOW child label."""
    from review.changeset import (
        AliasSet,
        EdgeAdd,
        EdgeRemove,
        LabelAdd,
        NodeAdd,
        NodeStatusSet,
        changeset_dump,
    )

    reason = "serves two intents: one invoice PDF vs. many invoices at once"
    return changeset_dump(
        [
            LabelAdd(
                ref="bulk",
                name="Bulk invoice export",
                cluster="billing",
                parent="L00002",
                description="Exporting many invoices at once (a year, a quarter) for accounting.",
                examples=("our finance team needs all 2023 invoices in one go",),
            ),
            NodeAdd(
                node_id=SPLIT_PDF,
                type="Info",
                title="Download one invoice as PDF",
                chunk="Each invoice has a PDF link in Billing › Invoices (Owners, Admins and Billing members).",
                labels=("L00002",),
                clusters=("billing",),
            ),
            NodeAdd(
                node_id=SPLIT_BULK,
                type="Info",
                title="Export invoices in bulk",
                chunk="Billing › Invoices › Export downloads every invoice of a period as one ZIP of PDFs.",
                labels=("L00002", "new:bulk"),
                clusters=("billing",),
            ),
            EdgeAdd("N-billing-triage", SPLIT_PDF, "LEADS_TO", 0.7),
            EdgeAdd("N-billing-triage", SPLIT_BULK, "LEADS_TO", 0.5),
            EdgeAdd("N-billing-shortcut-invoices", SPLIT_PDF, "SHORTCUT_TO", 0.9),
            EdgeAdd(
                SPLIT_BULK, "N-billing-invoice-archive", "ELABORATES", 0.6, "invoices older than 24 months"
            ),
            EdgeAdd(SPLIT_PDF, "N-billing-read-billing-profile", "READS_MEMORY", 0.4),
            EdgeRemove("N-billing-triage", SPLIT_PARENT, "LEADS_TO", reason),
            EdgeRemove("N-billing-shortcut-invoices", SPLIT_PARENT, "SHORTCUT_TO", reason),
            NodeStatusSet(SPLIT_PARENT, "DEPRECATED", reason),
            AliasSet(SPLIT_PARENT, (SPLIT_PDF, SPLIT_BULK), reason),
        ]
    )


def merge_changeset(project: Any) -> list[dict[str, Any]]:
    """Merge "How HTTPS certificates are managed" (A) and the FAQ "The certificate is still pending" (B)
    into a new node AB, as the loop's merge generator proposes it (A and B DEPRECATED, aliased to AB)."""
    from ontology.store import get_graph_store
    from review.changeset import changeset_dump
    from review.loop.generators.merge import merge_changeset as merge_ops

    graph = get_graph_store().export_graph(project.pk)
    reason = "duplicate: same questions, same label, 0.91 cosine"
    return changeset_dump(merge_ops(graph, MERGE_SURVIVOR, MERGE_DUPLICATE, reason=reason))


def replay_metrics(*, confirmed: float, uncertain: float, lowconf: float) -> dict[str, Any]:
    """A replay report in the shape ``review.loop.replay.ReplayReport.as_json`` stores (before/after shares,
    gains with the silence penalty, the geDIG gauge)."""
    before = {
        "confirmed": 0.42,
        "uncertain": 0.38,
        "low_confidence": 0.12,
        "action_success": 0.05,
        "action_failure": 0.01,
        "margin": 0.31,
        "ambiguity": 0.22,
        "path_length": 2.4,
    }
    deltas = {
        "confirmed": confirmed,
        "uncertain": uncertain,
        "low_confidence": -lowconf,
        "margin": 0.09,
        "ambiguity": -0.05,
    }
    after = {k: round(v + deltas.get(k, 0.0), 6) for k, v in before.items()}
    penalty = round(0.5 * max(0.0, uncertain - confirmed), 6)
    gain_info = round(1.0 * confirmed + 0.4 * uncertain + 0.8 * lowconf - penalty, 6)
    return {
        "sample": {"zone": 48, "control": 72},
        "before": before,
        "after": after,
        "gains": {
            **{f"delta_{k}": round(after[k] - before[k], 6) for k in before},
            "penalty_silent": penalty,
            "gain_info": gain_info,
            "gain_action": 0.0,
            "gain_routing": 0.04,
            "complexity": 0.12,
            "violations_taxonomy": 0.0,
            "violations_security": 0.0,
        },
        "gedig": {
            "edit_cost": 9.0,
            "delta_epc_norm": 0.31,
            "delta_h_norm": -0.22,
            "delta_sp_rel": {"1": -0.08},
            "g0": 0.18,
            "g_by_hop": {"1": -0.12},
            "gmin": -0.12,
            "b": -0.12,
            "F": -0.12,
        },
        "gedig_gate": {
            "theta_ag": 0.3,
            "theta_dg": -0.05,
            "source": "kind history",
            "n_history": 42,
            "g0": 0.18,
            "b": -0.12,
            "ag": False,
            "dg": True,
            "decided": "not consulted",
        },
        "violations": {"taxonomy": [], "security": []},
        "score": 0.41,
        "silence_dominated": False,
        "confirmed_gain": confirmed,
        "zone_coverage": 0.35,
        "zone_interactions": 64,
        "changed_targets": 31,
        "estimates": {},
        "seconds": 3.2,
    }


@pytest.fixture
def make_proposal() -> Callable[..., Any]:
    """Store a proposal as the loop does after binning (MID_CONF → PENDING_REVIEW by default)."""
    from review.changeset import changeset_fingerprint, changeset_load, changeset_targets
    from review.models import ConfidenceBin, Proposal, ProposalStatus

    def make(
        project: Any, *, changeset: list[dict[str, Any]], kind: str = "EDGE_WEIGHT", **fields: Any
    ) -> Any:
        ops = changeset_load(changeset)
        age_days = fields.pop("age_days", 0)
        values = {
            "status": ProposalStatus.PENDING_REVIEW,
            "confidence_bin": ConfidenceBin.MID_CONF,
            "title": f"{kind.title()} proposal",
            "summary": "",
            "fingerprint": changeset_fingerprint(kind, ops),
            "target_keys": changeset_targets(ops),
            "score": 0.4,
            "evidence": {"interactions": 64, "examples": ["where is my invoice pdf"]},
            "generator": {"name": "test", "version": 1},
            "replay": {},
            **fields,
        }
        proposal = Proposal.objects.create(project=project, kind=kind, changeset=changeset, **values)
        if age_days:
            Proposal.objects.filter(pk=proposal.pk).update(
                created_at=proposal.created_at - timedelta(days=age_days)
            )
            proposal.refresh_from_db()
        return proposal

    return make


def weight_changeset(weight: float = 0.85) -> list[dict[str, Any]]:
    """Tiny pack: reinforce N-invoice-download → N-resend-invoice (LEADS_TO, 0.7)."""
    from review.changeset import EdgeSetWeight, changeset_dump

    return changeset_dump([EdgeSetWeight("N-invoice-download", "N-resend-invoice", "LEADS_TO", weight, 0.7)])


def member(username: str, role: str, project: Any, *, password: str | None = None) -> Any:
    """A person with a platform role in ``project``; without a password (tests log in with force_login,
    which skips the deliberately slow password hashing) unless the browser signs in through the form."""
    from django.contrib.auth import get_user_model

    from projects.services import membership_set

    person, created = get_user_model().objects.get_or_create(username=username)
    if created:
        if password:
            person.set_password(password)
        else:
            person.set_unusable_password()
        person.save()
    membership_set(project=project, user=person, role=role)
    return person


PEOPLE = (
    ("rob-reviewer", "reviewer"),
    ("rita-reviewer", "reviewer"),
    ("erin-expert", "expert"),
    ("ada-admin", "admin"),
)


def published_pack(path: Path) -> Any:
    from ontology.releases import release_publish
    from taxonomy.packs import pack_import, pack_read

    project = pack_import(pack_read(path)).project
    for username, role in PEOPLE:
        member(username, role, project)
    release_publish(project=project, actor=None)
    return project


def _module_project(path: Path, django_db_blocker: Any) -> Iterator[int]:
    """Import and publish once per test module (committed); each test then runs in a transaction that
    is rolled back, and the project and its people are deleted when the module is done."""
    from django.contrib.auth import get_user_model

    from projects.models import Project

    with django_db_blocker.unblock():
        project = published_pack(path)
    yield project.pk
    with django_db_blocker.unblock():
        from arg_platform.models import AuditEvent
        from taxonomy.models import Label, Role

        AuditEvent.objects.filter(project_id=project.pk).delete()  # PROTECTed, like roles and labels
        Role.objects.filter(project_id=project.pk).delete()  # roles and labels are PROTECTed references
        while Label.objects.filter(project_id=project.pk).exists():
            Label.objects.filter(project_id=project.pk, children__isnull=True).delete()
        Project.objects.filter(pk=project.pk).delete()
        get_user_model().objects.filter(username__in=[name for name, _ in PEOPLE]).delete()


@pytest.fixture(scope="module")
def tiny_pk(django_db_setup: Any, django_db_blocker: Any) -> Iterator[int]:
    yield from _module_project(SMALL_PACK, django_db_blocker)


@pytest.fixture(scope="module")
def demo_pk(django_db_setup: Any, django_db_blocker: Any) -> Iterator[int]:
    yield from _module_project(DEMO_PACK, django_db_blocker)


def _fresh(pk: int) -> Any:
    from ontology.snapshot_registry import registry
    from projects.models import Project

    registry.invalidate(pk)  # a release published by an earlier (rolled back) test is not served
    return Project.objects.get(pk=pk)


@pytest.fixture
def tiny(tiny_pk: int, db: Any) -> Iterator[Any]:
    """Project "tiny" (small pack) with release v1 and its people: two reviewers, an expert, an admin."""
    yield _fresh(tiny_pk)
    _fresh(tiny_pk)


@pytest.fixture
def demo(demo_pk: int, db: Any) -> Iterator[Any]:
    """The demo pack ("acme-support") with release v1 and the same people."""
    yield _fresh(demo_pk)
    _fresh(demo_pk)


def user(username: str) -> Any:
    from django.contrib.auth import get_user_model

    return get_user_model().objects.get(username=username)
