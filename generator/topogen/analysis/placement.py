"""Where the scheduler may put a pod template, and whether a set of pods fits a set of nodes.

Placement is computed per node class, not per node: nodes in one zone with the same
taints, allocatable, cordon state and the same values of the labels the template reads
are interchangeable for the scheduler's filters, so one representative decides for all
of them. Results are cached per topology and scheduling-relevant template fields.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import overload

from topogen.model import Node, PodTemplate, Taint, Toleration, Topology

__all__ = [
    "NodeClass",
    "PinnedPlacements",
    "Placement",
    "PodDemand",
    "node_classes",
    "pack",
    "place",
    "place_in_domains",
    "room",
    "untolerated",
]

_BLOCKING = ("NoSchedule", "NoExecute")
_UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
_NAME_KEY = "metadata.name"


@dataclass(frozen=True)
class Placement:
    nodes: tuple[Node, ...]
    excluded: Mapping[str, int]  # reason -> number of nodes it excluded

    @cached_property
    def zones(self) -> tuple[str, ...]:
        return tuple(sorted({n.zone for n in self.nodes}))

    @cached_property
    def by_zone(self) -> Mapping[str, tuple[Node, ...]]:
        """The nodes in each zone, in topology order."""
        out: dict[str, list[Node]] = {}
        for n in self.nodes:
            out.setdefault(n.zone, []).append(n)
        return {z: tuple(ns) for z, ns in out.items()}

    def why_not(self, limit: int = 3) -> str:
        return why_not(self.excluded, limit)


def why_not(excluded: Mapping[str, int], limit: int = 3) -> str:
    """Placement.why_not for these exclusion counts."""
    parts = [
        f"{count} node{'s' if count > 1 else ''}: {reason}"
        for reason, count in sorted(excluded.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    more = f" (+{len(parts) - limit} more)" if len(parts) > limit else ""
    return "; ".join(parts[:limit]) + more


def untolerated(taints: Iterable[Taint], tolerations: Sequence[Toleration]) -> list[Taint]:
    return [
        t
        for t in taints
        if t.effect in _BLOCKING and not any(tol.tolerates(t) for tol in tolerations)
    ]


def _node_labels(node: Node) -> Mapping[str, str]:
    # matchFields supports metadata.name only; expose it as a pseudo label
    return {**node.labels, "metadata.name": node.name}


def exclusion(template: PodTemplate, node: Node, tolerations: Sequence[Toleration]) -> str | None:
    """Why the scheduler would not place this template on this node, or None."""
    reason = _selected_out(template, node, tolerations)
    if reason is not None:
        return reason
    if template.node_affinity is not None:
        labels = _node_labels(node)
        if not any(term.matches(labels) for term in template.node_affinity):
            return "required node affinity not matched"
    return _does_not_fit(template, node, tolerations)


def _selected_out(
    template: PodTemplate, node: Node, tolerations: Sequence[Toleration]
) -> str | None:
    """The checks before node affinity: cordon, nodeSelector."""
    if node.unschedulable and not any(t.tolerates(_UNSCHEDULABLE_TAINT) for t in tolerations):
        return "cordoned (unschedulable)"
    for key, value in template.node_selector.items():
        if node.labels.get(key) != value:
            return f"nodeSelector {key}={value} not matched"
    return None


def _does_not_fit(
    template: PodTemplate, node: Node, tolerations: Sequence[Toleration]
) -> str | None:
    """The checks after node affinity: taints, resources."""
    bad = untolerated(node.taints, tolerations)
    if bad:
        return f"taint {bad[0]} not tolerated"
    for resource, want in sorted(template.requests.items()):
        if want <= 0:
            continue
        have = node.allocatable.get(resource)
        if (
            have is None
            and resource in ("cpu", "memory", "ephemeral-storage")
            and not node.allocatable
        ):
            continue  # a node listed without allocatable: do not guess
        if (have or Fraction(0)) < want:
            return f"insufficient {resource} (needs {_fmt(want)}, has {_fmt(have or 0)})"
    return None


def _pinned_exclusion(
    template: PodTemplate, node: Node, tolerations: Sequence[Toleration]
) -> str | None:
    """exclusion() for the template as members.pin leaves it, on a node inside the domain:
    every required term gained the domain's zone requirement (so an empty term matches
    there, and no affinity at all means just that requirement)."""
    reason = _selected_out(template, node, tolerations)
    if reason is not None:
        return reason
    if template.node_affinity:
        labels = _node_labels(node)
        if not any(
            all(r.matches(labels) for r in term.match_expressions)
            for term in template.node_affinity
        ):
            return "required node affinity not matched"
    return _does_not_fit(template, node, tolerations)


@dataclass(frozen=True)
class NodeClass:
    """Nodes the scheduler's filters cannot tell apart, but for their zone, for templates
    reading `keys` (besides the zone label): same values of those labels, same taints,
    allocatable and cordon state."""

    representative: Node
    positions: tuple[int, ...]  # indices into topology.nodes, ascending
    by_zone: Mapping[str, tuple[int, ...]]  # the same positions per zone
    allocatable: int  # names the nodes' allocatable (see room())


class _NodeIndex:
    """Per topology: node classes per set of label keys, and placements already computed."""

    def __init__(self, topology: Topology) -> None:
        self.nodes = topology.nodes
        self.zone_label = topology.zone_label
        ids: dict[tuple[tuple[str, Fraction], ...], int] = {}
        self.allocatable = [
            ids.setdefault(tuple(sorted(n.allocatable.items())), len(ids)) for n in topology.nodes
        ]
        self.allocatables: list[Mapping[str, Fraction]] = [{}] * len(ids)
        for i, n in enumerate(topology.nodes):
            self.allocatables[self.allocatable[i]] = n.allocatable
        self.rooms: dict[tuple[int, int], int] = {}
        self.partitions: dict[frozenset[str], list[NodeClass]] = {}
        self.by_zone: dict[frozenset[str], dict[str, list[tuple[int, tuple[int, ...]]]]] = {}
        self.placements: dict[tuple[object, ...], Placement] = {}
        self.pinned: dict[tuple[object, ...], PinnedPlacements] = {}
        self.keep: list[object] = []  # objects whose id() is part of a cache key

    def classes(self, keys: frozenset[str]) -> list[NodeClass]:
        keys = keys - {self.zone_label}
        hit = self.partitions.get(keys)
        if hit is None:
            ordered = sorted(keys - {_NAME_KEY})
            by_name = _NAME_KEY in keys
            groups: dict[tuple[object, ...], list[int]] = {}
            for i, n in enumerate(self.nodes):
                labels = n.labels
                key = (
                    tuple(labels.get(k) for k in ordered),
                    n.name if by_name else "",
                    n.taints,
                    self.allocatable[i],
                    n.unschedulable,
                )
                groups.setdefault(key, []).append(i)
            hit = []
            for ps in groups.values():
                by_zone: dict[str, list[int]] = {}
                for i in ps:
                    by_zone.setdefault(self.nodes[i].zone, []).append(i)
                hit.append(
                    NodeClass(
                        self.nodes[ps[0]],
                        tuple(ps),
                        {z: tuple(v) for z, v in by_zone.items()},
                        self.allocatable[ps[0]],
                    )
                )
            self.partitions[keys] = hit
        return hit

    def zone_classes(self, keys: frozenset[str]) -> Mapping[str, list[tuple[int, tuple[int, ...]]]]:
        """zone -> (class number, its positions in the zone)."""
        keys = keys - {self.zone_label}
        hit = self.by_zone.get(keys)
        if hit is None:
            hit = {}
            for c, cls in enumerate(self.classes(keys)):
                for z, ps in cls.by_zone.items():
                    hit.setdefault(z, []).append((c, ps))
            self.by_zone[keys] = hit
        return hit


def _index(topology: Topology) -> _NodeIndex:
    # kept on the (frozen) topology itself, so it lives exactly as long as the topology
    idx = topology.__dict__.get("_topogen_node_index")
    if idx is None:
        idx = topology.__dict__["_topogen_node_index"] = _NodeIndex(topology)
    assert isinstance(idx, _NodeIndex)
    return idx


def read_keys(template: PodTemplate) -> frozenset[str]:
    """Node label keys the template's nodeSelector and required node affinity read."""
    keys = set(template.node_selector)
    for term in template.node_affinity or ():
        keys.update(r.key for r in term.match_expressions)
    return frozenset(keys)


