"""Forms of the memory UI: the browser's filters and the reviewer's verbs."""

from __future__ import annotations

from django import forms

from taxonomy.forms import ViolationFormMixin

from .canonical import InfoType
from .merge_bar import MAX_SLACK
from .models import MemoryFlag, RegistryAttempt, Scope

ANY = [("", "any")]


class MemoryFilterForm(forms.Form):
    """Filters of the memory browser (episodic items and InfoUnits)."""

    user_id = forms.CharField(required=False, label="User", max_length=128)
    org_id = forms.CharField(required=False, label="Org", max_length=128)
    info_type = forms.ChoiceField(
        required=False, label="InfoType", choices=ANY + [(t, t) for t in InfoType.ALL]
    )
    label = forms.CharField(required=False, label="Label", max_length=16, help_text="a LabelID, e.g. L00003")
    scope = forms.ChoiceField(required=False, choices=ANY + list(Scope.choices))
    flag = forms.ChoiceField(required=False, choices=ANY + list(MemoryFlag.choices))


class DistinctionFields(forms.Form):
    """Optional: the two terms that make a "different fact" different ("wool" / "linen"), taught to the
    registry as a term distinction (``memory.distinctions``)."""

    # no form-level length check: the service checks the terms (``memory.distinction``), so every refusal
    # arrives as a violation, which the staging and merge lists show above their buttons
    unit_term = forms.CharField(
        required=False,
        label="Unit's term",
        help_text="the word(s) of the InfoUnit that differ",
        widget=forms.TextInput(attrs={"maxlength": 60}),
    )
    fact_term = forms.CharField(
        required=False,
        label="Fact's term",
        help_text="the word(s) of this fact in their place",
        widget=forms.TextInput(attrs={"maxlength": 60}),
    )

    def terms(self) -> tuple[str, str] | None:
        data = self.cleaned_data
        return (
            (data.get("unit_term", ""), data.get("fact_term", ""))
            if data.get("unit_term") or data.get("fact_term")
            else None
        )


class ResolveForm(ViolationFormMixin, DistinctionFields):
    """A reviewer's decision on an UNSURE registry attempt (refusals are shown above the buttons)."""

    violation_fields = {"decision": "__all__", "unit_term": "__all__", "fact_term": "__all__"}

    decision = forms.ChoiceField(
        choices=[
            (RegistryAttempt.Review.SAME, "Same fact"),
            (RegistryAttempt.Review.DIFFERENT, "Different fact"),
        ]
    )
    reason = forms.CharField(required=False, max_length=500)


class PromoteForm(ViolationFormMixin, forms.Form):
    reason = forms.CharField(required=False, max_length=500)


class DetachForm(ViolationFormMixin, DistinctionFields):
    """Undo a wrong merge: the reviewer says why this evidence is not the unit's fact."""

    violation_fields = {"reason": "reason"}

    reason = forms.CharField(max_length=500, help_text="why this fact is not the unit's")


class DistinctSetForm(ViolationFormMixin, forms.Form):
    """Declare terms that name different things, every pair of them a term distinction."""

    violation_fields = {"terms": "terms"}

    terms = forms.CharField(
        max_length=1500,
        help_text="two or more, separated by commas: e.g. window seat, aisle seat, middle seat",
    )
    reason = forms.CharField(required=False, max_length=500)

    def term_list(self) -> list[str]:
        return [t for t in self.cleaned_data["terms"].split(",") if t.strip()]


class MergeBarForm(ViolationFormMixin, forms.Form):
    """The project operator's merge bar: merge automatically when at most this many words differ."""

    violation_fields = {"identity_slack": "identity_slack"}

    identity_slack = forms.IntegerField(
        min_value=0,
        max_value=MAX_SLACK,
        label="Merge automatically when at most",
        help_text="words differ",
        error_messages={"invalid": f"Enter a whole number of words from 0 to {MAX_SLACK}."},
    )
