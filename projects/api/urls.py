from django.urls import path

from . import views

urlpatterns = [
    path("projects/", views.ProjectListView.as_view(), name="api-project-list"),
    path("whoami/", views.WhoAmIView.as_view(), name="api-whoami"),
]