def node_classes(topology: Topology, keys: Iterable[str]) -> list[NodeClass]:
    """The topology's nodes grouped into classes no template reading `keys` tells apart
    (except by zone: each class lists its nodes per zone)."""
    return _index(topology).classes(frozenset(keys))


class _Judge:
    """exclusion() for one template and set of tolerations, per node class and zone.

    Within a class nodes differ only in their zone; what the template reads of the zone
    label (a nodeSelector on it, node affinity requirements on it) reduces a zone to a
    short signature, so each class is judged once per signature, on one of its nodes.
    """

    def __init__(
        self, template: PodTemplate, tolerations: Sequence[Toleration], idx: _NodeIndex
    ) -> None:
        self.template = template
        self.tolerations = tolerations
        self.nodes = idx.nodes
        zl = self.zone_label = idx.zone_label
        self.on_zone = tuple(
            tuple(r for r in term.match_expressions if r.key == zl)
            for term in template.node_affinity or ()
        )
        self.selects_zone = zl in template.node_selector
        self.reads_zone = self.selects_zone or any(self.on_zone)
        self._signatures: dict[str, object] = {}
        self._plain: dict[tuple[int, object], str | None] = {}
        self._pinned: dict[tuple[int, object], tuple[str | None, str]] = {}

    def _signature(self, zone: str, node: Node) -> object:
        if not self.reads_zone:
            return None
        hit = self._signatures.get(zone)
        if hit is None:
            value = node.labels.get(self.zone_label)
            labels = {} if value is None else {self.zone_label: value}
            hit = self._signatures[zone] = (
                self.selects_zone and self.template.node_selector[self.zone_label] == value,
                tuple(all(r.matches(labels) for r in rs) for rs in self.on_zone),
            )
        return hit

    def plain(self, c: int, cls: NodeClass, zone: str) -> str | None:
        """exclusion() on the class's nodes in that zone."""
        node = self.nodes[cls.by_zone[zone][0]]
        key = (c, self._signature(zone, node))
        if key in self._plain:
            return self._plain[key]
        hit = self._plain[key] = exclusion(self.template, node, self.tolerations)
        return hit

    def pinned(self, c: int, cls: NodeClass, zone: str) -> tuple[str | None, str]:
        """For the template members.pin makes: (on the class's nodes in that zone when it
        is in the domain, when it is not)."""
        node = self.nodes[cls.by_zone[zone][0]]
        key = (c, self._signature(zone, node))
        hit = self._pinned.get(key)
        if hit is None:
            hit = self._pinned[key] = (
                _pinned_exclusion(self.template, node, self.tolerations),
                _selected_out(self.template, node, self.tolerations)
                or "required node affinity not matched",
            )
        return hit


