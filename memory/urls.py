"""Memory UI of one project, mounted at ``/p/<slug:project>/memory/`` (namespace ``memory``)."""

from django.urls import path

from . import views

app_name = "memory"

urlpatterns = [
    path("", views.memory_browser, name="browser"),
    path("items/<int:memory_id>/", views.memory_detail, name="item_detail"),
    path("units/", views.unit_list, name="units"),
    path("units/<int:unit_id>/", views.unit_detail, name="unit_detail"),
    path("units/<int:unit_id>/promote/", views.unit_promote, name="unit_promote"),
    path(
        "units/<int:unit_id>/evidence/<int:evidence_id>/detach/",
        views.evidence_detach,
        name="evidence_detach",
    ),
    path("staging/", views.staging_list, name="staging"),
    path("staging/<int:attempt_id>/resolve/", views.staging_resolve, name="staging_resolve"),
    path("staging/merge-bar/", views.merge_bar_update, name="merge_bar_update"),
    path("distinctions/", views.distinction_list, name="distinctions"),
    path("distinctions/declare/", views.distinction_declare, name="distinction_declare"),
    path("distinctions/<int:distinction_id>/delete/", views.distinction_delete, name="distinction_delete"),
]
