"""Where the scheduler may put a pod template: its nodes, and why the others are excluded.

Computed per node class (nodeindex.py), not per node, and cached in the run's NodeIndex
per scheduling-relevant template fields; place_in_domains does it for a template pinned to
each candidate domain at once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import overload

from topogen.analysis.filters import SCALE_UP
from topogen.analysis.fit import Judge
from topogen.analysis.nodeindex import NodeClass, NodeIndex, read_keys
from topogen.analysis.placed import Placement, why_not
from topogen.model import Node, PodTemplate, Toleration

__all__ = ["PinnedPlacements", "place", "place_in_domains"]


def _placement(
    idx: NodeIndex,
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
    idx.counted(placement, dict(allocatables))
    return placement


def place(
    template: PodTemplate,
    idx: NodeIndex,
    extra_tolerations: Sequence[Toleration] = (),
    zones: Iterable[str] | None = None,
) -> Placement:
    """The nodes this template can land on (optionally with extra tolerations, in some zones)."""
    tolerations = (*template.tolerations, *extra_tolerations)
    allowed_zones = frozenset(zones) if zones is not None else None
    # what the filters read of the template (tolerations aside): the caches' key
    cache_key = (idx.template_id(template), tolerations, allowed_zones)
    hit = idx.placements.get(cache_key)
    if hit is not None:
        return hit
    ok: list[int] = []
    excluded: Counter[str] = Counter()
    first: dict[str, int] = {}  # reason -> first node it excluded (the per-node order)
    judge = Judge(template, tolerations, idx)
    counts: Counter[int] = Counter()
    # where the zone decides nothing, a class is judged once for all its nodes
    whole = allowed_zones is None and not judge.reads_zone
    for c, cls in enumerate(idx.classes(read_keys(template))):
        runs = (
            ((idx.nodes[cls.positions[0]].zone, cls.positions),) if whole else cls.by_zone.items()
        )
        for z, ps in runs:
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
    idx: NodeIndex,
    domains: Sequence[Sequence[str]],
    extra_tolerations: Sequence[Sequence[Toleration]],
) -> PinnedPlacements:
    """Per domain: place(pin(...)) of the template pinned to the domain's zones with that
    domain's extra tolerations (the placement members.pin computes), for all domains.

    Each node class is judged once per set of tolerations; a domain then only sums its
    zones, and only when asked. `domains` and `extra_tolerations` should be the same
    objects on every call (they are part of the cache key by identity).
    """
    cache_key = (
        idx.template_id(template),
        template.tolerations,
        id(domains),
        id(extra_tolerations),
    )
    hit = idx.pinned.get(cache_key)
    if not isinstance(hit, PinnedPlacements):
        idx.keep += [domains, extra_tolerations]
        hit = idx.pinned[cache_key] = PinnedPlacements(idx, template, domains, extra_tolerations)
    return hit


class PinnedPlacements(Sequence[Placement]):
    """The placements of place_in_domains, built domain by domain when first asked for;
    whether a domain has any node for the template is answered without building it."""

    def __init__(
        self,
        idx: NodeIndex,
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
        self._nonempty_mask: int | None = None
        self._why: dict[int, str] = {}
        self._nodes: dict[int, tuple[Node, ...]] = {}  # nodes(d) of domains not built
        self._allocatables: dict[int, Mapping[int, int]] = {}

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
                    Judge(self.template, tolerations, self.idx), self.classes
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

    def zones(self, d: int) -> tuple[str, ...]:
        """self[d].zones, without building the placement."""
        built = self._items[d]
        if built is not None:
            return built.zones
        j = self._judge(d)
        return tuple(sorted(z for z in set(self.domains[d]) if j.zone_ok(z, self.in_zone)))

    def nonempty_mask(self) -> int:
        """The domains (as bits over their positions) where the template can run."""
        if self._nonempty_mask is None:
            mask = 0
            for d in range(len(self.domains)):
                if self.nonempty(d):
                    mask |= 1 << d
            self._nonempty_mask = mask
        return self._nonempty_mask

    def why_not(self, d: int) -> str:
        """self[d].why_not(), from counts alone (no placement built)."""
        hit = self._why.get(d)
        if hit is None:
            built = self._items[d]
            hit = self._why[d] = built.why_not() if built is not None else self._why_not(d)
        return hit

    def _classes_judged(
        self, d: int
    ) -> Iterator[tuple[int, tuple[int, ...], tuple[str | None, str]]]:
        """Domain d's node classes, zone by zone: (class, its nodes in the zone, why they
        are excluded inside the domain (None: they are not) and outside it)."""
        j = self._judge(d)
        for z in set(self.domains[d]):
            for c, ps in self.in_zone.get(z, ()):
                yield c, ps, (j.by_class[c] if j.by_class is not None else j.at(c, z))

    def _why_not(self, d: int) -> str:
        outside = Counter(self._judge(d).total)
        excluded: Counter[str] = Counter()
        for _, ps, (inside, out_reason) in self._classes_judged(d):
            outside[out_reason] -= len(ps)
            if inside is not None:
                excluded[inside] += len(ps)
        for reason, count in outside.items():
            if count > 0 and not reason.startswith(SCALE_UP):  # new nodes elsewhere: moot
                excluded[reason] += count
        return why_not(excluded)

    def allocatables(self, d: int) -> Mapping[int, int]:
        """The nodes of domain d's placement counted by allocatable (see packing.room());
        asked for by every job of the template (once per domain and job shape)."""
        hit = self._allocatables.get(d)
        if hit is None:
            hit = self._allocatables[d] = self._count_allocatables(d)
        return hit

    def _count_allocatables(self, d: int) -> Mapping[int, int]:
        built = self._items[d]
        if built is not None:
            counts = self.idx.known_counts(built)
            if counts is not None:
                return counts
        j, classes = self._judge(d), self.classes
        out: dict[int, int] = {}
        for z in self.domains[d]:
            for c, ps in self.in_zone.get(z, ()):
                inside = j.by_class[c][0] if j.by_class is not None else j.at(c, z)[0]
                if inside is None:
                    a = classes[c].allocatable
                    out[a] = out.get(a, 0) + len(ps)
        return out

    def nodes(self, d: int) -> tuple[Node, ...]:
        """self[d].nodes, without building the placement (no exclusions counted)."""
        built = self._items[d]
        if built is not None:
            return built.nodes
        hit = self._nodes.get(d)
        if hit is not None:
            return hit
        ok = [p for _, ps, (inside, _) in self._classes_judged(d) if inside is None for p in ps]
        ok.sort()
        nodes = self.idx.nodes
        hit = self._nodes[d] = tuple(nodes[i] for i in ok)
        return hit

    def _build(self, d: int) -> Placement:
        idx, classes, j = self.idx, self.classes, self._judge(d)
        wanted = set(self.domains[d])
        ok: list[int] = []
        excluded: Counter[str] = Counter()
        first: dict[str, int] = {}
        outside = Counter(j.total)
        counts: Counter[int] = Counter()
        for c, ps, (inside, out_reason) in self._classes_judged(d):
            outside[out_reason] -= len(ps)
            if inside is None:
                ok.extend(ps)
                counts[classes[c].allocatable] += len(ps)
            else:
                excluded[inside] += len(ps)
                if ps[0] < first.get(inside, len(idx.nodes)):
                    first[inside] = ps[0]
        for reason, count in outside.items():
            if count > 0 and not reason.startswith(SCALE_UP):
                excluded[reason] += count
                pos = j.first_outside(reason, wanted)
                if pos < first.get(reason, len(idx.nodes)):
                    first[reason] = pos
        return _placement(idx, ok, excluded, first, counts)


class _Outside:
    """Where a pinned template is excluded outside its domain: totals over every zone."""

    def __init__(self, judge: Judge, classes: list[NodeClass]) -> None:
        self.judge = judge
        self.nodes = judge.nodes
        self.classes = classes
        self._total: Counter[str] | None = None
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

    @property
    def total(self) -> Counter[str]:
        """Nodes per reason outside the domain, over every zone (made when first asked)."""
        if self._total is None:
            total: Counter[str] = Counter()
            if self.by_class is not None:
                for (_, reason), cls in zip(self.by_class, self.classes, strict=True):
                    total[reason] += len(cls.positions)
            else:
                for c, cls in enumerate(self.classes):
                    for z, ps in cls.by_zone.items():
                        total[self.at(c, z)[1]] += len(ps)
            self._total = total
        return self._total

    def at(self, c: int, zone: str) -> tuple[str | None, str]:
        """judge.pinned for class c in a zone."""
        if self.by_class is not None:
            return self.by_class[c]
        sig = self._sig.get(zone, self)
        if sig is self:
            cls = self.classes[c]
            sig = self._sig[zone] = self.judge.signature(zone, self.nodes[cls.by_zone[zone][0]])
        hit = self._by_sig.get((c, sig))
        if hit is None:
            hit = self._by_sig[(c, sig)] = self.judge.pinned(c, self.classes[c], zone)
        return hit

    def zone_ok(self, zone: str, in_zone: Mapping[str, list[tuple[int, tuple[int, ...]]]]) -> bool:
        """Does some node of the zone take the template (inside the domain)?"""
        hit = self._zone_ok.get(zone)
        if hit is None:
            by_class = self.by_class  # at() without a call per class
            entries = in_zone.get(zone, ())
            if by_class is not None:
                hit = any(by_class[c][0] is None for c, _ in entries)
            else:
                hit = False
                by_sig = self._by_sig
                sig = self._sig.get(zone, self)
                for c, ps in entries:
                    if sig is self:
                        sig = self._sig[zone] = self.judge.signature(zone, self.nodes[ps[0]])
                    judged = by_sig.get((c, sig))
                    if judged is None:
                        judged = by_sig[(c, sig)] = self.judge.pinned(c, self.classes[c], zone)
                    if judged[0] is None:
                        hit = True
                        break
            self._zone_ok[zone] = hit
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
