"""URLs of the Step A metrics page, mounted at ``/p/<project>/metrics/``."""

from django.urls import path

from review.queue import metrics_views

app_name = "review_metrics"

urlpatterns = [
    path("", metrics_views.metrics_page, name="metrics"),
    path("runs/", metrics_views.runs_panel, name="runs"),
]
