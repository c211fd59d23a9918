"""Forms of the curation UI.

They check the *shape* of what a person typed (types, required fields, one-item-per-line lists);
the services and the deterministic validator judge the *rules*. A refusal from a service comes back
as a ``RuleViolation`` that ``add_violations`` puts next to the field it names, keeping the rule
name as the error code so templates can show it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from arg_platform.errors import RuleViolation
from arg_platform.patterns import MAX_PATTERN_CHARS
from arg_platform.vocabulary import NODE_TYPES
from projects.models import Project

from .models import Label, LabelStatus, MemoryScope, ResponseStyle
from .selectors import cluster_list, label_list, policy_list, typology_list
from .term_guard import TermConflict, TermConflicts

WEIGHTS = ("alpha", "beta", "gamma", "delta", "epsilon")
WEIGHT_HELP = {
    "alpha": "α · structural score (S_struct)",
    "beta": "β · semantic score (S_sem)",
    "gamma": "γ · taxonomy score (S_taxo)",
    "delta": "δ · typology score (S_typology)",
    "epsilon": "ε · memory score (S_memory)",
}
NODE_TYPES_HELP = "One node type per line; known types: " + ", ".join(sorted(NODE_TYPES)) + "."
SENSITIVE_LINE = re.compile(r"^(?P<topic>[^:]+):(?P<terms>.*?)(?:->\s*(?P<action>[A-Za-z_]+))?\s*$")


def set_choices(field: forms.Field, choices: Iterable[tuple[Any, Any]]) -> None:
    """Give a form's ``ChoiceField`` its choices (``Form.fields`` types its values as a plain ``Field``)."""
    assert isinstance(field, forms.ChoiceField)
    field.choices = choices


class ViolationFormMixin:
    """Puts a service's ``RuleViolation`` on the form, next to the field each violation names.

    ``violation_fields`` maps a service field name to a form field; a violation whose field is not
    on the form (or is hidden) becomes a form-level error. The rule name is the error code.
    """

    violation_fields: dict[str, str] = {}

    def add_violations(self, exc: RuleViolation) -> None:
        form: Any = self
        for violation in exc.violations:
            target: str | None = self.violation_fields.get(violation.field, violation.field)
            if target not in form.fields or form.fields[target].widget.is_hidden:
                target = None
            form.add_error(target, ValidationError(violation.message, code=violation.rule))


class LinesField(forms.CharField):
    """A list of strings edited as a textarea, one item per line (blank lines ignored)."""

    def __init__(self, *, rows: int = 4, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": rows, "spellcheck": "false"}))
        super().__init__(**kwargs)

    def to_python(self, value: Any) -> Any:
        text = super().to_python(value) or ""
        return [line.strip() for line in text.splitlines() if line.strip()]

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return "\n".join(self.format_item(item) for item in value)
        return value

    def format_item(self, item: Any) -> str:
        return str(item)


class SensitiveTopicsField(LinesField):
    """Sensitive topics, one per line: ``topic: term1, term2 -> REFOCUS`` (the action defaults to REFOCUS)."""

    def to_python(self, value: Any) -> Any:
        topics, errors = [], []
        for number, line in enumerate(super().to_python(value), start=1):
            match = SENSITIVE_LINE.match(line)
            if match is None or not match["topic"].strip():
                errors.append(
                    ValidationError(f"line {number}: write 'topic: term1, term2 -> ACTION'", code="format")
                )
                continue
            topics.append(
                {
                    "topic": match["topic"].strip(),
                    "terms": [term.strip() for term in match["terms"].split(",") if term.strip()],
                    "action": (match["action"] or "REFOCUS").upper(),
                }
            )
        if errors:
            raise ValidationError(errors)
        return topics

    def format_item(self, item: Any) -> str:
        if isinstance(item, dict):
            terms = ", ".join(item.get("terms", []))
            return f"{item.get('topic', '')}: {terms} -> {item.get('action', 'REFOCUS')}"
        return str(item)


class MappingLinesField(LinesField):
    """A mapping of names to lists, one entry per line: ``channels: chat, web``."""

    def to_python(self, value: Any) -> Any:
        mapping: dict[str, list[str]] = {}
        errors = []
        for number, line in enumerate(super().to_python(value), start=1):
            name, sep, items = line.partition(":")
            if not sep or not name.strip():
                errors.append(ValidationError(f"line {number}: write 'name: value1, value2'", code="format"))
                continue
            mapping[name.strip()] = [item.strip() for item in items.split(",") if item.strip()]
        if errors:
            raise ValidationError(errors)
        return mapping

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, dict):
            return "\n".join(f"{name}: {', '.join(map(str, items))}" for name, items in value.items())
        return value


