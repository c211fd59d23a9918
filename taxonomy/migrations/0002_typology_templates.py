"""Shared context typology templates (generic families every project can copy)."""

from django.db import migrations

TEMPLATES = [
    {"key": "quick-answer", "name": "Quick answer",
     "description": "Short factual answers; prefers FAQ, InfoStable and Shortcut nodes; fast path allowed.",
     "preferred_node_types": ["FAQ", "InfoStable", "Shortcut"], "complexity_budget": 2, "max_depth": 2,
     "max_hops": 3, "beam_width": 2, "response_style": "concise", "fast_path_eligible": True,
     "weights": (0.2, 0.4, 0.2, 0.15, 0.05)},
    {"key": "guided-troubleshooting", "name": "Guided troubleshooting",
     "description": "Multi-step diagnosis through Decision and Clarify nodes before any Action.",
     "preferred_node_types": ["Decision", "Clarify", "Info", "Action"], "complexity_budget": 6, "max_depth": 5,
     "max_hops": 6, "beam_width": 4, "response_style": "step_by_step", "fast_path_eligible": False,
     "weights": (0.35, 0.3, 0.2, 0.1, 0.05)},
    {"key": "compliance-careful", "name": "Compliance careful",
     "description": "Formal, cautious answers for regulated topics; no fast path; short traversal.",
     "preferred_node_types": ["InfoStable", "Info", "Clarify"], "complexity_budget": 3, "max_depth": 3,
     "max_hops": 3, "beam_width": 3, "response_style": "formal", "fast_path_eligible": False,
     "weights": (0.25, 0.25, 0.35, 0.15, 0.0)},
]


def create_templates(apps, schema_editor):
    typology_model = apps.get_model("taxonomy", "ContextTypology")
    for t in TEMPLATES:
        alpha, beta, gamma, delta, epsilon = t["weights"]
        fields = {k: v for k, v in t.items() if k not in ("key", "weights")}
        typology_model.objects.update_or_create(
            project=None, key=t["key"],
            defaults={**fields, "weight_alpha": alpha, "weight_beta": beta, "weight_gamma": gamma,
                      "weight_delta": delta, "weight_epsilon": epsilon},
        )


def remove_templates(apps, schema_editor):
    apps.get_model("taxonomy", "ContextTypology").objects.filter(
        project=None, key__in=[t["key"] for t in TEMPLATES]).delete()


class Migration(migrations.Migration):
    dependencies = [("taxonomy", "0001_initial")]
    operations = [migrations.RunPython(create_templates, remove_templates)]