def _sched_key(template: PodTemplate) -> tuple[object, ...]:
    return (
        tuple(template.node_selector.items()),
        template.node_affinity,
        tuple(template.requests.items()),
    )


def _placement(
    idx: _NodeIndex,
    ok: list[int],
    excluded: Mapping[str, int],
    first: Mapping[str, int],
    allocatables: Mapping[int, int],
) -> Placement:
    ok.sort()
    nodes = idx.nodes
    placement = Placement(
        tuple(nodes[i] for i in ok), {r: excluded[r] for r in sorted(first, key=first.__getitem__)}
    )
    placement.__dict__["_topogen_allocatables"] = dict(allocatables)
    return placement


def room(
    placement: Placement | Mapping[int, int], topology: Topology, requests: Mapping[str, Fraction]
) -> tuple[int, int]:
    """(pods with these requests pack() puts on the placement's nodes when they are empty,
    the most on one node). Large when nothing bounds them. The placement may be given as
    its nodes counted by allocatable (PinnedPlacements.allocatables)."""
    idx = _index(topology)
    if isinstance(placement, Placement):
        counts = placement.__dict__.get("_topogen_allocatables")
        if counts is None:
            counts = {}
            by_id = {id(n): i for i, n in enumerate(idx.nodes)} if placement.nodes else {}
            for n in placement.nodes:
                a = idx.allocatable[by_id[id(n)]]
                counts[a] = counts.get(a, 0) + 1
            placement.__dict__["_topogen_allocatables"] = counts
    else:
        counts = placement
    total = most = 0
    rid = id(requests)
    for alloc, count in counts.items():
        key = (alloc, rid)
        r = idx.rooms.get(key)
        if r is None:
            idx.keep.append(requests)
            r = idx.rooms[key] = _room(idx.allocatables[alloc], requests)
        total += r * count
        most = max(most, r)
    return total, most


_UNBOUNDED = 1 << 30


