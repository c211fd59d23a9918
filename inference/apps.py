from django.apps import AppConfig


class InferenceConfig(AppConfig):
    """The online ARG pipeline (§2 steps 1–10): envelope, Policy Manager, candidates, Context Weaver,
    landing, scoring, traversal, Action / Info / Memory, logging."""

    name = "inference"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from ontology.releases import PUBLISH_HOOKS

        from .classifier import train_label_classifier

        if train_label_classifier not in PUBLISH_HOOKS:
            PUBLISH_HOOKS.append(train_label_classifier)
