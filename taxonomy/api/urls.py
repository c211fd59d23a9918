from django.urls import include, path
from rest_framework.routers import SimpleRouter

from . import views

router = SimpleRouter(trailing_slash=True)
router.register("clusters", views.ClusterViewSet, basename="cluster")
router.register("labels", views.LabelViewSet, basename="label")
router.register("incompatibilities", views.IncompatibilityViewSet, basename="incompatibility")
router.register("typologies", views.TypologyViewSet, basename="typology")
router.register("policies", views.PolicyViewSet, basename="policy")
router.register("roles", views.RoleViewSet, basename="role")
router.register("audit", views.AuditViewSet, basename="audit")

urlpatterns = [path("projects/<slug:project>/", include(router.urls))]