def _room(free: Mapping[str, Fraction], requests: Mapping[str, Fraction]) -> int:
    """How many pods with these requests pack() puts on one empty node."""
    limits = [math.floor(free["pods"])] if "pods" in free else []
    for res, want in requests.items():
        if want <= 0:
            continue
        have = free.get(res)
        if have is None:
            if res in ("cpu", "memory", "ephemeral-storage"):
                continue
            return 0
        limits.append(math.floor(have / want))
    return max(0, min(limits)) if limits else _UNBOUNDED


def place(
    template: PodTemplate,
    topology: Topology,
    extra_tolerations: Sequence[Toleration] = (),
    zones: Iterable[str] | None = None,
) -> Placement:
    """The nodes this template can land on (optionally with extra tolerations, in some zones)."""
    tolerations = (*template.tolerations, *extra_tolerations)
    allowed_zones = frozenset(zones) if zones is not None else None
    idx = _index(topology)
    cache_key = (_sched_key(template), tolerations, allowed_zones)
    hit = idx.placements.get(cache_key)
    if hit is not None:
        return hit
    ok: list[int] = []
    excluded: Counter[str] = Counter()
    first: dict[str, int] = {}  # reason -> first node it excluded (the per-node order)
    judge = _Judge(template, tolerations, idx)
    counts: Counter[int] = Counter()
    for c, cls in enumerate(idx.classes(read_keys(template))):
        for z, ps in cls.by_zone.items():
            if allowed_zones is not None and z not in allowed_zones:
                reason: str | None = "outside the chosen domain"
            else:
                reason = judge.plain(c, cls, z)
            if reason is None:
                ok.extend(ps)
                counts[cls.allocatable] += len(ps)
            else:
                excluded[reason] += len(ps)
                if ps[0] < first.get(reason, len(idx.nodes)):
                    first[reason] = ps[0]
    placement = idx.placements[cache_key] = _placement(idx, ok, excluded, first, counts)
    return placement


def place_in_domains(
    template: PodTemplate,
    topology: Topology,
    domains: Sequence[Sequence[str]],
    extra_tolerations: Sequence[Sequence[Toleration]],
) -> PinnedPlacements:
    """Per domain: place(pin(...)) of the template pinned to the domain's zones with that
    domain's extra tolerations (the placement members.pin computes), for all domains.

    Each node class is judged once per set of tolerations; a domain then only sums its
    zones, and only when asked. `domains` and `extra_tolerations` should be the same
    objects on every call (they are part of the cache key by identity).
    """
    idx = _index(topology)
    cache_key = (_sched_key(template), template.tolerations, id(domains), id(extra_tolerations))
    hit = idx.pinned.get(cache_key)
    if hit is None:
        idx.keep += [domains, extra_tolerations]
        hit = idx.pinned[cache_key] = PinnedPlacements(idx, template, domains, extra_tolerations)
    return hit


