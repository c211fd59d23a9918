"""``manage.py bench_offline_loop --logs 100000 [--distinct 1500] [--seed 1]`` — time one night over many logs.

Builds the simulation's hidden domain (``bench.simulation.domain``, with its planted defects), routes
``--distinct`` seeded prompts through the real pipeline (each leaves a real InferenceLog), then
bulk-creates ``--logs`` synthetic InferenceLog rows by copying those routed requests with other users,
channels and sessions, and with outcomes drawn from the domain's oracle the way ``feedback_record``
would have set them (some users confirm or deny, most stay silent). Then one night of the offline loop
runs in this process and the time of each step is printed. Replay samples (seeded) instead of replaying
every log. Last line::

    SUMMARY logs=<n> seconds=<total> collect_s=<s> generate_s=<s> replay_s=<s> proposals=<n>

Run it on an empty data folder (``ARG_DATA_DIR=$(mktemp -d)``).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from django.core.management import call_command
from django.core.management.base import BaseCommand
from tqdm import tqdm

from inference.models import InferenceLog

COPIED = (
    "release_id",
    "release_version",
    "role_key",
    "typology_key",
    "prompt",
    "language",
    "policy_state",
    "policy_constraints",
    "policy_reasons",
    "labels_raw",
    "labels_blocked",
    "weaver",
    "labels_final",
    "confidence",
    "flags",
    "landing",
    "path_nodes",
    "path_edges",
    "target_node",
    "fast_path",
    "outcome_kind",
    "action",
    "c_info",
    "active_check",
    "outcome_status",
    "answer",
    "outcome_details",
    "timings_ms",
)


class Command(BaseCommand):
    help = "Time one night of the offline loop over --logs synthetic interactions (bulk-created)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--logs", type=int, default=100_000)
        parser.add_argument("--distinct", type=int, default=1500, help="prompts routed through the pipeline")
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("--batch", type=int, default=5000)

    def handle(self, *args: Any, **options: Any) -> None:
        from bench.simulation.domain import INTENTS, SLUG, serves
        from bench.simulation.runner import World, _chunk, _run
        from review.loop.run import STEPS, offline_loop_run

        call_command("migrate", verbosity=0)
        rng = np.random.default_rng(options["seed"])
        started = time.perf_counter()
        world = World(f"{SLUG}-bench", options["seed"])
        weights = np.array([i.weight for i in INTENTS])
        weights /= weights.sum()
        templates: list[tuple[dict[str, Any], bool]] = []
        for i in tqdm(range(options["distinct"]), desc="routing", file=self.stderr._out):
            intent = INTENTS[int(rng.choice(len(INTENTS), p=weights))]
            user = world.users[int(rng.integers(len(world.users)))]
            request_id = f"bench-{options['seed']}-{i}"
            result = _run(world, world.prompt(intent), user, request_id, log=True)
            target = result.route.target if result.route else None
            row = InferenceLog.objects.filter(request_id=request_id).values(*COPIED).get()
            templates.append((row, serves(_chunk(world, target), intent)))
        route_s = time.perf_counter() - started

        t = time.perf_counter()
        total = options["logs"] - options["distinct"]
        batch: list[InferenceLog] = []
        for n in tqdm(range(max(0, total)), desc="bulk-create", file=self.stderr._out):
            row, good = templates[int(rng.integers(len(templates)))]
            user, channel = world.users[int(rng.integers(len(world.users)))]
            values = dict(row)
            silent = True
            kind = values["outcome_kind"]
            if kind in ("INFO", "MEMORY") and rng.random() < (0.55 if values["active_check"] else 0.12):
                silent = False
                helpful = rng.random() < (0.9 if good else 0.1)
                values["outcome_status"] = "INFO_CONFIRMED_SUCCESS" if helpful else "INFO_LOW_CONFIDENCE"
            elif kind == "ACTION" and rng.random() < 0.7:
                silent = False
                ok = rng.random() < (0.95 if good else 0.05)
                values["outcome_status"] = "ACTION_CONFIRMED_SUCCESS" if ok else "ACTION_REPORTED_FAILURE"
            session = f"bench-{options['seed']}-s{n}"
            batch.append(
                InferenceLog(
                    project=world.project,
                    request_id=f"bench-{options['seed']}-c{n}",
                    session_id=session,
                    context={"channel": channel, "user_id": user, "session_id": session},
                    silent_outcome=silent,
                    **values,
                )
            )
            if len(batch) >= options["batch"]:
                InferenceLog.objects.bulk_create(batch)
                batch = []
        if batch:
            InferenceLog.objects.bulk_create(batch)
        create_s = time.perf_counter() - t
        logs = InferenceLog.objects.filter(project=world.project).count()
        self.stdout.write(f"{logs} logs ready (routing {route_s:.1f} s, bulk-create {create_s:.1f} s)")

        bar = tqdm(total=len(STEPS), unit="step", file=self.stderr._out)
        done: set[str] = set()

        def progress(step: str, fraction: float, message: str) -> None:
            bar.set_description(f"{step}: {message}"[:60])
            if fraction >= 1.0 and step not in done:
                done.add(step)
                bar.update(1)

        t = time.perf_counter()
        run = offline_loop_run(
            project=world.project, idempotency_key=f"bench-{options['seed']}", progress=progress
        )
        night_s = time.perf_counter() - t
        bar.close()
        steps = run.stats.get("steps", {})
        for step in STEPS:
            self.stdout.write(f"{step:11s} {steps.get(step, {}).get('seconds', 0):8.1f} s")
        collect = steps.get("collect", {})
        self.stdout.write(f"collect timings: {collect.get('timings')}")
        self.stdout.write(f"bins: {steps.get('bin', {}).get('bins')}; run #{run.pk} {run.status}")
        self.stdout.write(
            f"SUMMARY logs={logs} seconds={night_s:.1f} collect_s={collect.get('seconds', 0):.1f} "
            f"generate_s={steps.get('generate', {}).get('seconds', 0):.1f} "
            f"replay_s={steps.get('replay', {}).get('seconds', 0):.1f} proposals={run.proposals.count()}"
        )
