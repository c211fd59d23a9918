"""The neighbourhood picture of a node page: a deterministic, dependency-free SVG layout.

The centre sits in the middle; its neighbours stand in two bowed columns — nodes with edges *into*
the centre on the left, nodes it points *to* on the right (both ways: whichever side is lighter) —
and, at depth 2, their own neighbours in an outer column next to the neighbour that reached them,
so a parent is centred on its children like a tidy tree. Columns are spaced so that a node's label
never runs into the next column and rows are spaced so that labels never stack. When one side would
get much heavier than the other, the columns are balanced and the arrowheads alone tell direction.

Everything is computed here (no JavaScript needed to see it); ``static/js/graph.js`` only adds
hover highlighting. Colours come from the CSS classes ``nt-<type>`` (see ``static/css/app.css``).
"""

from __future__ import annotations

import math
from collections import defaultdict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from arg_platform.vocabulary import NODE_TYPE_CHOICES

from ..graph_read import Neighbourhood
from ..store.port import EdgeData

CENTRE_R = 15.0
RING_R = {1: 9.0, 2: 6.5}
ROW = {1: 26.0, 2: 22.0}  # vertical room per node of a column (labels are ~12px tall)
COLUMN_X = {1: {1: 215.0}, 2: {1: 170.0, 2: 370.0}}  # depth → ring → distance from the centre
LABEL_CHARS = {1: {1: 30}, 2: {1: 23, 2: 27}}
CENTRE_LABEL_CHARS = 44
CHAR_W = 6.6  # average advance of a 12px system-ui character, to size the canvas
LABEL_GAP = 6.0
PAD = 14.0
REBALANCE_WEIGHT = 12  # a side heavier than this (and than 65 % of the whole) is balanced
MAX_BOW = 46.0
SPREAD = 260.0  # a short column is spread over about this height
MAX_ROW = 64.0
MIN_HEIGHT = 230.0
MAX_CHILDREN = 12  # second-ring nodes drawn per first-ring node


@dataclass(frozen=True)
class PictureNode:
    node_id: str
    title: str
    type: str
    status: str
    ring: int  # 0 = the centre
    x: float
    y: float
    r: float
    label: str
    label_x: float
    label_y: float
    anchor: str  # SVG text-anchor of the label
    tooltip: str
    url: str

    @property
    def type_class(self) -> str:
        return type_class(self.type)


@dataclass(frozen=True)
class PictureEdge:
    source: str
    target: str
    type: str
    weight: float
    path: str
    label_x: float
    label_y: float
    width: float
    tooltip: str
    near: bool  # touches the centre

    @property
    def inhibitory(self) -> bool:
        return self.weight < 0


@dataclass(frozen=True)
class Picture:
    center: str
    depth: int
    nodes: tuple[PictureNode, ...]
    edges: tuple[PictureEdge, ...]
    view_box: str
    width: int
    height: int
    types: tuple[str, ...]  # node types present, for the legend
    sides_by_direction: bool  # left = edges into the centre, right = edges out of it
    more: int  # nodes of the neighbourhood left out of the picture

    @property
    def circle_count(self) -> int:
        return len(self.nodes)


def type_class(node_type: str) -> str:
    return "nt-" + node_type.lower()


def shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _distances(center: str, ids: set[str], edges: Sequence[EdgeData]) -> tuple[dict[str, int], dict]:
    adjacent: dict[str, set[str]] = defaultdict(set)
    for edge in edges:
        if edge.source in ids and edge.target in ids and edge.source != edge.target:
            adjacent[edge.source].add(edge.target)
            adjacent[edge.target].add(edge.source)
    dist = {center: 0}
    queue = deque([center])
    while queue:
        current = queue.popleft()
        for other in sorted(adjacent[current]):
            if other not in dist:
                dist[other] = dist[current] + 1
                queue.append(other)
    return dist, adjacent


