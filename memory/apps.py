from django.apps import AppConfig


class MemoryConfig(AppConfig):
    """Episodic memory, the Info Registry, the PII guard, memory edges and alias-safe MemoryRead."""

    name = "memory"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # imported here, not at module top: the services import models, which need the app registry
        from memory.services.consolidation import ConsolidationParams

        ConsolidationParams.from_settings()  # a misconfigured MEMORY_CONSOLIDATION fails at start, not at night
