"""The user's answer to a "Do you mean X or Y?" (ARG §2.9.5, minimal disambiguation).

Terms:

* an **option** is one branch a request offered the user: an ACTIVE label of its release that the
  caller's policy admits (``label_id``, ``name``). The asking request stores its options in its log
  row, ``outcome_details["disambiguate"]["options"]`` — a CLARIFY of the controlled fallback
  (``inference.steps.fallback``) and an Info answer with VECTOR_AMBIGUITY (``inference.steps.info``) alike;
* a **choice** is what the client sends back: an option's LabelID or its name (case and surrounding
  spaces ignored). Anything else is refused with the options listed, so a typo never records evidence
  for a label nobody offered;
* a **continuation** is the ``POST /api/v1/infer`` that carries ``"disambiguation": {"request_id": …,
  "choice": …}``: the Context Weaver takes the chosen label as ``L_final`` (``weaver.weave(chosen=…)``)
  and the request is answered for that branch. The policy still decides first: its pre-check runs as
  for any request, and its label gate still applies to the chosen label (a caller whose role may not
  use it is refocused). The view records the choice as ``disambiguation`` feedback on the asking
  request, once (``feedback.feedback_record``).

``POST /api/v1/feedback`` with ``kind="disambiguation"`` checks its choice the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from arg_platform.errors import RuleViolation, Violation

OPTIONS_ASKED = 2  # "X or Y": fewer branches is no question
OPTIONS_MAX = 3  # "X, Y or Z": what a vague prompt is offered at most
DETAILS_KEY = "disambiguate"  # outcome_details key of the options a request offered
LEGACY_DETAILS_KEY = "clarify"  # the same, in log rows written before the key was shared


@dataclass(frozen=True)
class Option:
    """One branch offered to the user."""

    label_id: str
    name: str

    def as_json(self) -> dict[str, str]:
        return {"label_id": self.label_id, "name": self.name}


@dataclass(frozen=True)
class Clarified:
    """A continuation's resolved choice: the asking request and the option the user took."""

    request_id: str
    option: Option


def offerable_options(
    ranked: Iterable[str],
    name_of: Callable[[str], str | None],
    decision: Any,
    *,
    at_most: int = OPTIONS_ASKED,
) -> list[Option]:
    """The options to ask about: the first ``at_most`` labels of ``ranked`` (LabelIDs, best first)
    that may be offered — ``name_of`` names an ACTIVE label and returns ``None`` for any other (a
    SHADOW label is still under evaluation), the caller's policy admits it, and its name is not one
    already offered. Fewer than ``OPTIONS_ASKED``: none (``[]``)."""
    options: list[Option] = []
    for label_id in ranked:
        name = name_of(label_id)
        if (
            not name
            or not decision.constraints.admits_label(label_id)
            or any(option.name == name for option in options)
        ):
            continue
        options.append(Option(label_id, name))
        if len(options) == at_most:
            break
    return options if len(options) >= OPTIONS_ASKED else []


def question(options: Sequence[Option]) -> str:
    """ "Do you mean X or Y?" / "Do you mean X, Y or Z?" over the options' names."""
    names = [option.name for option in options]
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
    return f"Do you mean {listed}?"


def options_details(options: Sequence[Option]) -> dict[str, Any]:
    """What an asking request stores in its ``outcome_details`` (see the module docstring)."""
    return {DETAILS_KEY: {"options": [option.as_json() for option in options]}}


def options_offered(outcome_details: dict[str, Any] | None) -> list[Option]:
    """The options a logged request offered (empty when it asked no "X or Y?")."""
    details = outcome_details or {}
    stored = details.get(DETAILS_KEY) or details.get(LEGACY_DETAILS_KEY) or {}
    options = []
    for entry in stored.get("options") or ():
        if isinstance(entry, dict) and entry.get("label_id"):
            options.append(Option(str(entry["label_id"]), str(entry.get("name") or entry["label_id"])))
    return options


def option_chosen(options: Sequence[Option], choice: str) -> Option | None:
    """The option ``choice`` names, by LabelID (exact) or by name (case-insensitive), else ``None``."""
    text = choice.strip()
    for option in options:
        if text == option.label_id:
            return option
    folded = text.casefold()
    for option in options:
        if folded == option.name.strip().casefold():
            return option
    return None


def chosen_option(
    request_id: str,
    outcome_details: dict[str, Any] | None,
    choice: str,
    *,
    question: tuple[str, str],
    answer: tuple[str, str],
) -> Option:
    """The option ``choice`` names among those the logged request ``request_id`` offered. Raises
    ``RuleViolation`` (400) with ``question`` = (rule, field) when that request asked no "X or Y?", and
    with ``answer`` = (rule, field), the options listed, when the choice names none of them."""
    options = options_offered(outcome_details)
    if not options:
        raise RuleViolation(
            Violation(
                question[0], f'request {request_id} asked no "Do you mean X or Y?" question', question[1]
            )
        )
    option = option_chosen(options, choice)
    if option is None:
        listed = ", ".join(f"{o.name} ({o.label_id})" for o in options)
        raise RuleViolation(
            Violation(answer[0], f"{choice.strip()!r} is not one of the options offered: {listed}", answer[1])
        )
    return option


def clarified_request(*, project_id: int, request_id: str, choice: str) -> Clarified:
    """Resolve a continuation's ``disambiguation`` against the asking request's log row.

    Raises ``RuleViolation`` (400) on field ``disambiguation.request_id`` when the request is not
    one of this project's or asked no "X or Y?", and on ``disambiguation.choice`` when the choice
    names none of its options."""
    from inference.models import InferenceLog

    details = (
        InferenceLog.objects.filter(project_id=project_id, request_id=request_id)
        .values_list("outcome_details", flat=True)
        .first()
    )
    if details is None:
        raise RuleViolation(
            Violation(
                "request.disambiguation",
                f"request {request_id} is not a request of this project",
                "disambiguation.request_id",
            )
        )
    option = chosen_option(
        request_id,
        details,
        choice,
        question=("request.disambiguation", "disambiguation.request_id"),
        answer=("request.disambiguation", "disambiguation.choice"),
    )
    return Clarified(request_id=request_id, option=option)
