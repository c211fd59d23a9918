"""The project operator's merge bar: how close to identical two statements must be for the Info
Registry to merge them without a reviewer (``memory.models.MergeBar``, ``memory.merge_bar``)."""

from __future__ import annotations

from django.db import transaction

from arg_platform.audit import Actor, actor_user, audit_record
from arg_platform.errors import RuleViolation, Violation
from projects.models import Project

from ..merge_bar import MAX_SLACK
from ..models import MergeBar
from ..selectors import registry_params


@transaction.atomic
def merge_bar_set(*, project: Project, identity_slack: int, actor: Actor, reason: str = "") -> MergeBar:
    """Set ``project``'s merge bar to ``identity_slack`` (0…``MAX_SLACK`` unexplained words) and record
    the change, old and new value, in the audit trail. Later writes and the nightly consolidation of
    the project compare with it; facts already merged or staged stay as they are. Raises
    ``RuleViolation`` (rule ``memory.merge_bar``, field ``identity_slack``) and writes nothing when the
    value is out of range."""
    if isinstance(identity_slack, bool) or not isinstance(identity_slack, int):
        raise RuleViolation(
            Violation("memory.merge_bar", "the merge bar is a whole number", "identity_slack")
        )
    if not 0 <= identity_slack <= MAX_SLACK:
        raise RuleViolation(
            Violation(
                "memory.merge_bar", f"the merge bar is between 0 and {MAX_SLACK} words", "identity_slack"
            )
        )
    # the project row locked: two operators saving at once are recorded one after the other
    Project.objects.select_for_update().filter(pk=project.pk).first()
    before = registry_params(project=project).identity_slack
    row, _ = MergeBar.objects.update_or_create(
        project=project, defaults={"identity_slack": identity_slack, "updated_by": actor_user(actor)}
    )
    audit_record(
        project=project,
        actor=actor,
        action="update",
        object_type="merge_bar",
        object_key=project.slug,
        before={"identity_slack": before},
        after={"identity_slack": identity_slack},
        reason=reason,
    )
    return row