def _split(weights: list[int], natural: tuple[int, int]) -> tuple[int, bool]:
    """Where the sorted first ring is cut into left | right: within ``natural`` (in-only | both | out-only
    keeps its meaning) unless that leaves one side far heavier, then wherever the weights balance."""
    total = sum(weights)
    prefix = [0]
    for w in weights:
        prefix.append(prefix[-1] + w)

    def imbalance(k: int) -> int:
        return abs(prefix[k] - (total - prefix[k]))

    lo, hi = natural
    k = min(range(lo, hi + 1), key=lambda i: (imbalance(i), i))
    heavier = max(prefix[k], total - prefix[k])
    if heavier > REBALANCE_WEIGHT and heavier > 0.65 * total:
        return min(range(len(weights) + 1), key=lambda i: (imbalance(i), i)), False
    return k, True


def _quadratic(
    p: tuple[float, float], q: tuple[float, float], control: tuple[float, float], rp: float, rq: float
) -> tuple[str, float, float]:
    """A quadratic Bézier from circle ``p`` to circle ``q`` (trimmed to their rims) and its midpoint."""

    def towards(a: tuple[float, float], b: tuple[float, float], by: float) -> tuple[float, float]:
        dx, dy = b[0] - a[0], b[1] - a[1]
        length = math.hypot(dx, dy) or 1.0
        return a[0] + dx / length * by, a[1] + dy / length * by

    start = towards(p, control, rp)
    end = towards(q, control, rq + 1.5)
    mid_x = 0.25 * p[0] + 0.5 * control[0] + 0.25 * q[0]
    mid_y = 0.25 * p[1] + 0.5 * control[1] + 0.25 * q[1]
    path = f"M{start[0]:.1f},{start[1]:.1f} Q{control[0]:.1f},{control[1]:.1f} {end[0]:.1f},{end[1]:.1f}"
    return path, mid_x, mid_y


def picture_select(
    hood: Neighbourhood, *, cap: int, per_parent: int = MAX_CHILDREN
) -> tuple[Neighbourhood, int]:
    """At most ``cap`` nodes of ``hood`` worth drawing, and how many were left out.

    First-ring nodes come first, those reached by a rarer edge type before the many of a common one
    (a hub's hundred ESCALATES_TO do not hide its one LEADS_TO); second-ring nodes are then taken in
    turns from each first-ring node (at most ``per_parent`` each), so one hub neighbour cannot flood
    the picture with its own neighbours.
    """
    center = hood.center
    ids = {n.node_id for n in hood.nodes}
    dist, adjacent = _distances(center, ids, hood.edges)
    order = {n.node_id: k for k, n in enumerate(hood.nodes)}
    center_types: dict[str, str] = {}
    for edge in hood.edges:
        if center in (edge.source, edge.target) and edge.source != edge.target:
            center_types.setdefault(edge.target if edge.source == center else edge.source, edge.type)
    frequency: dict[str, int] = defaultdict(int)
    for edge_type in center_types.values():
        frequency[edge_type] += 1
    ring1 = sorted(
        (i for i in ids if dist.get(i) == 1),
        key=lambda i: (frequency[center_types.get(i, "")], order[i]),
    )[: max(cap - 1, 0)]
    keep = [center, *ring1]
    queues: dict[str, list[str]] = {p: [] for p in ring1}
    for node_id in sorted((i for i in ids if dist.get(i) == 2), key=order.__getitem__):
        parents = [p for p in ring1 if p in adjacent[node_id]]
        if parents:
            queues[parents[0]].append(node_id)
    taken = {p: 0 for p in ring1}
    while len(keep) < cap and any(queues[p] and taken[p] < per_parent for p in ring1):
        for parent in ring1:
            if len(keep) >= cap:
                break
            if queues[parent] and taken[parent] < per_parent:
                keep.append(queues[parent].pop(0))
                taken[parent] += 1
    chosen = set(keep)
    nodes = tuple(n for n in hood.nodes if n.node_id in chosen)
    edges = tuple(e for e in hood.edges if e.source in chosen and e.target in chosen)
    return Neighbourhood(center=center, source=hood.source, nodes=nodes, edges=edges), len(ids) - len(chosen)


