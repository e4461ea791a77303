"""Node classes: nodes the scheduler's filters cannot tell apart, per set of label keys.

Nodes in one zone with the same values of the labels a template reads and the same of
what else the filters read of a node (analysis/filters/: taints, allocatable, cordon
state ...) are interchangeable for the scheduler's filters, so one representative decides
for all of them (fit.py judges it, placement.py sums the classes).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from topogen.analysis import filters
from topogen.analysis.filters import NAME_KEY
from topogen.analysis.filters.resources import allocatable_key
from topogen.analysis.placed import Placement
from topogen.model import Node, PodTemplate, Topology

__all__ = ["NodeClass", "NodeIndex", "read_keys"]


@dataclass(frozen=True)
class NodeClass:
    """Nodes the scheduler's filters cannot tell apart, but for their zone, for templates
    reading `keys` (besides the zone label): same values of those labels, same of what
    else the filters read of a node (filters.node_kind), same allocatable."""

    representative: Node
    positions: tuple[int, ...]  # indices into topology.nodes, ascending
    by_zone: Mapping[str, tuple[int, ...]]  # the same positions per zone
    allocatable: int  # names the nodes' allocatable (see room())


class NodeIndex:
    """Per topology, for one run: node classes per set of label keys, and what placement
    has computed already (placements, pinned placements, room per allocatable; each
    placement's nodes counted by allocatable and their names). Every group of a cluster
    shares one (analysis.cluster.ClusterIndex)."""

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self.nodes = topology.nodes
        self.zone_label = topology.zone_label
        # nodes an autoscaler would add are counted apart (analysis/provisioning.py)
        ids: dict[tuple[tuple[tuple[str, object, int], ...], bool], int] = {}
        self.allocatable = [
            ids.setdefault((allocatable_key(n.allocatable), n.scale_up is not None), len(ids))
            for n in topology.nodes
        ]
        self.new_allocatables = frozenset(i for (_, new), i in ids.items() if new)
        self.allocatables: list[Mapping[str, Fraction]] = [{}] * len(ids)
        for i, n in enumerate(topology.nodes):
            self.allocatables[self.allocatable[i]] = n.allocatable
        kinds: dict[tuple[Hashable, ...], int] = {}
        self.kind = [kinds.setdefault(filters.node_kind(n), len(kinds)) for n in topology.nodes]
        self.rooms: dict[tuple[int, int], int] = {}
        self.partitions: dict[frozenset[str], list[NodeClass]] = {}
        self.by_zone: dict[frozenset[str], dict[str, list[tuple[int, tuple[int, ...]]]]] = {}
        self.placements: dict[tuple[object, ...], Placement] = {}
        self.pinned: dict[tuple[object, ...], Sequence[Placement]] = {}
        self.keep: list[object] = []  # objects whose id() is part of a cache key
        # id(placement) -> (the placement, kept alive, and what is known of it)
        self._counts: dict[int, tuple[Placement, Mapping[int, int]]] = {}
        self._names: dict[int, tuple[Placement, frozenset[str]]] = {}
        self._positions: dict[int, int] | None = None  # id(node) -> position
        # id(template) -> (the template, kept alive, and the number of what the filters
        # read of it: equal numbers, equal placements)
        self._templates: dict[int, tuple[PodTemplate, int]] = {}
        self._template_ids: dict[tuple[Hashable, ...], int] = {}

    def template_id(self, template: PodTemplate) -> int:
        """A small int naming filters.template_key(template) (tolerations aside)."""
        hit = self._templates.get(id(template))
        if hit is not None and hit[0] is template:
            return hit[1]
        ids = self._template_ids
        n = ids.setdefault(filters.template_key(template), len(ids))
        self._templates[id(template)] = (template, n)
        return n

    def classes(self, keys: frozenset[str]) -> list[NodeClass]:
        keys = keys - {self.zone_label}
        hit = self.partitions.get(keys)
        if hit is None:
            ordered = sorted(keys - {NAME_KEY})
            by_name = NAME_KEY in keys
            groups: dict[tuple[object, ...], list[int]] = {}
            for i, n in enumerate(self.nodes):
                labels = n.labels
                key = (
                    tuple(labels.get(k) for k in ordered),
                    n.name if by_name else "",
                    self.kind[i],
                    self.allocatable[i],
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

    def counts(self, placement: Placement) -> Mapping[int, int]:
        """The placement's nodes counted by allocatable (see packing.room())."""
        hit = self._counts.get(id(placement))
        if hit is not None and hit[0] is placement:
            return hit[1]
        counts: dict[int, int] = {}
        if placement.nodes:
            if self._positions is None:
                self._positions = {id(n): i for i, n in enumerate(self.nodes)}
            positions = self._positions
            for n in placement.nodes:
                a = self.allocatable[positions[id(n)]]
                counts[a] = counts.get(a, 0) + 1
        self._counts[id(placement)] = (placement, counts)
        return counts

    def counted(self, placement: Placement, counts: Mapping[int, int]) -> None:
        """Record the counts of a placement this index has just built."""
        self._counts[id(placement)] = (placement, counts)

    def known_counts(self, placement: Placement) -> Mapping[int, int] | None:
        hit = self._counts.get(id(placement))
        return hit[1] if hit is not None and hit[0] is placement else None

    def names(self, placement: Placement) -> frozenset[str]:
        """The names of the placement's nodes."""
        hit = self._names.get(id(placement))
        if hit is not None and hit[0] is placement:
            return hit[1]
        names = frozenset(n.name for n in placement.nodes)
        self._names[id(placement)] = (placement, names)
        return names


def read_keys(template: PodTemplate) -> frozenset[str]:
    """Node label keys the filters read for the template (its nodeSelector and required
    node affinity, with the built-in ones)."""
    return filters.label_keys(template)
