from django.apps import AppConfig


class OntologyConfig(AppConfig):
    """The ontology graph: store port and backends, lifecycle, aliases, releases, snapshot, analytics."""

    name = "ontology"
    default_auto_field = "django.db.models.BigAutoField"