def picture_layout(
    hood: Neighbourhood, *, depth: int, node_url: Callable[[str], str], more: int = 0
) -> Picture:
    """Lay out ``hood`` (at most a few dozen nodes) around its centre; see the module docstring."""
    depth = 2 if depth >= 2 else 1
    nodes = {n.node_id: n for n in hood.nodes}
    center = hood.center
    dist, adjacent = _distances(center, set(nodes), hood.edges)
    into = {e.source for e in hood.edges if e.target == center}
    out_of = {e.target for e in hood.edges if e.source == center}
    first_type: dict[str, str] = {}
    for edge in hood.edges:
        if center in (edge.source, edge.target):
            first_type.setdefault(edge.target if edge.source == center else edge.source, edge.type)

    def rank(node_id: str) -> int:
        return 1 if node_id in into and node_id in out_of else (0 if node_id in into else 2)

    ring1 = sorted(
        (i for i in nodes if dist.get(i) == 1),
        key=lambda i: (rank(i), first_type.get(i, ""), nodes[i].title.lower(), i),
    )
    ring2 = sorted(i for i in nodes if i != center and dist.get(i, 2) >= 2)
    order1 = {node_id: k for k, node_id in enumerate(ring1)}
    children: dict[str, list[str]] = defaultdict(list)
    for node_id in ring2:
        parents = [p for p in adjacent.get(node_id, ()) if p in order1]
        parent = min(parents, key=order1.__getitem__) if parents else (ring1[0] if ring1 else center)
        children[parent].append(node_id)
    for kids in children.values():
        kids.sort(key=lambda i: (nodes[i].title.lower(), i))

    weights = [max(1, len(children[i])) for i in ring1]
    in_only = sum(1 for i in ring1 if rank(i) == 0)
    both = sum(1 for i in ring1 if rank(i) == 1)
    cut, by_direction = _split(weights, (in_only, in_only + both))
    sides = {-1: ring1[:cut], 1: ring1[cut:]}
    # A second-ring node stays on the side where most of its first-ring neighbours are, under the
    # first of them there: fewer edges cross the picture.
    side_of = {node_id: side for side, column in sides.items() for node_id in column}
    children = defaultdict(list)
    for node_id in ring2:
        parents = sorted((p for p in adjacent.get(node_id, ()) if p in order1), key=order1.__getitem__)
        if not parents:
            children[ring1[0] if ring1 else center].append(node_id)
            continue
        votes = {side: sum(1 for p in parents if side_of[p] == side) for side in (-1, 1)}
        side = side_of[parents[0]] if votes[-1] == votes[1] else max(votes, key=votes.__getitem__)
        children[next(p for p in parents if side_of[p] == side)].append(node_id)
    for kids in children.values():
        kids.sort(key=lambda i: (nodes[i].title.lower(), i))

    # Stack each side: a first-ring node gets a block as tall as its children need, centred on them.
    place: dict[str, tuple[float, float, int, int]] = {center: (0.0, 0.0, 0, 0)}  # y, x-sign, ring, side
    extent = 0.0
    for side, column in sides.items():
        row = min(MAX_ROW, max(ROW[1], SPREAD / max(len(column), 1)))  # few nodes: spread them out
        blocks = [max(row, len(children[i]) * ROW[2]) for i in column]
        top = -sum(blocks) / 2
        for node_id, block in zip(column, blocks, strict=True):
            place[node_id] = (top + block / 2, 0.0, 1, side)
            kids = children[node_id]
            for k, kid in enumerate(kids):
                place[kid] = (top + block / 2 + (k - (len(kids) - 1) / 2) * ROW[2], 0.0, 2, side)
            top += block
        extent = max(extent, top)
    # orphans of an empty first ring (cannot happen with a real neighbourhood) hang on the right
    for k, node_id in enumerate(children.get(center, [])):
        place[node_id] = ((k - (len(children[center]) - 1) / 2) * ROW[2], 0.0, 2, 1)
        extent = max(extent, abs(place[node_id][0]))

    geometry = depth if ring2 else 1  # a depth-2 picture without a second ring is drawn like depth 1
    half = max(extent, 1.0)
    bow = min(MAX_BOW, 0.14 * half)
    picture_nodes: list[PictureNode] = []
    for node_id, (y, _, ring, side) in place.items():
        node = nodes[node_id]
        if ring == 0:
            x, r = 0.0, CENTRE_R
            label = shorten(node.title, CENTRE_LABEL_CHARS)
            label_x, label_y, anchor = 0.0, r + 16.0, "middle"
        else:
            x = side * (COLUMN_X[geometry][ring] - bow * (y / half) ** 2)
            r = RING_R[ring]
            label = shorten(node.title, LABEL_CHARS[geometry][ring])
            label_x, label_y = x + side * (r + LABEL_GAP), y + 4.0
            anchor = "start" if side > 0 else "end"
        picture_nodes.append(
            PictureNode(
                node_id=node_id,
                title=node.title,
                type=node.type,
                status=node.status,
                ring=ring,
                x=round(x, 1),
                y=round(y, 1),
                r=r,
                label=label,
                label_x=round(label_x, 1),
                label_y=round(label_y, 1),
                anchor=anchor,
                tooltip=f"{node.title}\n{node_id} · {node.type} · {node.status}",
                url=node_url(node_id),
            )
        )
    picture_nodes.sort(key=lambda n: (n.ring, n.y, n.x))
    at = {n.node_id: n for n in picture_nodes}
    picture_edges = [
        _edge(edge, at, center) for edge in hood.edges if edge.source in at and edge.target in at
    ]
    picture_edges.sort(key=lambda e: e.near)  # edges of the centre are drawn last, on top

    min_x = min_y = math.inf
    max_x = max_y = -math.inf
    for n in picture_nodes:
        width = len(n.label) * CHAR_W
        left = {"start": n.label_x, "end": n.label_x - width, "middle": n.label_x - width / 2}[n.anchor]
        min_x, max_x = min(min_x, n.x - n.r, left), max(max_x, n.x + n.r, left + width)
        min_y, max_y = min(min_y, n.y - n.r, n.label_y - 12), max(max_y, n.y + n.r, n.label_y + 4)
    min_x, min_y, max_x, max_y = min_x - PAD, min_y - PAD, max_x + PAD, max_y + PAD
    if max_y - min_y < MIN_HEIGHT:
        grow = (MIN_HEIGHT - (max_y - min_y)) / 2
        min_y, max_y = min_y - grow, max_y + grow
    present = {n.type for n in picture_nodes}
    return Picture(
        center=center,
        depth=depth,
        nodes=tuple(picture_nodes),
        edges=tuple(picture_edges),
        view_box=f"{min_x:.0f} {min_y:.0f} {max_x - min_x:.0f} {max_y - min_y:.0f}",
        width=round(max_x - min_x),
        height=round(max_y - min_y),
        types=tuple(t for t in NODE_TYPE_CHOICES if t in present)
        + tuple(sorted(present - set(NODE_TYPE_CHOICES))),
        sides_by_direction=by_direction,
        more=more,
    )


