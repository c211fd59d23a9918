"""Forms of the review UI: the reviewer's verbs and the proposal editor.

As in the curation UI, forms check the *shape* of what a person typed; the decision services, the
changeset reader and the validators judge the rules, and a ``RuleViolation`` lands on the form with
its rule name (``ViolationFormMixin``).

The proposal editor shows one small group of fields per operation of the changeset — titles of new
nodes and labels, attachments, child-label names and parents, edge weights — and rebuilds the changeset
from the stored one with those edits applied; other fields of an operation are kept as they are. The
JSON editor replaces the whole changeset at once (experts who need to add or remove operations).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from django import forms
from django.core.exceptions import ValidationError

from memory.forms import DistinctionFields
from review.models import Proposal
from taxonomy.forms import ViolationFormMixin

if TYPE_CHECKING:
    from django.contrib.auth.models import User

REASON_MAX = 1000


class ReasonForm(ViolationFormMixin, forms.Form):
    reason = forms.CharField(
        required=False, max_length=REASON_MAX, widget=forms.Textarea(attrs={"rows": 2}), label="Reason"
    )


class ApproveForm(ReasonForm):
    MODES = (("now", "Apply now and publish a release"), ("batch", "Approve for the next release (batch)"))

    mode = forms.ChoiceField(choices=MODES, initial="now", widget=forms.RadioSelect, label="When")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["reason"].label = "Note (optional)"


class RejectForm(ReasonForm):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["reason"].required = True
        self.fields["reason"].label = "Why reject it?"
        self.fields["reason"].help_text = "Required. The same candidate will not be proposed again unchanged."


class RequestChangesForm(ReasonForm):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["reason"].required = True
        self.fields["reason"].label = "What should change?"


class DeferForm(ReasonForm):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["reason"].label = "Why later? (optional)"


class AssignForm(ViolationFormMixin, forms.Form):
    assignee: forms.ModelChoiceField[User] = forms.ModelChoiceField(
        queryset=None, required=False, empty_label="(nobody)", label="Assign to"
    )

    def __init__(self, *args: Any, reviewers: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["assignee"]
        field.queryset = reviewers  # type: ignore[attr-defined]
        field.label_from_instance = lambda user: user.get_username()  # type: ignore[attr-defined]


class SilentLabelForm(ViolationFormMixin, forms.Form):
    helpful = forms.TypedChoiceField(
        choices=(("yes", "Truly helpful"), ("no", "Not helpful")),
        coerce=lambda value: value == "yes",
        label="Verdict",
    )
    comment = forms.CharField(required=False, max_length=REASON_MAX, label="Comment")


class MergeResolveForm(ViolationFormMixin, DistinctionFields):
    violation_fields = {"unit_term": "__all__", "fact_term": "__all__"}

    decision = forms.ChoiceField(choices=(("SAME", "Same fact"), ("DIFFERENT", "Different fact")))
    reason = forms.CharField(required=False, max_length=500)


class LabelActivateForm(ViolationFormMixin, forms.Form):
    reason = forms.CharField(required=False, max_length=500, label="Note")


# --- the proposal editor ----------------------------------------------------------------------------


def _csv(value: Any) -> str:
    return ", ".join(value or [])


def _split_csv(text: str) -> list[str]:
    return [item.strip() for item in (text or "").split(",") if item.strip()]


EDITABLE: dict[str, tuple[tuple[str, str, str], ...]] = {
    # op name → (field, kind, label); kind: text | csv | float | parent
    "node_add": (("title", "text", "Title"), ("labels", "csv", "Labels"), ("clusters", "csv", "Clusters")),
    "node_content": (("title", "text", "Title"),),
    "node_attach": (("labels", "csv", "Labels to attach"), ("clusters", "csv", "Clusters to attach")),
    "node_detach": (("labels", "csv", "Labels to detach"), ("clusters", "csv", "Clusters to detach")),
    "label_add": (
        ("name", "text", "Child label name"),
        ("parent", "parent", "Parent LabelID"),
        ("description", "text", "Description"),
    ),
    "edge_add": (("weight", "float", "Weight"),),
    "edge_weight": (("weight", "float", "Weight"),),
    # a re-attached label: the cluster it moves to and the parent there (empty: the cluster's root)
    "label_move": (("cluster", "text", "Move to cluster"), ("parent", "parent", "Parent LabelID")),
}
CSV_HELP = "comma-separated; LabelIDs (L00012) or new:<ref> for a label this proposal adds"


class ProposalEditForm(ViolationFormMixin, forms.Form):
    """Title, summary and the editable fields of each operation (``op-<index>-<field>``)."""

    title = forms.CharField(max_length=200)
    summary = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    reason = forms.CharField(required=False, max_length=REASON_MAX, label="What did you change, and why?")

    def __init__(self, *args: Any, proposal: Proposal, **kwargs: Any) -> None:
        kwargs.setdefault(
            "initial",
            {"title": proposal.title, "summary": proposal.summary},
        )
        super().__init__(*args, **kwargs)
        self.proposal = proposal
        self.op_groups: list[dict[str, Any]] = []
        for index, op in enumerate(proposal.changeset):
            names = []
            for name, kind, label in EDITABLE.get(op.get("op", ""), ()):
                key = f"op-{index}-{name}"
                value = op.get(name)
                if kind == "csv":
                    field: forms.Field = forms.CharField(required=False, label=label, help_text=CSV_HELP)
                    initial: Any = _csv(value)
                elif kind == "float":
                    field = forms.FloatField(label=label, min_value=-1.0, max_value=1.0)
                    initial = value
                elif kind == "parent":
                    field = forms.CharField(required=False, label=label, max_length=16)
                    initial = value or ""
                else:
                    field = forms.CharField(
                        required=name not in ("description",), label=label, max_length=200
                    )
                    initial = value or ""
                field.initial = initial
                self.fields[key] = field
                names.append(key)
            self.op_groups.append({"index": index, "op": op, "fields": names})

    @property
    def groups(self) -> list[dict[str, Any]]:
        """Each operation with its bound fields, for the template."""
        return [{**group, "bound": [self[name] for name in group["fields"]]} for group in self.op_groups]

    def edited_changeset(self) -> list[dict[str, Any]]:
        """The stored changeset with this form's edits applied (call after ``is_valid()``)."""
        data = self.cleaned_data
        out = []
        for index, op in enumerate(self.proposal.changeset):
            op = dict(op)
            for name, kind, _ in EDITABLE.get(op.get("op", ""), ()):
                key = f"op-{index}-{name}"
                if key not in data:
                    continue
                value = data[key]
                if kind == "csv":
                    op[name] = _split_csv(value)
                elif kind == "parent":
                    op[name] = value.strip() or None
                elif kind == "float":
                    op[name] = float(value)
                else:
                    op[name] = value.strip()
            out.append(op)
        return out


class ChangesetJsonForm(ViolationFormMixin, forms.Form):
    """The whole changeset as JSON (a list of operations, see review/changeset.py)."""

    changeset_json = forms.CharField(
        label="Changeset (JSON)",
        widget=forms.Textarea(attrs={"rows": 14, "spellcheck": "false", "class": "mono"}),
    )
    reason = forms.CharField(required=False, max_length=REASON_MAX, label="What did you change, and why?")
    violation_fields = {"changeset": "changeset_json"}

    def clean_changeset_json(self) -> Any:
        try:
            value = json.loads(self.cleaned_data["changeset_json"])
        except json.JSONDecodeError as exc:
            raise ValidationError(f"not valid JSON: {exc.msg} (line {exc.lineno})", code="json") from exc
        if not isinstance(value, list):
            raise ValidationError("a changeset is a JSON list of operations", code="json")
        return value

    @staticmethod
    def initial_for(proposal: Proposal) -> dict[str, Any]:
        return {"changeset_json": json.dumps(proposal.changeset, indent=2, ensure_ascii=False)}
