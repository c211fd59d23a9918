"""Forms of the graph UI: node and edge edits into the draft, lifecycle moves, publication.

As in the taxonomy UI, forms check the *shape* of what a person typed; the graph store's validator
judges the *rules*, and its ``RuleViolation`` lands next to the field it names (rule name as code).
"""

from __future__ import annotations

import json
import re
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from arg_platform.errors import RuleViolation
from arg_platform.vocabulary import (
    EDGE_TYPE_CHOICES,
    NODE_STATUS_CHOICES,
    NODE_TYPE_CHOICES,
    NodeStatus,
    NodeType,
    RiskLevel,
)
from taxonomy.forms import LinesField, ViolationFormMixin, set_choices

from .store.port import NodeData, ParameterSpec, parameter_as_json, parameter_from_json

TRUE_WORDS = {"true", "yes", "y", "1", "required", "req"}
FALSE_WORDS = {"false", "no", "n", "0", "optional", "opt", ""}
NODE_ID_HELP = (
    "Stable id: letters, digits, '_', '.', ':' and '-' (e.g. N-invoice-download). It never changes."
)


class IdListField(LinesField):
    """Stable ids (LabelIDs, cluster keys) separated by new lines, commas or spaces."""

    def to_python(self, value: Any) -> Any:
        text = forms.CharField.to_python(self, value) or ""
        return list(dict.fromkeys(part for part in re.split(r"[\s,;]+", text) if part))

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return ", ".join(str(v) for v in value)
        return value


class ParametersField(LinesField):
    """An Action's parameters, one per line: ``name:type:required:description``."""

    def to_python(self, value: Any) -> Any:
        specs, errors = [], []
        for number, line in enumerate(super().to_python(value), start=1):
            name, _, rest = line.partition(":")
            ptype, _, rest = rest.partition(":")
            required, _, description = rest.partition(":")
            flag = required.strip().lower()
            if not name.strip() or flag not in TRUE_WORDS | FALSE_WORDS:
                errors.append(
                    ValidationError(
                        f"line {number}: write 'name:type:required:description' (required: true or false)",
                        code="format",
                    )
                )
                continue
            description, extras = _typed_extras(description.strip())
            specs.append(
                parameter_from_json(
                    {
                        **extras,
                        "name": name.strip(),
                        "type": ptype.strip() or "string",
                        "required": True if flag == "" else flag in TRUE_WORDS,
                        "description": description,
                    }
                )
            )
        if errors:
            raise ValidationError(errors)
        return specs

    def format_item(self, item: Any) -> str:
        if isinstance(item, ParameterSpec):
            line = f"{item.name}:{item.type}:{str(item.required).lower()}:{item.description}"
            extras = {k: v for k, v in parameter_as_json(item).items() if k not in BASE_PARAMETER_KEYS}
            return f"{line} {json.dumps(extras, ensure_ascii=False)}" if extras else line
        return str(item)


BASE_PARAMETER_KEYS = frozenset({"name", "type", "required", "description"})


def _typed_extras(description: str) -> tuple[str, dict[str, Any]]:
    """A parameter line's description and the JSON object that may end it (pattern, values, synonyms,
    source: ``email:email:true:Account email {"source": "context"}``)."""
    start = description.find(" {")
    if not description.endswith("}") or (start < 0 and not description.startswith("{")):
        return description, {}
    start = 0 if description.startswith("{") else start + 1
    try:
        extras = json.loads(description[start:])
    except ValueError:
        return description, {}
    if not isinstance(extras, dict):
        return description, {}
    return description[:start].strip(), {k: v for k, v in extras.items() if k not in BASE_PARAMETER_KEYS}