class TextMappingField(forms.CharField):
    """A mapping of keys to one text each, one entry per line: ``fr: Je ne parle que …``."""

    def __init__(self, *, rows: int = 3, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": rows}))
        super().__init__(**kwargs)

    def to_python(self, value: Any) -> Any:
        mapping: dict[str, str] = {}
        errors = []
        lines = [line.strip() for line in (super().to_python(value) or "").splitlines() if line.strip()]
        for number, line in enumerate(lines, start=1):
            key, sep, text = line.partition(":")
            if not sep or not key.strip() or not text.strip():
                errors.append(ValidationError(f"line {number}: write 'key: text'", code="format"))
                continue
            mapping[key.strip()] = text.strip()
        if errors:
            raise ValidationError(errors)
        return mapping

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, dict):
            return "\n".join(f"{key}: {text}" for key, text in value.items())
        return value


def _label_choices(labels: Iterable[Label], *, blank: str | None = None) -> list[Any]:
    """Labels grouped by cluster for a ``<select>`` (values are LabelIDs)."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for label in labels:
        shown = f"{label.path or label.name} ({label.label_id})"
        if label.status != LabelStatus.ACTIVE:
            shown += f" · {label.status.lower()}"
        groups.setdefault(label.cluster.name, []).append((label.label_id, shown))
    choices: list[Any] = [("", blank)] if blank is not None else []
    choices.extend((cluster, options) for cluster, options in sorted(groups.items()))
    return choices


# --- taxonomy -------------------------------------------------------------------------------------


class ClusterForm(ViolationFormMixin, forms.Form):
    key = forms.CharField(
        help_text="Stable key: lowercase letters, digits, '_' and '-'. It never changes.",
        widget=forms.TextInput(attrs={"spellcheck": "false", "autocomplete": "off"}),
    )
    name = forms.CharField()
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))


class LabelCreateForm(ViolationFormMixin, forms.Form):
    """A new label: a root of a cluster, or a child of a parent label (given by LabelID)."""

    name = forms.CharField()
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    status = forms.ChoiceField(
        choices=[(s, s.title()) for s in (LabelStatus.ACTIVE, LabelStatus.SHADOW, LabelStatus.CANDIDATE)],
        initial=LabelStatus.ACTIVE,
        help_text="SHADOW labels are evaluated on live traffic without routing; "
        "CANDIDATE labels wait for review.",
    )
    cluster = forms.CharField(required=False, label="Cluster")
    parent = forms.CharField(required=False, label="Parent label")

    def __init__(self, *args: Any, project: Project, inline: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if inline:
            self.fields["cluster"].widget = forms.HiddenInput()
            self.fields["parent"].widget = forms.HiddenInput()
            self.fields["status"].help_text = ""
        else:
            self.fields["cluster"].widget = forms.Select(
                choices=[
                    ("", "— choose a cluster —"),
                    *[(c.key, c.name) for c in cluster_list(project=project)],
                ]
            )
            self.fields["parent"].widget = forms.Select(
                choices=_label_choices(
                    label_list(project=project).exclude(status=LabelStatus.DEPRECATED),
                    blank="— none: a root label of the cluster —",
                )
            )
            self.fields["parent"].help_text = "A child always lives in its parent's cluster."


class LabelEditForm(ViolationFormMixin, forms.Form):
    prefix = "edit"

    name = forms.CharField()
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 4}))
    reason = forms.CharField(required=False, label="Why (for the history)")


class LabelMoveForm(ViolationFormMixin, forms.Form):
    """Move a label (with its subtree) under another parent, or to the root of a cluster."""

    prefix = "move"

    target = forms.ChoiceField(label="New place")
    reason = forms.CharField(required=False, label="Why (for the history)")

    violation_fields = {"parent": "target", "cluster": "target", "name": "target"}

    def __init__(self, *args: Any, label: Label, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        subtree = _subtree_pks(label)
        candidates = [
            candidate
            for candidate in label_list(project=label.project).exclude(status=LabelStatus.DEPRECATED)
            if candidate.pk not in subtree
        ]
        clusters = list(cluster_list(project=label.project))
        choices: list[Any] = [("", "— choose where to move it —")]
        choices.append(("Root of a cluster", [(f"root:{c.key}", f"Root of {c.name}") for c in clusters]))
        for group, options in _label_choices(candidates):
            choices.append(
                (f"Under a label in {group}", [(f"label:{value}", text) for value, text in options])
            )
        set_choices(self.fields["target"], choices)

    def clean_target(self) -> dict[str, str | None]:
        kind, _, value = self.cleaned_data["target"].partition(":")
        if kind == "root":
            return {"parent_id": None, "cluster_key": value}
        return {"parent_id": value, "cluster_key": None}


def _subtree_pks(label: Label) -> set[int]:
    """The label and its descendants (they cannot become its parent)."""
    by_parent: dict[int | None, list[int]] = {}
    for pk, parent_id in Label.objects.filter(project=label.project).values_list("pk", "parent_id"):
        by_parent.setdefault(parent_id, []).append(pk)
    out, stack = set(), [label.pk]
    while stack:
        current = stack.pop()
        if current not in out:
            out.add(current)
            stack.extend(by_parent.get(current, []))
    return out


class LabelStatusForm(ViolationFormMixin, forms.Form):
    prefix = "status"

    status = forms.ChoiceField(choices=LabelStatus.choices, label="New status")
    reason = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        label="Why",
        help_text="Required when deprecating.",
    )

    violation_fields = {"parent": "status", "name": "status"}


class LabelTermForm(ViolationFormMixin, forms.Form):
    """One synonym or example utterance to add (the validator checks length and count).

    ``accept_similar`` confirms a term the guard found very close to another label's
    (``taxonomy.term_guard``); after such a refusal ``conflicts`` holds what the guard found and
    ``confirmable`` says whether confirming would save the term (no identical term among them)."""

    text = forms.CharField(strip=True)
    accept_similar = forms.BooleanField(required=False, widget=forms.HiddenInput)

    violation_fields = {"synonyms": "text", "examples": "text"}

    def __init__(self, *args: Any, noun: str, **kwargs: Any) -> None:
        kwargs.setdefault("prefix", noun)
        super().__init__(*args, **kwargs)
        self.fields["text"].label = f"New {noun}"
        self.fields["text"].widget.attrs["autocomplete"] = "off"
        self.conflicts: list[TermConflict] = []
        self.confirmable = False

    def add_violations(self, exc: RuleViolation) -> None:
        if isinstance(exc, TermConflicts):
            self.conflicts, self.confirmable = exc.conflicts, exc.confirmable
        super().add_violations(exc)


class LabelTermRemoveForm(forms.Form):
    text = forms.CharField(strip=False)


class IncompatibilityForm(ViolationFormMixin, forms.Form):
    prefix = "incompat"

    other = forms.CharField(label="Incompatible with")
    reason = forms.CharField(required=False, label="Why")

    violation_fields = {"labels": "other"}

    def __init__(self, *args: Any, label: Label, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        others = label_list(project=label.project).exclude(pk=label.pk).exclude(status=LabelStatus.DEPRECATED)
        self.fields["other"].widget = forms.Select(choices=_label_choices(others, blank="— choose a label —"))


# --- typologies, policies, roles ------------------------------------------------------------------


class TypologyForm(ViolationFormMixin, forms.Form):
    """A context typology (inference profile); ranges and weights are judged by the validator."""

    key = forms.CharField(
        help_text="Stable key: lowercase letters, digits, '_' and '-'.",
        widget=forms.TextInput(attrs={"spellcheck": "false", "autocomplete": "off"}),
    )
    name = forms.CharField()
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    access_constraints = MappingLinesField(
        rows=3,
        help_text="One per line: 'name: value1, value2' "
        "(e.g. 'channels: chat, web'); an empty list = no constraint.",
    )
    preferred_node_types = LinesField(rows=3, help_text=NODE_TYPES_HELP)
    complexity_budget = forms.IntegerField(
        widget=forms.NumberInput(attrs={"min": 1, "max": 10}), help_text="1–10"
    )
    max_depth = forms.IntegerField(widget=forms.NumberInput(attrs={"min": 1, "max": 20}), help_text="1–20")
    max_hops = forms.IntegerField(widget=forms.NumberInput(attrs={"min": 1, "max": 20}), help_text="1–20")
    beam_width = forms.IntegerField(widget=forms.NumberInput(attrs={"min": 1, "max": 32}), help_text="1–32")
    response_style = forms.ChoiceField(choices=ResponseStyle.choices)
    fast_path_eligible = forms.BooleanField(required=False, label="Fast path eligible")
    is_default = forms.BooleanField(required=False, label="Default typology of the project")
    weight_alpha = forms.FloatField(label="α", help_text=WEIGHT_HELP["alpha"])
    weight_beta = forms.FloatField(label="β", help_text=WEIGHT_HELP["beta"])
    weight_gamma = forms.FloatField(label="γ", help_text=WEIGHT_HELP["gamma"])
    weight_delta = forms.FloatField(label="δ", help_text=WEIGHT_HELP["delta"])
    weight_epsilon = forms.FloatField(label="ε", help_text=WEIGHT_HELP["epsilon"])

    def __init__(self, *args: Any, editing: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if editing:
            self.fields["key"].disabled = True
            self.fields["key"].help_text = "The key never changes."
        for name in WEIGHTS:
            self.fields[f"weight_{name}"].widget.attrs.update({"min": 0, "max": 1, "step": "any"})

    @staticmethod
    def initial_from(data: dict[str, Any]) -> dict[str, Any]:
        """Flatten a typology's data form (``weights`` dict) into the form's fields."""
        initial = {k: v for k, v in data.items() if k != "weights"}
        initial.update({f"weight_{name}": value for name, value in data.get("weights", {}).items()})
        return initial

    def to_data(self) -> dict[str, Any]:
        """The typology's data form, as ``typology_save`` expects it."""
        data = {k: v for k, v in self.cleaned_data.items() if not k.startswith("weight_")}
        data["weights"] = {name: self.cleaned_data[f"weight_{name}"] for name in WEIGHTS}
        return data


