from django.urls import include, path
from rest_framework.routers import SimpleRouter

from . import views
from .pack_views import PackView, TypologyCopyView, TypologyTemplateListView
from .skos_views import SkosView

router = SimpleRouter(trailing_slash=True)
router.register("clusters", views.ClusterViewSet, basename="cluster")
router.register("labels", views.LabelViewSet, basename="label")
router.register("incompatibilities", views.IncompatibilityViewSet, basename="incompatibility")
router.register("typologies", views.TypologyViewSet, basename="typology")
router.register("policies", views.PolicyViewSet, basename="policy")
router.register("roles", views.RoleViewSet, basename="role")
router.register("audit", views.AuditViewSet, basename="audit")

urlpatterns = [
    path("projects/<slug:project>/pack/", PackView.as_view(), name="pack"),
    path(
        "projects/<slug:project>/typologies/copy-template/", TypologyCopyView.as_view(), name="typology-copy"
    ),
    path("typology-templates/", TypologyTemplateListView.as_view(), name="typology-templates"),
    path("projects/<slug:project>/", include(router.urls)),
    path("projects/<slug:project>/skos/", SkosView.as_view(), name="skos"),
]
