from django.apps import AppConfig


class InferenceConfig(AppConfig):
    """The online ARG pipeline (§2 steps 1–10): envelope, Policy Manager, candidates, Context Weaver,
    landing, scoring, traversal, Action / Info / Memory, logging."""

    name = "inference"
    default_auto_field = "django.db.models.BigAutoField"
