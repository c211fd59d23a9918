from django.apps import AppConfig


class OntologyConfig(AppConfig):
    """The ontology graph: store port and backends, lifecycle, aliases, releases, snapshot, analytics."""

    name = "ontology"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # imported here, not at module top: these modules import models, which need the app registry
        from taxonomy.attachments import attached_nodes_reader_set

        from .releases import release_snapshot_load
        from .selectors import nodes_for_label
        from .snapshot_registry import default_loader_set

        default_loader_set(release_snapshot_load)
        attached_nodes_reader_set(nodes_for_label)
