"""``manage.py bench_demo_asks`` — how often the demo asks instead of answering (issue 27, item 2).

Imports ``packs/demo/pack.yaml`` into a new project, publishes it (which calibrates the release's ask
threshold, ``inference.learning.calibration``) and runs ``inference.pipeline.run_inference`` as a
customer on every prompt of ``packs/demo/traffic.yaml`` whose intent is *covered* (has ``served_by``
nodes). Prints the ask threshold, then per outcome kind how many covered prompts got it, how many were
asked by the low-confidence rules (a CLARIFY whose active check is of reason ``abstained`` or
``vague``), how many landed on a serving node, and each prompt that was asked. Run it on an empty data
folder: ``ARG_DATA_DIR=$(mktemp -d) .venv/bin/python manage.py migrate && … bench_demo_asks``.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import yaml
from django.core.management.base import BaseCommand

REPO = Path(__file__).resolve().parents[3]


class Command(BaseCommand):
    help = "Covered demo prompts: how many are answered, and how many are asked about"

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--pack", default=str(REPO / "packs" / "demo" / "pack.yaml"))
        parser.add_argument("--traffic", default=str(REPO / "packs" / "demo" / "traffic.yaml"))
        parser.add_argument("--slug", default="bench-demo-asks")

    def handle(self, *args: Any, **options: Any) -> None:
        from inference.contracts import RequestContext
        from inference.pipeline import InferenceRequest, run_inference
        from ontology.releases import release_publish, release_snapshot
        from taxonomy.packs import pack_import, pack_read

        project = pack_import(pack_read(Path(options["pack"])), project_slug=options["slug"]).project
        snapshot = release_snapshot(release=release_publish(project=project, actor=None))
        found = snapshot.documents.get("low_confidence") or {}
        self.stdout.write(f"ask threshold {found.get('threshold')} ({found.get('method', 'none')})")
        traffic = yaml.safe_load(Path(options["traffic"]).read_text(encoding="utf-8"))
        kinds: Counter[str] = Counter()
        asked: list[tuple[str, float, str]] = []
        served = total = 0
        for intent in traffic["intents"]:
            if not intent.get("served_by"):
                continue
            for prompt in intent["prompts"]:
                total += 1
                result = run_inference(
                    InferenceRequest(
                        f"bench-{total}",
                        project,
                        prompt,
                        RequestContext(),
                        default_role="customer",
                        snapshot=snapshot,
                    )
                )
                outcome = result.outcome
                kind = str(outcome.kind) if outcome is not None else "ERROR"
                kinds[kind] += 1
                check = outcome.active_check if outcome is not None else None
                confidence = result.weaver.confidence if result.weaver is not None else 0.0
                if check is not None and check.reason in ("abstained", "vague"):
                    asked.append((prompt, confidence, check.reason))
                reached = {result.landing.node_start} if result.landing is not None else set()
                if result.route is not None:
                    reached |= {result.route.target, *result.route.path_nodes}
                served += bool(reached & set(intent["served_by"]))
        self.stdout.write(f"covered prompts {total}; landed on a serving node {served}")
        for kind, count in sorted(kinds.items()):
            self.stdout.write(f"  {kind:14} {count}")
        self.stdout.write(f"asked by the low-confidence rules: {len(asked)}")
        for prompt, confidence, reason in asked:
            self.stdout.write(f"  {confidence:.2f} {reason:9} {prompt}")
        self.stdout.write(
            f"SUMMARY covered={total} asked={len(asked)} served={served} "
            + " ".join(f"{k.lower()}={v}" for k, v in sorted(kinds.items()))
        )
