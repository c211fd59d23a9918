from django.urls import path

app_name = "taxonomy"
urlpatterns: list = []