class PinnedPlacements(Sequence[Placement]):
    """The placements of place_in_domains, built domain by domain when first asked for;
    whether a domain has any node for the template is answered without building it."""

    def __init__(
        self,
        idx: _NodeIndex,
        template: PodTemplate,
        domains: Sequence[Sequence[str]],
        extra_tolerations: Sequence[Sequence[Toleration]],
    ) -> None:
        self.idx = idx
        self.template = template
        self.domains = domains
        self.extra = extra_tolerations
        keys = read_keys(template)
        self.classes = idx.classes(keys)
        self.in_zone = idx.zone_classes(keys)
        self._judged: dict[tuple[Toleration, ...], _Outside] = {}
        self._by_extra: dict[int, _Outside] = {}
        self._items: list[Placement | None] = [None] * len(domains)
        self._nonempty: list[bool | None] = [None] * len(domains)

    def __len__(self) -> int:
        return len(self.domains)

    @overload
    def __getitem__(self, d: int) -> Placement: ...
    @overload
    def __getitem__(self, d: slice) -> Sequence[Placement]: ...
    def __getitem__(self, d: int | slice) -> Placement | Sequence[Placement]:
        if isinstance(d, slice):
            return [self[i] for i in range(len(self))[d]]
        hit = self._items[d]
        if hit is None:
            hit = self._items[d] = self._build(d)
        return hit

    def _judge(self, d: int) -> _Outside:
        extra = self.extra[d]
        hit = self._by_extra.get(id(extra))
        if hit is None:
            tolerations = tuple(dict.fromkeys((*self.template.tolerations, *extra)))
            hit = self._judged.get(tolerations)
            if hit is None:
                hit = self._judged[tolerations] = _Outside(
                    _Judge(self.template, tolerations, self.idx), self.classes
                )
            self._by_extra[id(extra)] = hit
        return hit

    def nonempty(self, d: int) -> bool:
        """Whether the template can run anywhere in domain d."""
        hit = self._nonempty[d]
        if hit is None:
            j = self._judge(d)
            hit = self._nonempty[d] = any(j.zone_ok(z, self.in_zone) for z in self.domains[d])
        return hit

    def why_not(self, d: int) -> str:
        """self[d].why_not(), from counts alone (no placement built)."""
        built = self._items[d]
        if built is not None:
            return built.why_not()
        j = self._judge(d)
        outside = Counter(j.total)
        excluded: Counter[str] = Counter()
        for z in set(self.domains[d]):
            for c, ps in self.in_zone.get(z, ()):
                inside, out_reason = j.by_class[c] if j.by_class is not None else j.at(c, z)
                outside[out_reason] -= len(ps)
                if inside is not None:
                    excluded[inside] += len(ps)
        for reason, count in outside.items():
            if count > 0:
                excluded[reason] += count
        return why_not(excluded)

    def allocatables(self, d: int) -> Mapping[int, int]:
        """The nodes of domain d's placement counted by allocatable (see room())."""
        built = self._items[d]
        if built is not None:
            counts = built.__dict__.get("_topogen_allocatables")
            if counts is not None:
                return counts  # type: ignore[no-any-return]
        j, classes = self._judge(d), self.classes
        out: dict[int, int] = {}
        for z in self.domains[d]:
            for c, ps in self.in_zone.get(z, ()):
                inside = j.by_class[c][0] if j.by_class is not None else j.at(c, z)[0]
                if inside is None:
                    a = classes[c].allocatable
                    out[a] = out.get(a, 0) + len(ps)
        return out

    def _build(self, d: int) -> Placement:
        idx, classes, j = self.idx, self.classes, self._judge(d)
        wanted = set(self.domains[d])
        ok: list[int] = []
        excluded: Counter[str] = Counter()
        first: dict[str, int] = {}
        outside = Counter(j.total)
        counts: Counter[int] = Counter()
        for z in wanted:
            for c, ps in self.in_zone.get(z, ()):
                inside, out_reason = j.by_class[c] if j.by_class is not None else j.at(c, z)
                outside[out_reason] -= len(ps)
                if inside is None:
                    ok.extend(ps)
                    counts[classes[c].allocatable] += len(ps)
                else:
                    excluded[inside] += len(ps)
                    if ps[0] < first.get(inside, len(idx.nodes)):
                        first[inside] = ps[0]
        for reason, count in outside.items():
            if count > 0:
                excluded[reason] += count
                pos = j.first_outside(reason, wanted)
                if pos < first.get(reason, len(idx.nodes)):
                    first[reason] = pos
        return _placement(idx, ok, excluded, first, counts)


class _Outside:
    """Where a pinned template is excluded outside its domain: totals over every zone."""

    def __init__(self, judge: _Judge, classes: list[NodeClass]) -> None:
        self.judge = judge
        self.nodes = judge.nodes
        self.classes = classes
        self.total: Counter[str] = Counter()
        # judge.pinned per class when the zone does not matter, else per class and what
        # the template reads of the zone (its signature)
        self.by_class: list[tuple[str | None, str]] | None = None
        self._by_sig: dict[tuple[int, object], tuple[str | None, str]] = {}
        self._sig: dict[str, object] = {}
        self._zone_ok: dict[str, bool] = {}
        self._runs: dict[str, list[tuple[int, str | None, tuple[int, ...]]]] | None = None
        if not judge.reads_zone:
            self.by_class = [
                judge.pinned(c, cls, next(iter(cls.by_zone))) for c, cls in enumerate(classes)
            ]
            for (_, reason), cls in zip(self.by_class, classes, strict=True):
                self.total[reason] += len(cls.positions)
            return
        for c, cls in enumerate(classes):
            for z, ps in cls.by_zone.items():
                self.total[self.at(c, z)[1]] += len(ps)

    def at(self, c: int, zone: str) -> tuple[str | None, str]:
        """judge.pinned for class c in a zone."""
        if self.by_class is not None:
            return self.by_class[c]
        sig = self._sig.get(zone, self)
        if sig is self:
            cls = self.classes[c]
            sig = self._sig[zone] = self.judge._signature(zone, self.nodes[cls.by_zone[zone][0]])
        hit = self._by_sig.get((c, sig))
        if hit is None:
            hit = self._by_sig[(c, sig)] = self.judge.pinned(c, self.classes[c], zone)
        return hit

    def zone_ok(self, zone: str, in_zone: Mapping[str, list[tuple[int, tuple[int, ...]]]]) -> bool:
        """Does some node of the zone take the template (inside the domain)?"""
        hit = self._zone_ok.get(zone)
        if hit is None:
            hit = self._zone_ok[zone] = any(
                self.at(c, zone)[0] is None for c, _ in in_zone.get(zone, ())
            )
        return hit

    def first_outside(self, reason: str, wanted: set[str]) -> int:
        """The first node outside the domain this reason excludes."""
        if self._runs is None:
            # reason -> runs of nodes it excludes, by first node: (first, zone or None, nodes)
            runs: dict[str, list[tuple[int, str | None, tuple[int, ...]]]] = {}
            for c, cls in enumerate(self.classes):
                if self.by_class is not None:
                    runs.setdefault(self.by_class[c][1], []).append(
                        (cls.positions[0], None, cls.positions)
                    )
                    continue
                for z, ps in cls.by_zone.items():
                    runs.setdefault(self.at(c, z)[1], []).append((ps[0], z, ps))
            for r in runs.values():
                r.sort()
            self._runs = runs
        nodes = self.nodes
        best = len(nodes)
        for start, zone, run in self._runs[reason]:
            if start >= best:
                break
            if zone is not None:
                if zone not in wanted:
                    best = start
            else:
                best = min(best, next((p for p in run if nodes[p].zone not in wanted), best))
        return best


