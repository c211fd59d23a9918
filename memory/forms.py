"""Forms of the memory UI: the browser's filters and the reviewer's verbs."""

from __future__ import annotations

from django import forms

from taxonomy.forms import ViolationFormMixin

from .canonical import InfoType
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


class ResolveForm(ViolationFormMixin, forms.Form):
    """A reviewer's decision on an UNSURE registry attempt (refusals are shown above the buttons)."""

    violation_fields = {"decision": "__all__"}

    decision = forms.ChoiceField(
        choices=[
            (RegistryAttempt.Review.SAME, "Same fact"),
            (RegistryAttempt.Review.DIFFERENT, "Different fact"),
        ]
    )
    reason = forms.CharField(required=False, max_length=500)


class PromoteForm(ViolationFormMixin, forms.Form):
    reason = forms.CharField(required=False, max_length=500)


class DetachForm(ViolationFormMixin, forms.Form):
    """Undo a wrong merge: the reviewer says why this evidence is not the unit's fact."""

    violation_fields = {"reason": "reason"}

    reason = forms.CharField(max_length=500, help_text="why this fact is not the unit's")
