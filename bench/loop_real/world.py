"""A real-utterance world for the offline-loop benchmark: a CLINC150 knowledge pack with planted defects.

Data: CLINC150 **train and validation** only (``clinc150_train_val.json``, keys ``train`` and ``val``;
the test split is never read) and ``domains.json``. A world is a few domains (``--domains``, or a
seeded draw of three among the eight task domains; ``small_talk`` and ``meta`` — chit-chat and yes/no
— are left out of the draw but may be named), every intent of them, and a seed. Per intent the
utterances are split three ways, disjoint by text:

* **examples** — ``examples_per_label`` TRAIN utterances: the label's validated examples, and the three
  quoted in its node's chunk (what a curator wrote);
* **held out** — ``eval_per_intent`` VAL utterances: routing accuracy before and after;
* **traffic** — every other TRAIN and VAL utterance: what users send.

The pack is ``bench.routing_pack`` (domain → cluster, intent → label with its examples, one Info node
per intent) with a three-sentence answer per node — each sentence the intent's name and one of three of
its examples: an answer of one sentence could never be split, a real one has several — and these
planted defects, drawn by the seed over the world's intents (each defect intent used once):

===============  ===========================================================================  =============
defect           what is wrong in the starting pack                                            fixed by
===============  ===========================================================================  =============
split-1          two intents share one node, each with its own label (both on that node)       SPLIT
split-2          two intents share one node and one label (the label's examples are both's)     SPLIT
merge-1          one intent on two near-identical nodes, one label, no edges                   MERGE
merge-2          … two nodes, two near-identical labels (the examples halved), no edges         MERGE
merge-3          … two nodes, one label, both copies with the same neighbours (edges)           MERGE
merge-4          … two nodes, two labels, with edges                                           MERGE
detour           the label sits on a Decision "start" node; the answer (an Action) is         EDGE_ADD
                 reached only through a second Decision (start → more → answer)                start → answer
obsolete         the label sits on a Decision node whose heavy edge leads to a retired         EDGE_INHIBIT
                 procedure (an Action); the answer (an Action) is behind a light edge          start → retired
new-intent       an intent whose node exists but has no label; its traffic starts mid-way      LABEL_ADD
followup         users often ask Q right after P in the same session; no edge joins them       EDGE_ADD P ↔ Q
misfiled         *(--lifecycle)* an intent's label, and its node, filed under another          LABEL_REATTACH
                 domain's cluster (CLINC domains are well separated)                           to its own cluster
retired-action   *(--lifecycle)* a second node carries the intent's label: an Action of a      OBSOLESCENCE
                 retired procedure whose handler fails (``bench.loop_real.retired``), so        of that node
                 every request that lands on it is a FAILURE
===============  ===========================================================================  =============

The last two are planted only with ``lifecycle=True`` (``manage.py bench_loop_real --lifecycle``), after
every other draw and never on an intent another defect uses as a neighbour, so the other defects of a
seed are the same with or without them (issue 25's worlds stay as they were). Their generators need
time: OBSOLESCENCE from persistent failures wants failures on ``min_nights`` distinct days, so with
``--lifecycle`` the runner puts night *k* of *K* on day *k* (``bench.loop_real.runner.night_shift``).
Consolidation (a NODE_ADD from many users' memory writes) is not planted: CLINC traffic writes no
memory; ``simulate_offline`` keeps that defect.

The answers behind a Decision are Action nodes (an action-like intent is drawn for them when the
domain has one; their handler, ``bench.loop_real.handlers``, is a no-op; the retired action's fails): a
semantic jump reaches only informational nodes, so the planted route is the route. The *oracle*: a node
serves intent I when its chunk carries sentences of I's answer (either wording) and of no other; a
retired procedure's sentences are a fact of their own, so that node serves nobody.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench.routing_pack import routing_pack, slug

DATA_DIR = Path("/work/shared/datasets/clinc150")
TASK_DOMAINS = (
    "banking",
    "credit_cards",
    "kitchen_and_dining",
    "home",
    "auto_and_commute",
    "travel",
    "utility",
    "work",
)
SPLITS = ("train", "val")  # never "test": the benchmark reads nothing else
PREFIX = 50  # a fact sentence is recognised by its first characters
HANDLER = "python:bench.loop_real.done"  # registered by bench.loop_real.handlers (a no-op receipt)
FAILING_HANDLER = "python:bench.loop_real.retired"  # registered there too: always fails (retired-action)
# CLINC150 intents that ask for something to be done: preferred for the answers behind a Decision
ACTION_INTENTS = frozenset(
    {
        "freeze_account",
        "pin_change",
        "pay_bill",
        "transfer",
        "order_checks",
        "report_fraud",
        "report_lost_card",
        "credit_limit_change",
        "redeem_rewards",
        "new_card",
        "damaged_card",
        "restaurant_reservation",
        "cancel_reservation",
        "confirm_reservation",
        "play_music",
        "todo_list_update",
        "reminder_update",
        "calendar_update",
        "update_playlist",
        "shopping_list_update",
        "order",
        "next_song",
        "smart_home",
        "uber",
        "schedule_maintenance",
        "share_location",
        "book_flight",
        "book_hotel",
        "car_rental",
        "travel_notification",
        "alarm",
        "timer",
        "make_call",
        "text",
        "flip_coin",
        "roll_dice",
        "find_phone",
        "pto_request",
        "schedule_meeting",
        "direct_deposit",
        "insurance_change",
        "rollover_401k",
        "translate",
    }
)


@dataclass(frozen=True)
class Defect:
    """One planted defect and what a true proposal for it looks like."""

    key: str
    kind: str  # the proposal kind that fixes it
    variant: str
    intents: tuple[str, ...]
    details: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "kind": self.kind,
            "variant": self.variant,
            "intents": list(self.intents),
            **self.details,
        }


@dataclass
class World:
    seed: int
    slug: str
    domains: tuple[str, ...]
    intents: tuple[str, ...]
    domain_of: dict[str, str]
    examples: dict[str, list[str]]
    held_out: dict[str, list[str]]
    traffic: dict[str, list[str]]
    pack: dict[str, Any]
    defects: tuple[Defect, ...]
    sentences: dict[str, str]  # fact sentence prefix → fact key (an intent, or "retired:<intent>")
    new_intent: str
    arrival_night: int
    followup: tuple[str, str]
    text_intent: dict[str, str] = field(default_factory=dict)
    lifecycle: bool = False  # the misfiled and retired-action defects are planted (nights on distinct days)

    def facts_of(self, chunk: str) -> set[str]:
        return {key for prefix, key in self.sentences.items() if prefix in chunk}

    def serves(self, chunk: str, intent: str) -> bool:
        return self.facts_of(chunk) == {intent}

    def partially_serves(self, chunk: str, intent: str) -> bool:
        return intent in self.facts_of(chunk)

    def intents_on(self, night: int) -> list[str]:
        """The intents users ask about on ``night`` (the new intent from its arrival night on)."""
        return [i for i in self.intents if i != self.new_intent or night >= self.arrival_night]

    def summary(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "lifecycle": self.lifecycle,
            "domains": list(self.domains),
            "intents": len(self.intents),
            "labels": len(self.pack["labels"]),
            "nodes": len(self.pack["nodes"]),
            "edges": len(self.pack["edges"]),
            "examples": sum(len(v) for v in self.examples.values()),
            "held_out": sum(len(v) for v in self.held_out.values()),
            "traffic_pool": sum(len(v) for v in self.traffic.values()),
            "new_intent": self.new_intent,
            "arrival_night": self.arrival_night,
            "defects": [d.as_json() for d in self.defects],
        }


def load_clinc(data_dir: Path = DATA_DIR) -> tuple[dict[str, list[list[str]]], dict[str, list[str]]]:
    """(train/val pairs, domain → intents); only the train and validation splits are read."""
    raw = json.loads((data_dir / "clinc150_train_val.json").read_text())
    data = {name: raw[name] for name in SPLITS}
    domains = json.loads((data_dir / "domains.json").read_text())
    return data, domains


def title(intent: str) -> str:
    return intent.replace("_", " ").capitalize()


def _clean(text: str) -> str:
    """An example as a chunk quotes it: no sentence punctuation, no double quotes."""
    return re.sub(r"[.!?\"]+", "", text).strip()


def fact(intent: str, examples: list[str]) -> list[str]:
    """The sentences of an intent's answer: its name and one quoted example each (three sentences)."""
    t, e = title(intent), [_clean(x) for x in examples[:3]]
    return [
        f'{t}: this answer is for requests such as "{e[0]}".',
        f'{t} also covers requests like "{e[1]}".',
        f'{t}, for instance: "{e[2]}".',
    ]


