"""URL root: UI pages, REST API v1, OpenAPI schema and its Swagger UI / Redoc pages, health."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from . import job_api, job_views, observability, views
from .api_docs import RedocView, redoc_script

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("metrics", observability.metrics_view, name="metrics"),
    path("", views.home, name="home"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/v1/", include("inference.api.urls")),  # first: the path of every client request
    path("api/v1/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # the API reference, served from local static files (drf-spectacular-sidecar; no CDN)
    path("api/v1/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/v1/redoc/", RedocView.as_view(url_name="api-schema"), name="api-redoc"),
    path("api/v1/redoc/redoc.standalone.js", redoc_script, name="api-redoc-script"),
    path("api/v1/", include("projects.api.urls")),
    path(
        "api/v1/projects/<slug:project>/jobs/<int:pk>/",
        job_api.JobDetailView.as_view(),
        name="api-job-detail",
    ),
    path("api/v1/", include("taxonomy.api.urls")),
    path("api/v1/", include("ontology.api.urls")),
    path("api/v1/", include("memory.api.urls")),
    path("api/v1/", include("review.queue.api.urls")),
    path("p/<slug:project>/graph/", include("ontology.urls")),
    path("p/<slug:project>/traces/", include("inference.urls")),
    path("p/<slug:project>/memory/", include("memory.urls")),
    path("p/<slug:project>/review/", include("review.queue.urls")),
    path("p/<slug:project>/metrics/", include("review.queue.metrics_urls")),
    path("p/<slug:project>/dashboard/", observability.dashboard, name="dashboard"),
    path("p/<slug:project>/jobs/<int:pk>/", job_views.job_detail, name="job_detail"),
    path("p/<slug:project>/", include("taxonomy.urls")),
]