@dataclass(frozen=True)
class PodDemand:
    """`count` identical pods that may go on `nodes` (names) and each request `requests`."""

    role: str
    count: int
    requests: Mapping[str, Fraction]
    nodes: frozenset[str]


def pack(
    demands: Sequence[PodDemand], nodes: Sequence[Node], gpu_resources: Sequence[str]
) -> tuple[bool, str]:
    """First-fit decreasing of every pod onto nodes; (fits, what is missing)."""
    allocatable = {n.name: n.allocatable for n in nodes}
    free: dict[str, dict[str, Fraction]] = {}  # nodes a pod went to (the rest: allocatable)

    def free_of(name: str) -> Mapping[str, Fraction]:
        return free.get(name) or allocatable[name]

    order = sorted(
        demands,
        key=lambda d: (
            -sum(d.requests.get(g, 0) for g in gpu_resources),
            -d.requests.get("cpu", 0),
            d.role,
        ),
    )
    for d in order:
        names = sorted(n for n in d.nodes if n in allocatable)
        i = 0  # first fit only moves forward: free capacity never grows back
        for placed in range(d.count):
            while i < len(names) and not _fits(d.requests, free_of(names[i])):
                i += 1
            if i == len(names):
                return False, _shortfall(d, d.count - placed, free_of, gpu_resources)
            target = free.get(names[i])
            if target is None:
                target = free[names[i]] = dict(allocatable[names[i]])
            for res, want in d.requests.items():
                if res in target:
                    target[res] -= want
            if "pods" in target:
                target["pods"] -= 1
    return True, ""


def _fits(requests: Mapping[str, Fraction], free: Mapping[str, Fraction]) -> bool:
    if "pods" in free and free["pods"] < 1:
        return False
    for res, want in requests.items():
        if want <= 0:
            continue
        have = free.get(res)
        if have is None:
            if res in ("cpu", "memory", "ephemeral-storage"):
                continue
            return False
        if have < want:
            return False
    return True


def _shortfall(
    d: PodDemand,
    left: int,
    free_of: Callable[[str], Mapping[str, Fraction]],
    gpu_resources: Sequence[str],
) -> str:
    for g in gpu_resources:
        want = d.requests.get(g, 0)
        if want > 0:
            have = sum(free_of(n).get(g, 0) for n in d.nodes if _known(free_of, n))
            return (
                f"{left} more {d.role} pod(s) need {_fmt(want * left)} {g}, "
                f"only {_fmt(have)} free on the nodes they may use"
            )
    return f"{left} more {d.role} pod(s) do not fit on the nodes they may use"


def _known(free_of: Callable[[str], Mapping[str, Fraction]], name: str) -> bool:
    try:
        free_of(name)
    except KeyError:
        return False
    return True


def _fmt(q: Fraction | int) -> str:
    q = Fraction(q)
    return str(q.numerator) if q.denominator == 1 else f"{float(q):g}"
