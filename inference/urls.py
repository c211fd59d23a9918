from django.urls import path

from inference import views, views_preview

app_name = "inference"

urlpatterns = [
    path("", views.trace_list, name="traces"),
    path("label-preview/<str:label_id>/", views_preview.label_preview_panel, name="label_preview"),
    path("<str:request_id>/", views.trace_detail, name="trace_detail"),
]
