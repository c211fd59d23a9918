from django.apps import AppConfig


class TaxonomyConfig(AppConfig):
    """Core knowledge: clusters, labels, incompatibilities, context typologies, policies and roles."""

    name = "taxonomy"
    default_auto_field = "django.db.models.BigAutoField"
