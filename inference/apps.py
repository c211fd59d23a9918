from django.apps import AppConfig


class InferenceConfig(AppConfig):
    """The online ARG pipeline (§2 steps 1–10): envelope, Policy Manager, candidates, Context Weaver,
    landing, scoring, traversal, Action / Info / Memory, logging."""

    name = "inference"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # imported here, not at module top: these modules import models, which need the app registry
        from inference.learning.calibration import calibrate_ask_threshold
        from inference.learning.classifier import train_label_classifier
        from inference.learning.encoder_finetune import release_encoder_hook
        from inference.runtime import runtime_for
        from inference.steps.info import info_sentences_hook
        from inference.steps.language import release_languages_hook
        from ontology.releases import ENCODER_HOOKS, GRAPH_HOOKS, PUBLISH_HOOKS
        from ontology.snapshot_registry import LOAD_HOOKS

        if release_encoder_hook not in ENCODER_HOOKS:
            ENCODER_HOOKS.append(release_encoder_hook)
        if train_label_classifier not in PUBLISH_HOOKS:
            PUBLISH_HOOKS.append(train_label_classifier)
        if calibrate_ask_threshold not in PUBLISH_HOOKS:  # the ask threshold, on held-out examples
            PUBLISH_HOOKS.append(calibrate_ask_threshold)
        if info_sentences_hook not in GRAPH_HOOKS:
            GRAPH_HOOKS.append(info_sentences_hook)
        if release_languages_hook not in GRAPH_HOOKS:  # the languages its examples cover
            GRAPH_HOOKS.append(release_languages_hook)
        if runtime_for not in LOAD_HOOKS:  # a snapshot's runtime is built as it loads, not by a request
            LOAD_HOOKS.append(runtime_for)
