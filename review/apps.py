from django.apps import AppConfig


class ReviewConfig(AppConfig):
    """Proposals of the offline loop, its Celery tasks and the human review queue."""

    name = "review"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from ontology.releases import PUBLISH_HOOKS

        from .boost import active_check_boost_hook

        if active_check_boost_hook not in PUBLISH_HOOKS:
            PUBLISH_HOOKS.append(active_check_boost_hook)
