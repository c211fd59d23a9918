from django.contrib import admin

from .models import NodeAlias, OntologyEdge, OntologyNode


@admin.register(OntologyNode)
class OntologyNodeAdmin(admin.ModelAdmin):
    """Read-only: graph writes go through the graph store, which validates them."""

    list_display = ["node_id", "project", "type", "title", "risk", "status", "updated_at"]
    list_filter = ["project", "type", "status", "risk"]
    search_fields = ["node_id", "title"]
    exclude = ["embedding"]

    def has_add_permission(self, request: object) -> bool:
        return False

    def has_change_permission(self, request: object, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: object, obj: object = None) -> bool:
        return False


@admin.register(OntologyEdge)
class OntologyEdgeAdmin(OntologyNodeAdmin):
    list_display = ["source", "type", "target", "weight", "project"]
    list_filter = ["project", "type"]
    search_fields = ["source__node_id", "target__node_id"]
    exclude = []


@admin.register(NodeAlias)
class NodeAliasAdmin(OntologyNodeAdmin):
    list_display = ["source", "target", "reason", "project", "created_at"]
    list_filter = ["project"]
    search_fields = ["source", "target"]
    exclude = []
