from django.urls import include, path
from rest_framework.routers import SimpleRouter

from review.queue.api import views

router = SimpleRouter(trailing_slash=True)
router.register("proposals", views.ProposalViewSet, basename="proposal")
router.register("review/silent-samples", views.SilentSampleViewSet, basename="review-silent-sample")
router.register("review/memory-merges", views.MemoryMergeViewSet, basename="review-memory-merge")
router.register("review/memory-evidence", views.MemoryEvidenceViewSet, basename="review-memory-evidence")
router.register(
    "review/memory-distinctions", views.MemoryDistinctionViewSet, basename="review-memory-distinction"
)
router.register("review/shadow-labels", views.ShadowLabelViewSet, basename="review-shadow-label")
router.register("review/inbox", views.InboxViewSet, basename="review-inbox")

urlpatterns = [path("projects/<slug:project>/", include(router.urls))]