def _edge(edge: EdgeData, at: dict[str, PictureNode], center: str) -> PictureEdge:
    a, b = at[edge.source], at[edge.target]
    p, q = (a.x, a.y), (b.x, b.y)
    dx, dy = q[0] - p[0], q[1] - p[1]
    length = math.hypot(dx, dy) or 1.0
    if abs(dx) < 40 and a.ring == b.ring and a.ring > 0:
        # two nodes of one column: bow towards the centre, away from the labels
        inward = -1.0 if a.x > 0 else 1.0
        control = ((p[0] + q[0]) / 2 + inward * min(90.0, 0.3 * abs(dy) + 18), (p[1] + q[1]) / 2)
    else:
        # a gentle curve, always to the left of the direction of travel: A→B and B→A stay apart
        bend = 0.1 * length
        control = ((p[0] + q[0]) / 2 + dy / length * bend, (p[1] + q[1]) / 2 - dx / length * bend)
    path, mid_x, mid_y = _quadratic(p, q, control, a.r, b.r)
    weight = float(edge.weight)
    tooltip = f"{edge.type} · weight {weight:g}\n{a.title} → {b.title}"
    if edge.semantics:
        tooltip += f"\n{edge.semantics}"
    return PictureEdge(
        source=edge.source,
        target=edge.target,
        type=edge.type,
        weight=weight,
        path=path,
        label_x=round(mid_x, 1),
        label_y=round(mid_y, 1),
        width=round(1.0 + 1.6 * min(abs(weight), 1.0), 2),
        tooltip=tooltip,
        near=center in (edge.source, edge.target),
    )
