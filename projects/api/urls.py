from django.urls import path

from . import jobs, views

urlpatterns = [
    path("projects/", views.ProjectListView.as_view(), name="api-project-list"),
    path("whoami/", views.WhoAmIView.as_view(), name="api-whoami"),
    path("projects/<slug:project>/jobs/<int:pk>/", jobs.JobDetailView.as_view(), name="api-job-detail"),
]
