from django.urls import path

from inference import views

app_name = "inference"

urlpatterns = [
    path("", views.trace_list, name="traces"),
    path("<str:request_id>/", views.trace_detail, name="trace_detail"),
]
