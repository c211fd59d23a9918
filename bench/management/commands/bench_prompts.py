"""``manage.py bench_prompts [--set bench/data/demo_prompts.yaml] [--json OUT]`` — the helpful-answer
rate of the demo on a prompt set written before any tuning (``bench.prompts`` defines the terms).

Loads the set's pack (``--pack`` overrides it) into the current data folder, publishes it, and sends
every prompt through the service the API's ``POST /api/v1/infer`` calls (``inference_call``: the same
body reading, pipeline and log row; no network), as the prompt's role. Each result is judged against
the prompt's acceptable outcomes. Prints the rate per category and overall, every miss (prompt, got,
expected), and ends with::

    SUMMARY prompts=<n> acceptable=<n> rate=<%> worst_category=<name>:<%> goal_met=<yes|no>

The goal (issue 27) is ≥ 85 % acceptable with no category under 70 %. Run it on an empty data folder
(``ARG_DATA_DIR=$(mktemp -d)``); a folder that already holds the pack's project is refused.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

DEFAULT_SET = Path(settings.BASE_DIR) / "bench" / "data" / "demo_prompts.yaml"


class Command(BaseCommand):
    help = "Route a prompt set through the real pipeline and print the helpful-answer rate by category."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--set", default=str(DEFAULT_SET), help="an arg-prompt-set/1 file")
        parser.add_argument("--pack", help="the pack to load (default: the set's own `pack`)")
        parser.add_argument("--json", help="also write every figure and every judged prompt to this file")

    def handle(self, *args: Any, **options: Any) -> None:
        import yaml

        from bench.prompts import PromptSetError, prompt_set_read, report, row_json, summary_line, table

        set_path = Path(options["set"])
        if not set_path.is_file():
            raise CommandError(f"--set {set_path}: no such file")
        try:
            unchecked = prompt_set_read(set_path)
        except PromptSetError as exc:
            raise CommandError(f"{set_path}:\n{exc}") from exc
        pack_path = Path(options["pack"]) if options["pack"] else unchecked.pack
        if pack_path is None:
            raise CommandError("the set names no `pack`: give --pack")
        if not pack_path.is_absolute():
            pack_path = Path(settings.BASE_DIR) / pack_path
        pack = yaml.safe_load(pack_path.read_text(encoding="utf-8"))
        try:
            prompt_set = prompt_set_read(
                set_path,
                known_nodes=(n["id"] for n in pack.get("nodes") or ()),
                known_roles=(r["key"] for r in pack.get("roles") or ()),
            )
        except PromptSetError as exc:
            raise CommandError(f"{set_path} against {pack_path}:\n{exc}") from exc

        project = self._published(pack_path, pack["project"]["slug"])
        rows = self._routed(project, prompt_set.prompts)
        figures = report(rows)
        for line in table(rows, figures):
            self.stdout.write(line)
        if options["json"]:
            Path(options["json"]).write_text(
                json.dumps(
                    {
                        "set": str(set_path),
                        "set_sha256": hashlib.sha256(set_path.read_bytes()).hexdigest(),
                        "pack": str(pack_path),
                        "pack_sha256": hashlib.sha256(pack_path.read_bytes()).hexdigest(),
                        **figures,
                        "prompts": [row_json(r) for r in rows],
                    },
                    indent=2,
                    ensure_ascii=False,
                ),
                encoding="utf-8",
            )
        self.stdout.write(summary_line(figures))

    def _published(self, pack_path: Path, slug: str) -> Any:
        from projects.models import Project

        call_command("migrate", verbosity=0)  # the benchmark runs on an empty data folder
        if Project.objects.filter(slug=slug).exists():
            raise CommandError(
                f"project {slug!r} exists already: run on an empty data folder (ARG_DATA_DIR=$(mktemp -d))"
            )
        self.stderr.write(f"… loading and publishing {pack_path}")
        call_command("import_pack", str(pack_path), "--no-progress", stdout=self.stderr, stderr=self.stderr)
        call_command(
            "publish_release", slug, "--notes", "bench_prompts", stdout=self.stderr, stderr=self.stderr
        )
        return Project.objects.get(slug=slug)

    def _routed(self, project: Any, cases: Any) -> list[Any]:
        from bench.prompts import judged, observe
        from inference.services import Caller, inference_call

        rows = []
        for n, case in enumerate(cases, start=1):
            request_id = f"bench-prompts-{case.id}"
            body = {
                "prompt": case.text,
                "context": {"role": case.role, "user_id": f"bench-{case.id}", **case.context},
            }
            started = time.perf_counter()
            result = inference_call(
                caller=Caller(
                    project=project, request_id=request_id, name="bench:prompts", user_answer=False
                ),
                body=body,
            )
            ms = (time.perf_counter() - started) * 1000
            rows.append(judged(case, observe(result), ms))
            if n % 20 == 0:
                self.stderr.write(f"… {n}/{len(cases)} prompts routed")
        return rows
