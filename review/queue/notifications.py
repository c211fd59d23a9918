"""Telling reviewers that something awaits them: the in-app badge and optional email / webhook.

* The **badge** next to "Review" in a project's navigation counts what awaits a reviewer there:
  proposals awaiting review, sampled silent successes to label, and UNSURE memory merges to resolve.
  People who do not review (experts) see no badge.
* :func:`review_pending_notify` runs when the offline loop announces, after binning, with the proposals it just
  sent to review. It emails the project's reviewers when ``ARG_REVIEW_EMAIL`` is on (through Django's
  email backend) and POSTs a JSON summary to ``ARG_REVIEW_WEBHOOK_URL`` when set (through
  ``arg_platform.outbound``, signed with the project's webhook secret like action webhooks). A notification is a
  courtesy: a failure is logged and reported in the result, never raised, so it cannot fail a night.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.mail import send_mail
from django.urls import reverse

from arg_platform import outbound
from memory.selectors import registry_unsure_list
from projects.access import Capability
from projects.models import Project
from projects.webhook_secrets import SIGNATURE_HEADER, project_webhook_secret, webhook_signature
from review.models import Proposal
from review.queue.selectors import review_pending_count, reviewer_list, silent_sample_count

logger = logging.getLogger(__name__)
WEBHOOK_TIMEOUT_S = 5
WEBHOOK_MAX_REPLY = 64_000  # the reply is not used; a receiver answering more is misbehaving
EMAIL_PROPOSALS = 20  # proposals listed in one email (the rest are counted)


def review_inbox_counts(*, project: Project) -> dict[str, int]:
    """What awaits a reviewer in ``project``, per review list."""
    return {
        "proposals": review_pending_count(project=project),
        "silent": silent_sample_count(project=project),
        "merges": registry_unsure_list(project=project).count(),
    }


def review_badge_count(*, access: Any) -> int:
    """The nav badge: everything awaiting review, for people who review (0 for the others)."""
    if not access.can(Capability.REVIEW):
        return 0
    return sum(review_inbox_counts(project=access.project).values())


@dataclass(frozen=True)
class NotifyResult:
    """What :func:`review_pending_notify` did."""

    proposals: int
    emailed: int = 0
    webhook_status: int | None = None
    error: str = ""


def _payload(project: Project, proposals: list[Proposal]) -> dict[str, Any]:
    return {
        "event": "review.pending",
        "project": project.slug,
        "pending_total": review_pending_count(project=project),
        "queue_url": reverse("review:queue", args=[project.slug]),
        "proposals": [
            {
                "id": p.pk,
                "kind": p.kind,
                "title": p.title,
                "score": p.score,
                "confidence_bin": p.confidence_bin,
                "status": p.status,
                "url": reverse("review:proposal_detail", args=[project.slug, p.pk]),
            }
            for p in proposals
        ],
    }


def _email(project: Project, payload: dict[str, Any]) -> int:
    recipients = sorted({u.email for u in reviewer_list(project=project) if u.email})
    if not recipients:
        return 0
    count = len(payload["proposals"])
    lines = [
        f"{count} new proposal{'s' if count != 1 else ''} await review in {project.name} "
        f"({payload['pending_total']} in the queue):",
        "",
        *[
            f"  #{p['id']} {p['kind']} — {p['title']} (score {p['score'] if p['score'] is not None else '—'})"
            for p in payload["proposals"][:EMAIL_PROPOSALS]
        ],
    ]
    if count > EMAIL_PROPOSALS:
        lines.append(f"  … and {count - EMAIL_PROPOSALS} more")
    lines += ["", f"Open the queue: {payload['queue_url']}"]
    send_mail(
        subject=f"[ARG] {count} proposal{'s' if count != 1 else ''} to review in {project.name}",
        message="\n".join(lines),
        from_email=None,
        recipient_list=recipients,
    )
    return len(recipients)


def _webhook(url: str, project: Project, payload: dict[str, Any]) -> int:
    data = json.dumps(payload).encode("utf-8")
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "arg-platform/review",
        SIGNATURE_HEADER: webhook_signature(secret=project_webhook_secret(project=project), body=data),
    }
    response = outbound.request(
        "POST", url, body=data, headers=headers, timeout_s=WEBHOOK_TIMEOUT_S, max_bytes=WEBHOOK_MAX_REPLY
    )
    return response.status


def on_proposals_sent_to_review(
    sender: Any, *, project: Project, proposals: Iterable[Proposal], **_: Any
) -> None:
    """Receiver of ``review.loop.run.proposals_sent_to_review``."""
    review_pending_notify(project=project, proposals=proposals)


def review_pending_notify(*, project: Project, proposals: Iterable[Proposal]) -> NotifyResult:
    """Announce ``proposals`` (just sent to review) by email and/or webhook, as configured."""
    proposals = list(proposals)
    if not proposals:
        return NotifyResult(proposals=0)
    payload = _payload(project, proposals)
    emailed, status, errors = 0, None, []
    if getattr(settings, "REVIEW_EMAIL", False):
        try:
            emailed = _email(project, payload)
        except Exception as exc:  # noqa: BLE001 — any mail failure is reported, never raised
            logger.warning("review email for %s failed: %s", project.slug, exc)
            errors.append(f"email: {exc}")
    url = getattr(settings, "REVIEW_WEBHOOK_URL", "")
    if url:
        try:
            status = _webhook(url, project, payload)
            if not 200 <= status < 300:
                errors.append(f"webhook answered {status}")
        except outbound.OutboundError as exc:
            logger.warning("review webhook for %s failed: %s", project.slug, exc)
            errors.append(f"webhook: {exc}")
    return NotifyResult(
        proposals=len(proposals), emailed=emailed, webhook_status=status, error="; ".join(errors)
    )
