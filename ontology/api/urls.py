from django.urls import path

from . import views

P = "projects/<slug:project>/"
urlpatterns = [
    path(P + "nodes/", views.NodeListView.as_view(), name="node-list"),
    path(P + "nodes/<str:node_id>/", views.NodeDetailView.as_view(), name="node-detail"),
    path(P + "nodes/<str:node_id>/status/", views.NodeStatusView.as_view(), name="node-status"),
    path(
        P + "nodes/<str:node_id>/neighbourhood/", views.NeighbourhoodView.as_view(), name="node-neighbourhood"
    ),
    path(P + "edges/", views.EdgeView.as_view(), name="edge"),
    path(P + "aliases/", views.AliasView.as_view(), name="alias"),
    path(P + "releases/", views.ReleaseListView.as_view(), name="release-list"),
    path(P + "releases/draft/", views.DraftReviewView.as_view(), name="release-draft"),
    path(P + "releases/<int:version>/", views.ReleaseDetailView.as_view(), name="release-detail"),
    path(
        P + "releases/<int:version>/activate/", views.ReleaseActivateView.as_view(), name="release-activate"
    ),
    path(P + "releases/<int:version>/diff/", views.ReleaseDiffView.as_view(), name="release-diff"),
]
