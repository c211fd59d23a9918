from django.apps import AppConfig


class OntologyConfig(AppConfig):
    """The ontology graph: store port and backends, lifecycle, aliases, releases, snapshot, analytics."""

    name = "ontology"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # imported here, not at module top: these modules import models, which need the app registry
        from taxonomy.attachments import attached_nodes_reader_set

        from .ask_threshold import OVERRIDE_DOCUMENT, ask_override_document
        from .releases import CONTEXT_HOOKS, release_snapshot_load
        from .selectors import nodes_for_label
        from .snapshot_registry import default_loader_set

        default_loader_set(release_snapshot_load)
        attached_nodes_reader_set(nodes_for_label)
        CONTEXT_HOOKS[OVERRIDE_DOCUMENT] = ask_override_document  # the curator's ask threshold