def fact_copy(intent: str, examples: list[str]) -> list[str]:
    """The same answer written a second time by someone else: the same examples, a few words changed."""
    t, e = title(intent), [_clean(x) for x in examples[:3]]
    return [
        f'{t}: use this answer for requests such as "{e[0]}".',
        f'{t} also applies to requests like "{e[1]}".',
        f'{t}, for example: "{e[2]}".',
    ]


def retired(intent: str, examples: list[str]) -> list[str]:
    t, e = title(intent), [_clean(x) for x in examples[:3]]
    return [
        f'{t} (retired procedure): until 2019 requests such as "{e[0]}" went through the old service desk form.',
        f'{t} (retired procedure) also covered requests like "{e[1]}" and "{e[2]}".',
        f"The {intent.replace('_', ' ')} service desk form no longer exists.",
    ]


def pick_domains(domains: dict[str, list[str]], seed: int, count: int = 3) -> tuple[str, ...]:
    rng = np.random.default_rng(seed)
    pool = [d for d in TASK_DOMAINS if d in domains]
    return tuple(sorted(rng.choice(pool, size=min(count, len(pool)), replace=False).tolist()))


def build_world(
    data: dict[str, list[list[str]]],
    domains: dict[str, list[str]],
    *,
    seed: int,
    chosen: tuple[str, ...] = (),
    examples_per_label: int = 10,
    eval_per_intent: int = 10,
    nights: int = 5,
    project_slug: str = "loop-real",
    lifecycle: bool = False,
) -> World:
    """The world of ``seed`` over ``chosen`` domains (a seeded draw of three when empty); ``lifecycle``
    adds the misfiled and retired-action defects (module doc)."""
    rng = np.random.default_rng([seed, 25])
    chosen = tuple(sorted(chosen)) or pick_domains(domains, seed)
    unknown = [d for d in chosen if d not in domains]
    if unknown:
        raise ValueError(f"unknown domains {unknown}; known: {sorted(domains)}")
    domain_of = {i: d for d in chosen for i in domains[d]}
    intents = tuple(sorted(domain_of))
    train: dict[str, list[str]] = {i: [] for i in intents}
    val: dict[str, list[str]] = {i: [] for i in intents}
    for split, bucket in (("train", train), ("val", val)):
        for text, intent in data[split]:
            if intent in bucket:
                bucket[intent].append(text)
    examples: dict[str, list[str]] = {}
    held_out: dict[str, list[str]] = {}
    traffic: dict[str, list[str]] = {}
    text_intent: dict[str, str] = {}
    for intent in intents:
        tr = list(dict.fromkeys(train[intent]))
        va = [t for t in dict.fromkeys(val[intent]) if t not in set(tr)]
        tr = [tr[k] for k in rng.permutation(len(tr))]
        va = [va[k] for k in rng.permutation(len(va))]
        examples[intent] = tr[:examples_per_label]
        held_out[intent] = va[:eval_per_intent]
        traffic[intent] = tr[examples_per_label:] + va[eval_per_intent:]
        for text in tr + va:
            text_intent.setdefault(" ".join(text.lower().split()), intent)

    # --- which intents carry which defect ------------------------------------------------------------
    free = {d: [i for i in sorted(domains[d]) if i in domain_of] for d in chosen}
    for d in free:
        free[d] = [free[d][k] for k in rng.permutation(len(free[d]))]
    order = [chosen[k] for k in rng.permutation(len(chosen))]
    cursor = [0]

    def take(n: int) -> list[str]:
        """``n`` unused intents of one domain (domains taken in turn, so defects spread)."""
        for _ in range(len(order)):
            d = order[cursor[0] % len(order)]
            cursor[0] += 1
            if len(free[d]) >= n + 2:  # keep at least two clean intents per domain as neighbours
                return [free[d].pop() for _ in range(n)]
        raise ValueError("the chosen domains have too few intents for every planted defect")

    def take_action() -> str:
        """One unused intent, an action-like one when a domain still has one."""
        for _ in range(len(order)):
            d = order[cursor[0] % len(order)]
            cursor[0] += 1
            actions = [i for i in free[d] if i in ACTION_INTENTS]
            if actions and len(free[d]) >= 3:
                free[d].remove(actions[-1])
                return actions[-1]
        return take(1)[0]

    split_two_labels, split_one_label = take(2), take(2)
    merges = [take(1)[0] for _ in range(4)]
    detour, obsolete, new_intent = take_action(), take_action(), take(1)[0]
    followup = tuple(take(2))
    used = set(split_two_labels + split_one_label + merges + [detour, obsolete, new_intent, *followup])

    def neighbour(intent: str, k: int = 0) -> str:
        clean = [i for i in sorted(domains[domain_of[intent]]) if i in domain_of and i not in used]
        return clean[(k + len(intent)) % len(clean)]

    # the lifecycle defects: drawn last, never among the neighbours above (``used`` is left as it is, so
    # every other defect of the seed is planted exactly as without them)
    misfiled = retired_action = ""
    if lifecycle:
        avoid = {neighbour(merges[2], 0), neighbour(merges[2], 1), neighbour(merges[3], 0)}
        avoid |= {neighbour(merges[3], 1), neighbour(detour, 2)}

        def take_clear(prefer: frozenset[str] = frozenset()) -> str:
            """One unused intent that is no other defect's neighbour (a ``prefer`` one when possible)."""
            for wanted in (prefer, None):
                for _ in range(len(order)):
                    d = order[cursor[0] % len(order)]
                    cursor[0] += 1
                    pool = [i for i in free[d] if i not in avoid and (wanted is None or i in wanted)]
                    if pool and len(free[d]) >= 3:
                        free[d].remove(pool[-1])
                        return pool[-1]
            raise ValueError("the chosen domains have too few intents for the lifecycle defects")

        misfiled, retired_action = take_clear(), take_clear(ACTION_INTENTS)

    # --- the pack ------------------------------------------------------------------------------------
    pack, node_of = routing_pack(
        [[t, i] for i in intents for t in examples[i]],
        domains={d: domains[d] for d in chosen},
        project_slug=project_slug,
    )
    pack["project"]["name"] = f"Loop benchmark: {', '.join(chosen)} (seed {seed})"
    pack["project"]["description"] = "CLINC150 train/val utterances with planted defects (bench/loop_real)"
    typology = pack["typologies"][0]
    typology.update(
        {"complexity_budget": 3, "max_depth": 3, "max_hops": 3, "beam_width": 3},
        preferred_node_types=["Info", "Action", "Decision"],
    )
    label_of = {label["name"]: label["id"] for label in pack["labels"]}
    label_of = {i: label_of[i.replace("_", " ")] for i in intents}
    labels = {label["id"]: label for label in pack["labels"]}
    nodes = {n["id"]: n for n in pack["nodes"]}
    edges: list[dict[str, Any]] = pack["edges"]
    sentences: dict[str, str] = {}
    next_label = [max(int(lid[1:]) for lid in labels) + 1]

    def remember(parts: list[str], key: str) -> str:
        """A chunk made of ``parts``; each sentence is recognised as ``key``'s (the oracle's facts)."""
        for sentence in parts:
            sentences[sentence[:PREFIX]] = key
        return " ".join(parts)

    def edge(source: str, target: str, type_: str, weight: float, semantics: str = "") -> None:
        edges.append(
            {"source": source, "target": target, "type": type_, "weight": weight, "semantics": semantics}
        )

    def node(node_id: str, type_: str, title_: str, chunk: str, labels_: list[str], cluster: str) -> None:
        nodes[node_id] = {
            "id": node_id,
            "type": type_,
            "title": title_,
            "chunk": chunk,
            "risk": "low",
            "status": "ACTIVE",
            "labels": labels_,
            "clusters": [cluster],
            "preconditions": [],
            "parameters": [],
            "handler": HANDLER if type_ == "Action" else "",
        }

    def make_action(node_id: str) -> None:
        nodes[node_id]["type"] = "Action"
        nodes[node_id]["handler"] = HANDLER

    def new_label(like: str, name: str, examples_: list[str]) -> str:
        lid = f"L{next_label[0]:05d}"
        next_label[0] += 1
        labels[lid] = {**labels[like], "id": lid, "name": name, "examples": examples_}
        return lid

    for intent in intents:
        n = nodes[node_of[intent]]
        n["title"] = title(intent)
        n["chunk"] = remember(fact(intent, examples[intent]), intent)
    defects: list[Defect] = []

    # split-1: two labels on one node
    for key, pair, one_label in (("split-1", split_two_labels, False), ("split-2", split_one_label, True)):
        a, b = pair
        cluster = slug(domain_of[a])
        merged_id = f"N-{slug(a)}--{slug(b)}"
        del nodes[node_of[a]], nodes[node_of[b]]
        if one_label:
            la = labels[label_of[a]]
            la["name"] = f"{a.replace('_', ' ')} and {b.replace('_', ' ')}"
            la["description"] = f"Requests about {a.replace('_', ' ')} or {b.replace('_', ' ')}."
            la["examples"] = examples[a] + examples[b]
            del labels[label_of[b]]
            attached = [label_of[a]]
        else:
            attached = [label_of[a], label_of[b]]
        node(
            merged_id,
            "Info",
            f"{title(a)} and {b.replace('_', ' ')}",
            " ".join(fact(a, examples[a]) + fact(b, examples[b])),
            attached,
            cluster,
        )
        node_of[a] = node_of[b] = merged_id
        defects.append(
            Defect(
                key,
                "SPLIT",
                "one label for both intents" if one_label else "each intent its own label, both on the node",
                (a, b),
                {"node": merged_id, "labels": attached},
            )
        )

    # merge-1..4: one intent on two near-identical nodes
    variants = (("one label", False), ("two labels", False), ("one label", True), ("two labels", True))
    for k, (intent, (variant, with_edges)) in enumerate(zip(merges, variants, strict=True), start=1):
        cluster = slug(domain_of[intent])
        original = node_of[intent]
        copy = f"{original}-copy"
        lid = label_of[intent]
        copy_labels = [lid]
        if variant == "two labels":
            half = len(examples[intent]) // 2
            labels[lid]["examples"] = examples[intent][:half]
            copy_labels = [new_label(lid, f"{intent.replace('_', ' ')} requests", examples[intent][half:])]
        node(
            copy,
            "Info",
            f"{title(intent)} help",
            remember(fact_copy(intent, examples[intent]), intent),
            copy_labels,
            cluster,
        )
        details: dict[str, Any] = {"nodes": [original, copy], "labels": sorted({lid, *copy_labels})}
        if with_edges:
            y, z = neighbour(intent, 0), neighbour(intent, 1)
            for n_id in (original, copy):
                edge(n_id, node_of[y], "RELATED_TO", 0.4, "see also")
                edge(node_of[z], n_id, "RELATED_TO", 0.3, "see also")
            details["neighbours"] = [node_of[y], node_of[z]]
        defects.append(
            Defect(
                f"merge-{k}",
                "MERGE",
                f"{variant}, {'with' if with_edges else 'no'} edges",
                (intent,),
                details,
            )
        )

    # detour: the label lands on a Decision node two moves away from the answer
    cluster = slug(domain_of[detour])
    answer = node_of[detour]
    start, more = f"{answer}-start", f"{answer}-more"
    name = detour.replace("_", " ")
    node(
        start,
        "Decision",
        f"{title(detour)}: where to start",
        f"Start here for requests about {name}; the next step depends on the details of the request.",
        [label_of[detour]],
        cluster,
    )
    node(
        more,
        "Decision",
        f"More {domain_of[detour].replace('_', ' ')} steps",
        f"Follow-up steps for {name} and related {domain_of[detour].replace('_', ' ')} requests.",
        [],
        cluster,
    )
    nodes[answer]["labels"] = []
    make_action(answer)
    edge(start, more, "LEADS_TO", 0.8, "the details decide")
    edge(more, answer, "LEADS_TO", 0.8, "the answer")
    edge(more, node_of[neighbour(detour, 2)], "LEADS_TO", 0.5, "a related answer")
    defects.append(
        Defect(
            "detour",
            "EDGE_ADD",
            "label on a Decision two moves from the answer",
            (detour,),
            {"source": start, "target": answer, "via": more},
        )
    )

    # obsolete: the heavy edge out of the landing point leads to a retired procedure
    cluster = slug(domain_of[obsolete])
    answer = node_of[obsolete]
    start, legacy = f"{answer}-start", f"{answer}-retired"
    node(
        start,
        "Decision",
        f"{title(obsolete)}: how to proceed",
        f"Requests about {obsolete.replace('_', ' ')}: choose how to proceed.",
        [label_of[obsolete]],
        cluster,
    )
    node(
        legacy,
        "Action",
        f"{title(obsolete)} (old procedure)",
        remember(retired(obsolete, examples[obsolete]), f"retired:{obsolete}"),
        [],
        cluster,
    )
    nodes[answer]["labels"] = []
    make_action(answer)
    edge(start, legacy, "LEADS_TO", 0.9, "the usual way")
    edge(start, answer, "LEADS_TO", 0.3, "the current way")
    defects.append(
        Defect(
            "obsolete",
            "EDGE_INHIBIT",
            "heavy edge to a retired procedure",
            (obsolete,),
            {"source": start, "target": legacy, "answer": answer},
        )
    )

    # new intent: its answer exists, no label does; users start asking mid-way
    del labels[label_of[new_intent]]
    nodes[node_of[new_intent]]["labels"] = []
    arrival = max(1, nights // 2 + 1)
    defects.append(
        Defect(
            "new-intent",
            "LABEL_ADD",
            f"no label; traffic from night {arrival}",
            (new_intent,),
            {"node": node_of[new_intent], "arrival_night": arrival},
        )
    )

    # follow-up: P then Q in one session, no edge between them
    p, q = followup
    defects.append(
        Defect(
            "followup",
            "EDGE_ADD",
            "Q asked right after P in the same session",
            (p, q),
            {"source": node_of[p], "target": node_of[q]},
        )
    )

    if lifecycle:
        # misfiled: the label and its node sit in another domain's cluster
        home = slug(domain_of[misfiled])
        others = [slug(d) for d in order if slug(d) != home]
        away = others[len(misfiled) % len(others)]
        labels[label_of[misfiled]]["cluster"] = away
        nodes[node_of[misfiled]]["clusters"] = [away]
        defects.append(
            Defect(
                "misfiled",
                "LABEL_REATTACH",
                "label and node under another domain's cluster",
                (misfiled,),
                {
                    "label": label_of[misfiled],
                    "node": node_of[misfiled],
                    "cluster": home,
                    "filed_under": away,
                },
            )
        )

        # retired action: a failing Action of a retired procedure carries the intent's label too
        answer = node_of[retired_action]
        legacy = f"{answer}-legacy"
        node(
            legacy,
            "Action",
            f"{title(retired_action)} (old procedure)",
            remember(retired(retired_action, examples[retired_action]), f"retired:{retired_action}"),
            [label_of[retired_action]],
            slug(domain_of[retired_action]),
        )
        nodes[legacy]["handler"] = FAILING_HANDLER
        defects.append(
            Defect(
                "retired-action",
                "OBSOLESCENCE",
                "a failing Action of a retired procedure shares the label with the answer",
                (retired_action,),
                {"node": legacy, "answer": answer, "label": label_of[retired_action]},
            )
        )

    pack["labels"] = sorted(labels.values(), key=lambda x: x["id"])
    pack["nodes"] = sorted(nodes.values(), key=lambda x: x["id"])
    pack["edges"] = edges
    return World(
        seed=seed,
        slug=project_slug,
        domains=chosen,
        intents=intents,
        domain_of=domain_of,
        examples=examples,
        held_out=held_out,
        traffic=traffic,
        pack=pack,
        defects=tuple(defects),
        sentences=sentences,
        new_intent=new_intent,
        arrival_night=arrival,
        followup=(p, q),
        text_intent=text_intent,
        lifecycle=lifecycle,
    )
