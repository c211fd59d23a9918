from django.apps import AppConfig


class ProjectsConfig(AppConfig):
    """Projects (workspaces), memberships with platform roles, and API tokens."""

    name = "projects"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import schema  # noqa: F401  (registers the OpenAPI auth extension)
