from django.apps import AppConfig


class ReviewConfig(AppConfig):
    """Proposals of the offline loop, its Celery tasks and the human review queue."""

    name = "review"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from ontology.releases import CONTEXT_HOOKS

        from .boost import DOCUMENT, active_check_boost

        CONTEXT_HOOKS[DOCUMENT] = active_check_boost
