from django.urls import path

from inference.api import views

urlpatterns = [
    path("infer", views.InferView.as_view(), name="infer"),
    path("feedback", views.FeedbackView.as_view(), name="feedback"),
    path("projects/<slug:project>/erasures/", views.ErasureView.as_view(), name="erasures"),
]
