from django.apps import AppConfig


class ReviewConfig(AppConfig):
    """Proposals of the offline loop, its Celery tasks and the human review queue."""

    name = "review"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # imported here, not at module top: these modules import models, which need the app registry
        from ontology.releases import CONTEXT_HOOKS
        from review.loop.confidence_boost import DOCUMENT, active_check_boost
        from review.loop.run import proposals_sent_to_review
        from review.queue.notifications import on_proposals_sent_to_review

        CONTEXT_HOOKS[DOCUMENT] = active_check_boost
        proposals_sent_to_review.connect(on_proposals_sent_to_review, dispatch_uid="review-pending-notify")
