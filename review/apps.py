from django.apps import AppConfig


class ReviewConfig(AppConfig):
    """Proposals of the offline loop, its Celery tasks and the human review queue."""

    name = "review"
    default_auto_field = "django.db.models.BigAutoField"
