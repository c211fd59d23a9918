"""The ask threshold in force in a release, and the curator's override of it.

Below the **ask threshold** a request's confidence is too low to answer: it is asked about (a CLARIFY
with two or three options, ``inference.steps.landing``). Terms:

* the **calibrated** threshold is the one publication sets on held-out label examples
  (``inference.learning.calibration``, the release document ``low_confidence``), stored with its
  **curve**: per threshold, the coverage and precision of the held-out in-scope examples and, when the
  release has ``oos`` examples, the OOS recall;
* the **curator's** threshold is one an expert or admin sets for the project's draft
  (``ask_threshold_set``, an ``AskThresholdOverride`` row; empty means "calibrated"). Like any draft
  change it reaches clients with the next publication: every release frozen afterwards carries it as the
  document ``ask_override`` (``{"threshold": value}``, a release context hook), so a release records the
  threshold it uses and rolling back restores the older one. Each change is an audit event
  (``object_type="ask_threshold"``, before / after value);
* the **default** (``DEFAULT_THRESHOLD``) applies to a release that was neither calibrated (too small or
  too large to cross-validate at publication) nor overridden.

``threshold_in_force`` reads a release's documents: ``{"value", "source", "calibrated", "curve"}`` with
``source`` one of ``calibrated``, ``curator``, ``default`` — what the landing applies, the release page
draws and the API shows (``Release.ask_threshold`` keeps a copy on the release row).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction

from arg_platform.audit import Actor, actor_user, audit_record
from arg_platform.errors import RuleViolation, Violation
from projects.models import Project
from taxonomy.services import knowledge_changed

from .models import AskThresholdOverride

CALIBRATION_DOCUMENT = "low_confidence"  # inference.learning.calibration.DOCUMENT
OVERRIDE_DOCUMENT = "ask_override"
DEFAULT_THRESHOLD = 0.2  # the landing's platform safety net (inference.steps.landing.DEFAULT_MIN_CONFIDENCE)
FIELD = "ask_threshold"


class Source:
    CALIBRATED = "calibrated"
    CURATOR = "curator"
    DEFAULT = "default"


def threshold_in_force(documents: Mapping[str, Any]) -> dict[str, Any]:
    """The ask threshold a release with these documents applies, where it comes from, the calibrated
    value (``None`` when not calibrated) and the held-out curve (``[]`` when none)."""
    calibration = documents.get(CALIBRATION_DOCUMENT) or {}
    calibrated = calibration.get("threshold") if calibration.get("method") == "cross_validation" else None
    override = (documents.get(OVERRIDE_DOCUMENT) or {}).get("threshold")
    if override is not None:
        value, source = float(override), Source.CURATOR
    elif calibrated is not None:
        value, source = float(calibrated), Source.CALIBRATED
    else:
        value, source = float(calibration.get("threshold", DEFAULT_THRESHOLD)), Source.DEFAULT
    return {
        "value": value,
        "source": source,
        "calibrated": float(calibrated) if calibrated is not None else None,
        "curve": list(calibration.get("curve") or []),
    }


def ask_override_document(documents: dict[str, Any]) -> dict[str, float] | None:
    """The release context hook (``ontology.releases.CONTEXT_HOOKS``): the project's override as the
    ``ask_override`` document, or ``None`` (calibrated: the release gets no such document)."""
    slug = (documents.get("project") or {}).get("slug")
    if not slug:
        return None
    value = AskThresholdOverride.objects.filter(project__slug=slug).values_list("value", flat=True).first()
    return None if value is None else {"threshold": float(value)}


def ask_override_get(*, project: Project) -> float | None:
    """The draft's override (``None``: the calibrated threshold applies)."""
    return AskThresholdOverride.objects.filter(project=project).values_list("value", flat=True).first()


def ask_threshold_validate(value: Any) -> float | None:
    """``None`` for empty, else a number in [0, 1); a ``RuleViolation`` on ``ask_threshold`` otherwise."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if not 0.0 <= number < 1.0:  # NaN fails both
        raise RuleViolation(
            Violation(
                "ask_threshold.range",
                "the ask threshold is a confidence from 0 up to (not including) 1, or empty for the "
                "calibrated one",
                FIELD,
            )
        )
    return round(number, 4)


def ask_threshold_set(*, project: Project, actor: Actor, value: Any) -> float | None:
    """Set (a number in [0, 1)) or clear (``None`` / empty: calibrated) the draft's ask threshold; it
    takes effect with the next publication. One transaction with its audit event and the draft's
    revision bump; setting the value it already has changes nothing. Returns the new value."""
    new = ask_threshold_validate(value)
    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).first()
        old = ask_override_get(project=project)
        if old == new:
            return new
        if new is None:
            AskThresholdOverride.objects.filter(project=project).delete()
        else:
            AskThresholdOverride.objects.update_or_create(
                project=project, defaults={"value": new, "updated_by": actor_user(actor)}
            )
        knowledge_changed(project=project)
        audit_record(
            project=project,
            actor=actor,
            action="update",
            object_type="ask_threshold",
            object_key=project.slug,
            before={"value": old, "source": Source.CURATOR if old is not None else Source.CALIBRATED},
            after={"value": new, "source": Source.CURATOR if new is not None else Source.CALIBRATED},
        )
    return new
