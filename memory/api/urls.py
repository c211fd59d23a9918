from django.urls import path

from . import views

urlpatterns = [
    path("memory", views.MemoryView.as_view(), name="memory"),
    path("memory/merge-bar", views.MergeBarView.as_view(), name="memory-merge-bar"),
]
