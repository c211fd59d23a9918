"""Graph UI of one project, mounted at ``/p/<slug:project>/graph/`` (namespace ``graph``)."""

from django.urls import path

from . import views

app_name = "graph"

NODE = "nodes/<str:node_id>/"

urlpatterns = [
    path("", views.node_list, name="node_list"),
    path("new/", views.node_create, name="node_create"),
    path(NODE, views.node_detail, name="node_detail"),
    path(NODE + "picture/", views.node_picture, name="node_picture"),
    path(NODE + "edit/", views.node_edit, name="node_edit"),
    path(NODE + "status/", views.node_status, name="node_status"),
    path(NODE + "edges/add/", views.edge_add, name="edge_add"),
    path(NODE + "edges/update/", views.edge_update, name="edge_update"),
    path(NODE + "edges/remove/", views.edge_remove, name="edge_remove"),
    path(NODE + "edges/targets/", views.edge_targets, name="edge_targets"),
    path("releases/", views.release_list, name="release_list"),
    path("releases/publish/", views.release_publish, name="release_publish"),
    path("releases/publish/ask/", views.release_publish_ask, name="release_publish_ask"),
    path("releases/publish/dismiss/", views.release_publish_dismiss, name="release_publish_dismiss"),
    path("releases/ask-threshold/", views.release_ask_threshold, name="release_ask_threshold"),
    path("releases/<int:version>/activate/", views.release_activate, name="release_activate"),
    path("releases/<int:version>/diff/", views.release_diff, name="release_diff"),
]
