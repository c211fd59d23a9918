"""Curation UI of one project, mounted at ``/p/<slug:project>/`` (namespace ``taxonomy``)."""

from django.urls import path

from . import views

app_name = "taxonomy"

LABEL = "taxonomy/labels/<str:label_id>/"

urlpatterns = [
    path("", views.project_home, name="project_home"),
    path("taxonomy/", views.taxonomy_page, name="tree"),
    path("taxonomy/clusters/new/", views.cluster_create, name="cluster_create"),
    path("taxonomy/labels/new/", views.label_create, name="label_create"),
    path(LABEL, views.label_detail, name="label_detail"),
    path(LABEL + "edit/", views.label_edit, name="label_edit"),
    path(LABEL + "move/", views.label_move, name="label_move"),
    path(LABEL + "status/", views.label_status, name="label_status"),
    path(LABEL + "synonyms/add/", views.label_term_add, {"kind": "synonyms"}, name="label_synonym_add"),
    path(
        LABEL + "synonyms/remove/", views.label_term_remove, {"kind": "synonyms"}, name="label_synonym_remove"
    ),
    path(LABEL + "examples/add/", views.label_term_add, {"kind": "examples"}, name="label_example_add"),
    path(
        LABEL + "examples/remove/", views.label_term_remove, {"kind": "examples"}, name="label_example_remove"
    ),
    path(LABEL + "incompatibilities/add/", views.incompatibility_add, name="incompatibility_add"),
    path(
        LABEL + "incompatibilities/<int:pk>/remove/",
        views.incompatibility_remove,
        name="incompatibility_remove",
    ),
    path("typologies/", views.typology_list, name="typologies"),
    path("typologies/copy-template/", views.typology_copy_template, name="typology_copy_template"),
    path("typologies/<str:key>/", views.typology_detail, name="typology_detail"),
    path("policies/", views.policy_list, name="policies"),
    path("policies/<str:key>/", views.policy_detail, name="policy_detail"),
    path("roles/", views.role_list, name="roles"),
    path("roles/<str:key>/", views.role_detail, name="role_detail"),
    path("history/", views.history, name="history"),
    path("packs/", views.packs_page, name="packs"),
    path("packs/download/", views.pack_download, name="pack_download"),
]
