"""``manage.py bench_loop_real [--seed N] [--domains a,b,c] [--nights 5] [--requests 500] [--lifecycle] [--json FILE]``.

The offline loop measured on real utterances (issue 25): a world made from CLINC150 train/validation
utterances with planted defects of every kind the loop claims (``bench.loop_real.world``), nights of
real traffic through the API with explicit feedback from some users and silence from the rest, the
real loop every night, its proposals judged against the ground truth and the visible queue approved
through the review API (``bench.loop_real.runner``). ``--lifecycle`` adds two defects for the lifecycle
generators (a misfiled label → LABEL_REATTACH, a failing retired Action → OBSOLESCENCE) and a simulated
clock (night *k* on day *k*); without it the world is issue 25's. Prints precision and recall per kind, the share
of planted defects surfaced to a reviewer, the auto-commits (and whether any rests on silence), held-out
routing accuracy before/after, the false proposals per night, and a last line::

    SUMMARY seed=<n> domains=<a,b,c> nights=<n> requests=<n> proposals=<n> precision=<x> recall=<x>
    surfaced=<x> autocommits=<n> silence_autocommits=<n> false_autocommits=<n> accuracy_before=<pct>
    accuracy_after=<pct> review_gain=<pts> true_only_gain=<pts> false_per_night=<n,n,…>

Run it on an empty data folder: ``ARG_DATA_DIR=$(mktemp -d) HF_HUB_OFFLINE=1 .venv/bin/python manage.py
bench_loop_real`` (migrations are applied first). The simulated world (``simulate_offline``) stays the
second benchmark of the loop.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from bench.loop_real.runner import run
from bench.loop_real.world import DATA_DIR, build_world, load_clinc


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}"


class Command(BaseCommand):
    help = "The offline loop on a CLINC150 world with planted defects; prints a SUMMARY line."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--seed", type=int, default=1, help="world (defect draw, pools) and traffic seed")
        parser.add_argument(
            "--domains",
            default="",
            help="comma-separated CLINC150 domains (default: three drawn by the seed among the task domains)",
        )
        parser.add_argument("--nights", type=int, default=5)
        parser.add_argument("--requests", type=int, default=500, help="turns sent per night")
        parser.add_argument(
            "--feedback-share", type=float, default=0.4, help="users who say whether it helped"
        )
        parser.add_argument(
            "--action-feedback-share", type=float, default=0.7, help="Action results reported back"
        )
        parser.add_argument(
            "--followup-share", type=float, default=0.7, help="P turns followed by Q in the same session"
        )
        parser.add_argument(
            "--pair-share", type=float, default=0.1, help="other turns followed by a random same-domain one"
        )
        parser.add_argument("--examples", type=int, default=10, help="validated examples per label (TRAIN)")
        parser.add_argument(
            "--eval-per-intent", type=int, default=10, help="held-out VAL utterances per intent"
        )
        parser.add_argument(
            "--reviewer",
            choices=("all", "true", "none"),
            default="all",
            help="approve the whole visible queue (a trusting reviewer), only its true proposals, or nothing",
        )
        parser.add_argument(
            "--no-counterfactual",
            action="store_true",
            help="skip the nightly accuracy of a shadow release with only the queue's true proposals",
        )
        parser.add_argument(
            "--data", default=str(DATA_DIR), help="folder of clinc150_train_val.json + domains.json"
        )
        parser.add_argument(
            "--lifecycle",
            action="store_true",
            help=(
                "also plant the lifecycle defects — misfiled (a label and its node under another domain's "
                "cluster → LABEL_REATTACH) and retired-action (a failing Action sharing the intent's label → "
                "OBSOLESCENCE) — and put night k on day k (the lifecycle generators count distinct days); "
                "without it the world is issue 25's"
            ),
        )
        parser.add_argument("--json", dest="json_path", default="", help="write the full report to this file")

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("migrate", verbosity=0)
        data, domains = load_clinc(Path(options["data"]))
        chosen = tuple(d.strip() for d in options["domains"].split(",") if d.strip())
        try:
            world = build_world(
                data,
                domains,
                seed=options["seed"],
                chosen=chosen,
                examples_per_label=options["examples"],
                eval_per_intent=options["eval_per_intent"],
                nights=options["nights"],
                project_slug=f"loop-real-{options['seed']}",
                lifecycle=options["lifecycle"],
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        say = self.stdout.write
        say(f"planted defects (seed {world.seed}, domains {', '.join(world.domains)}):")
        for d in world.defects:
            details = {k: v for k, v in d.as_json().items() if k not in ("key", "kind", "variant", "intents")}
            say(f"  {d.key:10s} {d.kind:12s} {d.variant}: {', '.join(d.intents)} {details}")
        report = run(
            world,
            nights=options["nights"],
            requests=options["requests"],
            feedback_share=options["feedback_share"],
            action_feedback_share=options["action_feedback_share"],
            followup_share=options["followup_share"],
            pair_share=options["pair_share"],
            reviewer=options["reviewer"],
            counterfactual=not options["no_counterfactual"],
            say=say,
        )
        say("")
        say(
            f"{'kind':14s} {'proposals':>9s} {'true':>5s} {'precision':>9s} {'planted':>7s} {'found':>5s} "
            f"{'recall':>6s} {'auto':>4s} {'queue':>5s} {'backlog':>7s}"
        )
        for kind, row in report.per_kind.items():
            precision = "—" if row["precision"] is None else f"{row['precision']:.2f}"
            recall = "—" if row["recall"] is None else f"{row['recall']:.2f}"
            say(
                f"{kind:14s} {row['proposals']:9d} {row['true']:5d} {precision:>9s} {row['planted']:7d} "
                f"{row['found']:5d} {recall:>6s} {row['auto']:4d} {row['queue']:5d} {row['backlog_only']:7d}"
            )
        say("")
        say(
            f"{'defect':10s} {'kind':12s} {'found':>5s} {'queue':>5s} {'auto':>4s} {'backlog':>7s} "
            f"{'applied':>7s} {'acc before':>10s} {'after':>6s}  proposals"
        )
        for key, row in report.per_defect.items():
            say(
                f"{key:10s} {row['kind']:12s} {'yes' if row['found'] else 'no':>5s} "
                f"{'yes' if row['surfaced'] else 'no':>5s} {'yes' if row['autocommitted'] else 'no':>4s} "
                f"{'yes' if row['backlog_only'] else 'no':>7s} {'yes' if row['applied'] else 'no':>7s} "
                f"{_pct(row['accuracy_before']):>10s} {_pct(row['accuracy_after']):>6s}  {', '.join(row['proposals'])}"
            )
        say("")
        say(
            f"{'night':>5s} {'requests':>8s} {'signals':>7s} {'served':>6s} {'proposals':>9s} {'false':>5s} "
            f"{'new false':>9s} {'queue':>5s} {'auto':>4s} {'acc before':>10s} {'after':>6s} {'true only':>9s}"
        )
        for n in report.nights:
            say(
                f"{n.night:5d} {n.requests:8d} {n.feedback:7d} {_pct(n.served):>6s} {sum(n.proposals.values()):9d} "
                f"{n.false_proposals:5d} {n.new_false:9d} {len(n.visible):5d} {len(n.autocommitted):4d} "
                f"{_pct(n.accuracy_before_review):>10s} {_pct(n.accuracy_after_review):>6s} "
                f"{_pct(n.accuracy_true_only):>9s}"
            )
        say("")
        for a in report.autocommits:
            say(
                f"auto-commit {a['kind']}#{a['proposal']} ({a['defect'] or 'false'}): silence-dominated "
                f"{a['silence_dominated']}, confirmed gain {a['confirmed_gain']} — {a['title']}"
            )
        for key, gates in report.merge_gates.items():
            say(f"{key} gates on the last night: {gates}")
        for key, gates in report.split_gates.items():
            say(f"{key} gates on the last night: {gates}")
        for key, gates in report.reattach_gates.items():
            say(f"{key} gates on the last night: {gates}")
        for drop in report.intent_drops:
            say(f"intent {drop['intent']}: held-out accuracy {_pct(drop['before'])} → {_pct(drop['after'])}")
        say(
            f"held-out accuracy: {_pct(report.accuracy_start['all'])} → {_pct(report.accuracy_end['all'])} "
            f"(defect intents {_pct(report.accuracy_start['defect_intents'])} → "
            f"{_pct(report.accuracy_end['defect_intents'])}, clean {_pct(report.accuracy_start['clean_intents'])} → "
            f"{_pct(report.accuracy_end['clean_intents'])}); wall {report.seconds:.0f} s"
        )
        if options["json_path"]:
            payload = {
                "world": report.world,
                "reviewer": report.reviewer,
                "defect_live": report.defect_live,
                "accuracy_start": report.accuracy_start,
                "accuracy_end": report.accuracy_end,
                "per_kind": report.per_kind,
                "per_defect": report.per_defect,
                "precision": report.precision,
                "recall": report.recall,
                "surfaced": report.surfaced,
                "autocommits": report.autocommits,
                "nights": [n.__dict__ for n in report.nights],
                "sightings": [s.as_json() for s in report.sightings],
                "proposals": report.proposals,
                "intent_drops": report.intent_drops,
                "merge_gates": report.merge_gates,
                "split_gates": report.split_gates,
                "reattach_gates": report.reattach_gates,
                "seconds": report.seconds,
                "summary": report.summary_line(),
            }
            Path(options["json_path"]).write_text(json.dumps(payload, indent=1, default=str))
            say(f"report written to {options['json_path']}")
        say(report.summary_line())