class PolicyForm(ViolationFormMixin, forms.Form):
    """A policy; list fields are one item per line, label rules name LabelIDs."""

    key = forms.CharField(
        help_text="Stable key: lowercase letters, digits, '_' and '-'.",
        widget=forms.TextInput(attrs={"spellcheck": "false", "autocomplete": "off"}),
    )
    name = forms.CharField()
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    allowed_labels = LinesField(
        help_text="LabelIDs, one per line; a rule covers the label's whole subtree. Empty = every label."
    )
    forbidden_labels = LinesField(help_text="LabelIDs, one per line.")
    allowed_node_types = LinesField(rows=3, help_text="Empty = every type. " + NODE_TYPES_HELP)
    forbidden_node_types = LinesField(rows=3, help_text=NODE_TYPES_HELP)
    max_hops = forms.IntegerField(
        required=False,
        widget=forms.NumberInput(attrs={"min": 1, "max": 20}),
        help_text="Hop cap, 1–20; empty = the typology decides.",
    )
    blocked_terms = LinesField(help_text="Terms that BLOCK a request, one per line (stored lower-case).")
    blocked_patterns = LinesField(
        help_text=(
            f"Regular expressions (RE2 syntax: no backreferences or lookaround; at most {MAX_PATTERN_CHARS} "
            "characters) that BLOCK a request, one per line."
        )
    )
    sensitive_topics = SensitiveTopicsField(
        help_text="One per line: 'topic: term1, term2 -> ACTION' with ACTION one of REFOCUS, RESTRICT, BLOCK."
    )
    scope_statement = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="What this agent is for, in one or two sentences.",
    )
    refusal_template = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    refocus_template = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    language_messages = TextMappingField(
        help_text="The answer to a prompt in a language the release does not cover, one per line: "
        "'fr: text' (ISO 639-1 code) or 'default: text'; {languages} names the covered languages."
    )
    memory_scopes = forms.MultipleChoiceField(
        choices=MemoryScope.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Scopes this role may write to memory.",
    )

    def __init__(self, *args: Any, editing: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if editing:
            self.fields["key"].disabled = True
            self.fields["key"].help_text = "The key never changes."

    def to_data(self) -> dict[str, Any]:
        return dict(self.cleaned_data)


class RoleForm(ViolationFormMixin, forms.Form):
    key = forms.CharField(
        help_text="Stable key: lowercase letters, digits, '_' and '-'.",
        widget=forms.TextInput(attrs={"spellcheck": "false", "autocomplete": "off"}),
    )
    name = forms.CharField()
    policy = forms.CharField(label="Policy")
    default_typology = forms.CharField(required=False, label="Default typology")

    def __init__(self, *args: Any, project: Project, editing: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if editing:
            self.fields["key"].disabled = True
        self.fields["policy"].widget = forms.Select(
            choices=[
                ("", "— choose a policy —"),
                *[(p.key, f"{p.name} ({p.key})") for p in policy_list(project=project)],
            ]
        )
        self.fields["default_typology"].widget = forms.Select(
            choices=[
                ("", "— none —"),
                *[(t.key, f"{t.name} ({t.key})") for t in typology_list(project=project)],
            ]
        )


class HistoryFilterForm(forms.Form):
    object_type = forms.ChoiceField(required=False, label="Object type")
    object_key = forms.CharField(required=False, label="Object key")

    def __init__(self, *args: Any, object_types: Iterable[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        set_choices(self.fields["object_type"], [("", "All types"), *[(t, t) for t in object_types]])