class NodeFilterForm(forms.Form):
    """Filters of the node list (all optional); invalid choices are simply ignored by the view."""

    search = forms.CharField(required=False, label="Search")
    type = forms.ChoiceField(required=False, label="Type")
    status = forms.ChoiceField(required=False, label="Status")
    label = forms.ChoiceField(required=False, label="Label")

    def __init__(self, *args: Any, labels: list[tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["search"].widget = forms.TextInput(
            attrs={"type": "search", "placeholder": "Node id or title…", "autocomplete": "off"}
        )
        set_choices(self.fields["type"], [("", "All types"), *[(t, t) for t in NODE_TYPE_CHOICES]])
        set_choices(
            self.fields["status"], [("", "Any status"), *[(s, s.title()) for s in NODE_STATUS_CHOICES]]
        )
        set_choices(self.fields["label"], [("", "Any label"), *labels])


class NodeForm(ViolationFormMixin, forms.Form):
    """A node's fields; ``node_id`` only when creating (it never changes)."""

    node_id = forms.CharField(
        label="Node id",
        max_length=128,
        help_text=NODE_ID_HELP,
        widget=forms.TextInput(attrs={"spellcheck": "false", "autocomplete": "off"}),
    )
    title = forms.CharField()
    type = forms.ChoiceField(choices=[(t, t) for t in NODE_TYPE_CHOICES], initial=NodeType.INFO.value)
    risk = forms.ChoiceField(choices=[(r.value, r.value) for r in RiskLevel], initial=RiskLevel.LOW.value)
    chunk = forms.CharField(
        label="Client text",
        required=False,
        widget=forms.Textarea(attrs={"rows": 5}),
        help_text="What an answer may show the asker, written to them (≤ 10,000 characters). "
        "The only text answers use.",
    )
    staff_notes = forms.CharField(
        label="Staff notes",
        required=False,
        max_length=10_000,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Instructions for staff (e.g. “Check the customer's plan first”). Never shown to a client.",
    )
    description = forms.CharField(
        label="Internal description",
        required=False,
        max_length=2_000,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="What this node is or does, for curators. Never shown to a client.",
    )
    labels = IdListField(
        rows=2, label="Labels", help_text="LabelIDs (e.g. L00012), separated by commas or new lines."
    )
    clusters = IdListField(rows=2, label="Clusters", help_text="Cluster keys, separated by commas.")
    products = IdListField(
        rows=1,
        label="Products",
        help_text="Product keys this node is specific to (e.g. cli, dashboard), separated by commas; empty: "
        "every product. A request naming another product in context.product is not routed here.",
    )
    preconditions = LinesField(rows=3, help_text="Actions: checks that must hold first, one per line.")
    parameters = ParametersField(
        rows=3,
        help_text="Actions: one per line as name:type:required:description, optionally ending with a "
        'JSON object of pattern, values, synonyms, source (e.g. plan:enum:true:The plan {"values": '
        '["pro", "team"]}).',
    )
    handler = forms.CharField(
        required=False,
        help_text='Actions and DirectActions: the registered handler, e.g. "python:billing.resend_invoice".',
        widget=forms.TextInput(attrs={"spellcheck": "false"}),
    )

    violation_fields = {"id": "node_id", "status": "type", "embedding": "chunk"}

    def __init__(self, *args: Any, editing: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if editing:
            del self.fields["node_id"]

    def clean_chunk(self) -> str:
        return self.cleaned_data["chunk"].replace("\r\n", "\n")

    def clean_staff_notes(self) -> str:
        return self.cleaned_data["staff_notes"].replace("\r\n", "\n")

    def clean_description(self) -> str:
        return self.cleaned_data["description"].replace("\r\n", "\n")

    @staticmethod
    def initial_from(node: NodeData) -> dict[str, Any]:
        return {
            "node_id": node.node_id,
            "title": node.title,
            "type": node.type,
            "risk": node.risk,
            "chunk": node.chunk,
            "staff_notes": node.staff_notes,
            "description": node.description,
            "labels": list(node.labels),
            "clusters": list(node.clusters),
            "products": list(node.products),
            "preconditions": list(node.preconditions),
            "parameters": list(node.parameters),
            "handler": node.handler,
        }

    def changes(self) -> dict[str, Any]:
        """The editable fields as ``node_update`` takes them (tuples, ``ParameterSpec``)."""
        data = self.cleaned_data
        return {
            "title": data["title"],
            "type": data["type"],
            "risk": data["risk"],
            "chunk": data["chunk"],
            "staff_notes": data["staff_notes"],
            "description": data["description"],
            "labels": tuple(data["labels"]),
            "clusters": tuple(data["clusters"]),
            "products": tuple(data["products"]),
            "preconditions": tuple(data["preconditions"]),
            "parameters": tuple(data["parameters"]),
            "handler": data["handler"].strip(),
        }

    def to_node(self) -> NodeData:
        return NodeData(node_id=self.cleaned_data["node_id"].strip(), **self.changes())


class NodeStatusForm(ViolationFormMixin, forms.Form):
    """A move along ACTIVE → DEPRECATED → REMOVED (the store judges the transition)."""

    prefix = "status"

    status = forms.ChoiceField(choices=[(s, s.title()) for s in NODE_STATUS_CHOICES], label="New status")
    reason = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        label="Why",
        help_text="Required when deprecating or removing. A node is REMOVED only once it has no edges.",
    )

    def __init__(self, *args: Any, current: str = NodeStatus.ACTIVE.value, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["status"].initial = {
            NodeStatus.ACTIVE.value: NodeStatus.DEPRECATED.value,
            NodeStatus.DEPRECATED.value: NodeStatus.REMOVED.value,
        }.get(current, current)


EDGE_DIRECTIONS = [("out", "this node → other node"), ("in", "other node → this node")]


class EdgeAddForm(ViolationFormMixin, forms.Form):
    """A new edge between this node and another (by node id), in either direction."""

    prefix = "edge"

    direction = forms.ChoiceField(choices=EDGE_DIRECTIONS, initial="out", label="Direction")
    other = forms.CharField(
        label="Other node",
        max_length=128,
        widget=forms.TextInput(
            attrs={
                "list": "edge-other-options",
                "autocomplete": "off",
                "spellcheck": "false",
                "placeholder": "Type a node id or title…",
            }
        ),
    )
    type = forms.ChoiceField(choices=[(t, t) for t in EDGE_TYPE_CHOICES], label="Edge type")
    weight = forms.FloatField(
        initial=1.0,
        widget=forms.NumberInput(attrs={"step": "any", "min": -1, "max": 1}),
        help_text="−1…1; negative = inhibitory.",
    )
    semantics = forms.CharField(required=False, label="Semantics", help_text="What the movement means.")

    def add_violations(self, exc: RuleViolation) -> None:
        # the violation names the edge's source/target; on this form one of them is "other"
        incoming = self.cleaned_data.get("direction") == "in"
        other_end = "source" if incoming else "target"
        this_end = "target" if incoming else "source"
        for violation in exc.violations:
            if violation.rule == "graph.self_loop" or violation.field == other_end:
                field: str | None = "other"
            elif violation.field == this_end or violation.field not in self.fields:
                field = None
            else:
                field = violation.field
            self.add_error(field, ValidationError(violation.message, code=violation.rule))


class EdgeKeyForm(forms.Form):
    """Which edge (its key, in hidden fields)."""

    source = forms.CharField(max_length=128, widget=forms.HiddenInput)
    target = forms.CharField(max_length=128, widget=forms.HiddenInput)
    type = forms.ChoiceField(choices=[(t, t) for t in EDGE_TYPE_CHOICES], widget=forms.HiddenInput)

    @property
    def key(self) -> tuple[str, str, str]:
        data = self.cleaned_data
        return (data["source"], data["target"], data["type"])


class EdgeUpdateForm(ViolationFormMixin, EdgeKeyForm):
    """A new weight or semantics for an existing edge."""

    weight = forms.FloatField(widget=forms.NumberInput(attrs={"step": "any", "min": -1, "max": 1}))
    semantics = forms.CharField(required=False)


class EdgeRemoveForm(EdgeKeyForm):
    reason = forms.CharField(required=False, max_length=500)


class PublishForm(ViolationFormMixin, forms.Form):
    notes = forms.CharField(
        required=False,
        max_length=500,
        label="Release notes",
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="What changed and why (shown in the release list).",
    )
    draft_digest = forms.CharField(required=False, max_length=64, widget=forms.HiddenInput)


class AskThresholdForm(ViolationFormMixin, forms.Form):
    """The draft's ask threshold (``ontology.ask_threshold``): the service judges the range."""

    ask_threshold = forms.CharField(
        required=False,
        max_length=20,
        label="Ask threshold for the next release",
        widget=forms.TextInput(attrs={"inputmode": "decimal", "size": 6}),
        help_text="A confidence from 0 up to 1 (e.g. 0.35): below it the assistant asks instead of "
        "answering. Leave empty for the threshold calibrated at publication.",
    )


class ActivateForm(forms.Form):
    reason = forms.CharField(required=False, max_length=500, label="Why")
