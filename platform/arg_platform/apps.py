from django.apps import AppConfig


class ArgPlatformConfig(AppConfig):
    """Cross-cutting parts of the platform: jobs, audit trail, embedder, health."""

    name = "arg_platform"
    label = "arg_platform"
    verbose_name = "ARG platform"
    default_auto_field = "django.db.models.BigAutoField"
