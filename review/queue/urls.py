"""Review UI of one project, mounted at ``/p/<slug:project>/review/`` (namespace ``review``)."""

from django.urls import path

from review.queue import review_lists as lists
from review.queue import views

app_name = "review"

PROPOSAL = "proposals/<int:pk>/"

urlpatterns = [
    path("", views.queue, name="queue"),
    path("publish-approved/", views.publish_approved, name="publish_approved"),
    path(PROPOSAL, views.proposal_detail, name="proposal_detail"),
    path(PROPOSAL + "claim/", views.proposal_claim, name="proposal_claim"),
    path(PROPOSAL + "assign/", views.proposal_assign, name="proposal_assign"),
    path(PROPOSAL + "approve/", views.proposal_approve, name="proposal_approve"),
    path(PROPOSAL + "reject/", views.proposal_reject, name="proposal_reject"),
    path(PROPOSAL + "request-changes/", views.proposal_request_changes, name="proposal_request_changes"),
    path(PROPOSAL + "defer/", views.proposal_defer, name="proposal_defer"),
    path(PROPOSAL + "edit/", views.proposal_edit, name="proposal_edit"),
    path("silent/", lists.silent_list, name="silent_list"),
    path("silent/<str:request_id>/label/", lists.silent_label, name="silent_label"),
    path("merges/", lists.merge_list, name="merge_list"),
    path("merges/<int:pk>/resolve/", lists.merge_resolve, name="merge_resolve"),
    path("labels/", lists.shadow_labels, name="shadow_labels"),
    path("labels/<str:label_id>/activate/", lists.label_activate, name="label_activate"),
]
