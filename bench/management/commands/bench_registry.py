"""``manage.py bench_registry --pairs PAIRS.json`` — Info Registry dedup quality; ``--units N`` — write
latency with N InfoUnits in the registry.

PAIRS.json is a JSON list of ``{"a": text, "b": text, "same": true|false}`` (optional ``info_type``,
``scope``, ``label``, ``kind``). Each pair writes ``a`` then ``b`` through the real write path under an
InfoKey of its own; the decision on ``b`` is counted. The last line is
``SUMMARY fmr=<pct> dup_recall=<pct> unsure=<pct> pairs=<n>`` (false-merge rate = wrong MATCH among
all MATCH decisions; duplicate recall = MATCH among the ``same`` pairs; UNSURE waits for review).

The checked-in pair files are development data (``pairs_v1_tuning``, ``pairs_v1_heldout`` …
``pairs_v5_heldout``: each was held out once, then read), ``pairs_v6_heldout.json`` (pairs never read,
but run three times) and ``pairs_v7_heldout.json``, the frozen held-out file of the cross-encoder work
(its sha256 and every run on it are in docs/benchmarks.md).
``--learned`` runs the comparator with its learned grey-zone model
(off by default, see ``memory.comparator.decision.LEARNED_DEFAULT``); ``--cross`` runs it with the
pair cross-encoder's grey-zone check (``memory.comparator.decision.CROSS_DEFAULT``; trained first when
its weights are missing, see ``manage.py train_registry_comparator``). ``--units 100000`` pre-fills that
many InfoUnits with a bulk path, then times ``--writes`` real writes (the last line is ``LATENCY …``).
``--identity-slack N`` sets the identity gate's bar for the run (``memory.comparator.identity``; default
2, ``-1`` switches the gate off and gives the comparator as it was before the gate).
Everything runs in a throw-away project, deleted afterwards (``--keep`` keeps it).
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from bench.registry.runner import run_latency, run_pairs
from memory.pairs import RESOURCES_DIR, pairs_load


class Command(BaseCommand):
    help = (
        "Info Registry benchmark: --pairs PAIRS.json counts MATCH / NEW / UNSURE on labelled fact pairs "
        "(last line SUMMARY fmr=… dup_recall=… unsure=… pairs=…); --units N measures the write latency "
        "with N InfoUnits pre-filled (last line LATENCY …)."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--pairs", help="JSON list of {a, b, same} objects")
        parser.add_argument("--units", type=int, default=0, help="pre-fill this many InfoUnits, time writes")
        parser.add_argument("--writes", type=int, default=300, help="real writes timed in --units mode")
        parser.add_argument("--units-per-key", type=int, default=100, help="InfoUnits per pre-filled InfoKey")
        parser.add_argument(
            "--distinctions", type=int, default=0, help="term distinctions pre-filled in --units mode"
        )
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument("--keep", action="store_true", help="keep the benchmark project")
        parser.add_argument(
            "--learned", action="store_true", help="use the comparator's learned grey-zone model for this run"
        )
        parser.add_argument(
            "--cross", action="store_true", help="use the pair cross-encoder's grey-zone check for this run"
        )
        parser.add_argument(
            "--promote",
            action="store_true",
            help="promote staged pairs nothing distinguishes (off by default)",
        )
        parser.add_argument(
            "--cross-demote", type=float, help="with --cross: this demote bar, not the default"
        )
        parser.add_argument(
            "--identity-slack",
            type=int,
            help="the identity gate's bar: content words left unexplained that an automatic merge "
            "tolerates (default 2); -1 switches the gate off",
        )
        parser.add_argument(
            "--cross-promote", type=float, help="with --cross: this promote bar, not the default"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["pairs"] and not options["units"]:
            raise CommandError("give --pairs PAIRS.json and/or --units N")
        if options["units"] < 0 or options["writes"] < 1 or options["units_per_key"] < 1:
            raise CommandError("--units ≥ 0, --writes ≥ 1 and --units-per-key ≥ 1")
        if options["distinctions"] < 0:
            raise CommandError("--distinctions ≥ 0")
        from memory.comparator import decision

        previous = decision.LEARNED_DEFAULT, decision.CROSS_DEFAULT
        decision.LEARNED_DEFAULT = options["learned"] or previous[0]
        decision.CROSS_DEFAULT = options["cross"] or previous[1]
        try:
            if decision.CROSS_DEFAULT:
                from memory.cross_encoder import cross_encoder_ensure

                cross_encoder_ensure(report=self.stdout.write)
            self._run(options)
        finally:
            decision.LEARNED_DEFAULT, decision.CROSS_DEFAULT = previous

    def _run(self, options: dict[str, Any]) -> None:
        report = self.stdout.write
        from memory.comparator import decision

        extras = [
            name
            for name, on in (
                ("learned model", decision.LEARNED_DEFAULT),
                ("cross-encoder", decision.CROSS_DEFAULT),
            )
            if on
        ]
        report(f"comparator: {' + '.join(['rules', *extras])}")
        if options["units"]:
            texts = [
                p.a
                for name in ("pairs_v1_tuning.json", "pairs_v1_heldout.json")
                for p in pairs_load(RESOURCES_DIR / name)
            ]
            latency = run_latency(
                texts,
                units=options["units"],
                writes=options["writes"],
                units_per_key=options["units_per_key"],
                seed=options["seed"],
                report=report,
                keep=options["keep"],
                distinctions=options["distinctions"],
            )
            report(f"decisions: {json.dumps(dict(latency.decisions), sort_keys=True)}")
            report(latency.summary())
        if options["pairs"]:
            try:
                pairs = pairs_load(options["pairs"])
            except (OSError, ValueError) as exc:
                raise CommandError(str(exc)) from exc
            if not pairs:
                raise CommandError(f"{options['pairs']}: no pair")
            from dataclasses import replace

            from memory.comparator import DEFAULT_PARAMS

            params = replace(DEFAULT_PARAMS, promote=True) if options["promote"] else DEFAULT_PARAMS
            for name in ("cross_demote", "cross_promote"):
                if options.get(name) is not None:
                    params = replace(params, **{name: options[name]})
            slack = options.get("identity_slack")
            if slack is not None:
                params = replace(params, identity=slack >= 0, identity_slack=max(slack, 0))
            report(f"promotions: {'on' if params.promote else 'off'}")
            report(
                f"identity gate: at most {params.identity_slack} unexplained words"
                if params.identity
                else "identity gate: off"
            )
            report(f"cross-encoder bars: demote < {params.cross_demote}, promote ≥ {params.cross_promote}")
            result = run_pairs(pairs, report=report, keep=options["keep"], params=params)
            report(
                f"MATCH {result.matches} (false {result.false_merges}), same pairs {result.same}, "
                f"UNSURE {result.unsure}"
            )
            report(result.summary())
