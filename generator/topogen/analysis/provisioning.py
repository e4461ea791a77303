"""The nodes the cluster's autoscalers can add (Karpenter NodePools, Cluster Autoscaler
node groups: topogen.nodepools), as nodes the analysis judges like any other.

Each offering a pool may launch (an instance type in a zone, with a capacity type) becomes
nodes marked ScaleUp, labelled and tainted as the autoscaler would make them: Karpenter's
well-known labels (zone, instance type, capacity type, NodePool, architecture, OS), the
template's labels, and a requirement's value where it names one (a custom label takes it);
the template's taints (never the startup taints: they go once the node is ready). An
offering the pool's requirements exclude (a zone among them) adds nothing. So the filters
of analysis/filters/ judge a new node as the scheduler and Karpenter would.

How many: as many as the pool's limits leave for that instance type alone (its capacity
counted, as Karpenter counts a node), at most as many as one workload object has pods (no
job needs more). A pool whose limits leave no room for a type gets one node that says so
(the limits filter excludes it with the reason). The limits are one budget for all of a
pool's zones and types: job_fit.pack draws it down node by node (budgets()), and the
domain capacity counts each pool's GPUs once per set of zones (room()).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction

from topogen.model import NO_ZONE_PREFIX, Node, ScaleUp, Workload, quantity
from topogen.nodepools import (
    CAPACITY_TYPE_LABEL,
    INSTANCE_TYPE_LABEL,
    KARPENTER,
    NODEPOOL_LABEL,
    NODES,
    UNLIMITED_GPUS,
    InstanceType,
    NodePool,
    Offering,
)

__all__ = ["KARPENTER_ZONE", "PoolRoom", "Provisioning"]

KARPENTER_ZONE = "topology.kubernetes.io/zone"  # the zone label Karpenter's nodes carry
_HOSTNAME = "kubernetes.io/hostname"


@dataclass(frozen=True)
class PoolRoom:
    """What one pool can add in some zones: GPUs, and whether a limit is what stops it
    (else UNLIMITED_GPUS)."""

    pool: str
    zones: tuple[str, ...]
    gpus: Fraction
    limited: bool
    budget: Fraction = Fraction(0)  # what it can add in all its zones together

    def describe(self) -> str:
        where = ", ".join(self.zones)
        if not self.limited:
            return f"{self.pool} in {where}, no GPU limit"
        return f"{self.pool} in {where}, up to {quantity(self.gpus)} GPUs"


@dataclass(frozen=True)
class _Launch:
    """One offering a pool may launch: its type, zone and the new node's labels."""

    pool: NodePool
    itype: InstanceType
    offering: Offering
    labels: Mapping[str, str]


class Provisioning:
    """The cluster's pools for one run: the nodes they add, their budgets, their room."""

    def __init__(
        self,
        pools: Sequence[NodePool],
        zone_label: str,
        gpu_resources: Sequence[str],
        workloads: Sequence[Workload],
    ) -> None:
        self.pools = list(pools)
        self.zone_label = zone_label
        self.gpu_resources = tuple(gpu_resources)
        per_object: dict[tuple[str, str, str], int] = {}
        for w in workloads:
            key = (w.kind, w.namespace, w.name)
            per_object[key] = per_object.get(key, 0) + max(0, w.replicas)
        self.most_pods = max([1, *per_object.values()])
        self.remaining = {p.title: _remaining(p) for p in self.pools}
        self.launches = {p.title: _launches(p) for p in self.pools}
        self._rooms: dict[tuple[str, tuple[str, ...]], PoolRoom] = {}
        self._budgets: dict[str, Fraction] = {}

    def nodes(self) -> list[Node]:
        """The nodes a scale-up can add, in the order first-fit should try them: pools of a
        higher weight first, then per zone the types with fewer GPUs first."""
        out: list[Node] = []
        for pool in self.pools:
            remaining = self.remaining[pool.title]
            for launch in self.launches[pool.title]:
                out.extend(self._nodes_of(pool, launch, remaining))
        return out

    def _nodes_of(
        self, pool: NodePool, launch: _Launch, remaining: Mapping[str, Fraction]
    ) -> list[Node]:
        t, zone = launch.itype, launch.labels.get(self.zone_label)
        if zone is None or zone.startswith(NO_ZONE_PREFIX):
            return []  # in no zone topogen knows: it cannot hold a job's zone
        cost = _cost(t)
        fits = _fits(cost, remaining)
        count = min(self.most_pods, fits)
        gpus = sum((t.allocatable.get(g, Fraction(0)) for g in self.gpu_resources), Fraction(0))
        stem = (
            f"~{max(0, 1000 - pool.weight):04d}/{pool.kind}/{pool.name}/{zone}/"
            f"{int(gpus):06d}/{t.name}/{launch.offering.capacity_type}"
        )
        over = "" if count else _over(t, cost, pool, remaining)
        return [
            Node(
                name=f"{stem}/{i}",
                labels={**launch.labels, _HOSTNAME: f"{stem}/{i}"},
                taints=pool.taints,
                allocatable=t.allocatable,
                zone=zone,
                scale_up=ScaleUp(pool.title, cost, over),
            )
            for i in range(max(count, 1))
        ]

    def budgets(self) -> dict[str, dict[str, Fraction]]:
        """pool -> what its limits leave, per limited resource (`nodes` included)."""
        return {k: dict(v) for k, v in self.remaining.items()}

    def room(self, zones: Sequence[str]) -> tuple[PoolRoom, ...]:
        """What each pool can add in these zones (pools that add GPUs there only): GPUs of
        whole nodes under its limits, the types with the most GPUs first."""
        out = []
        key_zones = tuple(zones)
        for pool in self.pools:
            key = (pool.title, key_zones)
            hit = self._rooms.get(key)
            if hit is None:
                hit = self._rooms[key] = replace(
                    self._room(pool, key_zones), budget=self._budget(pool)
                )
            if hit.gpus > 0:
                out.append(hit)
        return tuple(out)

    def _budget(self, pool: NodePool) -> Fraction:
        """The GPUs the pool can add in all its zones together."""
        hit = self._budgets.get(pool.title)
        if hit is None:
            launches = self.launches[pool.title]
            everywhere = sorted({str(launch.labels.get(self.zone_label)) for launch in launches})
            hit = self._budgets[pool.title] = self._room(pool, tuple(everywhere)).gpus
        return hit

    def _room(self, pool: NodePool, zones: tuple[str, ...]) -> PoolRoom:
        wanted = set(zones)
        types = {
            launch.itype.name: launch.itype
            for launch in self.launches[pool.title]
            if launch.labels.get(self.zone_label) in wanted
        }
        gpus_of = {
            n: sum((t.allocatable.get(g, Fraction(0)) for g in self.gpu_resources), Fraction(0))
            for n, t in types.items()
        }
        remaining = dict(self.remaining[pool.title])
        total = Fraction(0)
        for name in sorted((n for n in types if gpus_of[n] > 0), key=lambda n: (-gpus_of[n], n)):
            cost, g = _cost(types[name]), gpus_of[name]
            k = _fits(cost, remaining)
            if k >= _UNBOUNDED:  # no limit stops it
                return PoolRoom(pool.title, zones, UNLIMITED_GPUS, False)
            total += k * g
            for r in remaining:
                remaining[r] -= k * cost.get(r, Fraction(0))
        return PoolRoom(pool.title, zones, total, True)

    def gaps(self, zones: Sequence[str]) -> str:
        """Why no pool adds a node in these zones ("" when one does)."""
        wanted = set(zones)
        reasons = []
        for pool in self.pools:
            launches = self.launches[pool.title]
            if any(launch.labels.get(self.zone_label) in wanted for launch in launches):
                return ""
            reasons.append(f"{pool.title}: {_why_not_here(pool, wanted, self.zone_label)}")
        if not reasons:
            return ""
        kinds = sorted({p.kind for p in self.pools})
        who = " or ".join(kinds)
        return f"no {who} can add a node in {', '.join(zones)} ({'; '.join(reasons)})"


def _remaining(pool: NodePool) -> dict[str, Fraction]:
    return {r: limit - pool.in_use.get(r, Fraction(0)) for r, limit in pool.limits.items()}


def _cost(t: InstanceType) -> dict[str, Fraction]:
    """What one node of this type counts against its pool's limits."""
    return {**t.capacity, NODES: Fraction(1)}


_UNBOUNDED = 1 << 30


def _fits(cost: Mapping[str, Fraction], remaining: Mapping[str, Fraction]) -> int:
    """How many nodes of this cost the remaining limits allow (_UNBOUNDED: none binds)."""
    most = _UNBOUNDED
    for r, left in remaining.items():
        c = cost.get(r, Fraction(0))
        if c > 0:
            most = min(most, max(0, math.floor(left / c)))
    return most


def _over(
    t: InstanceType, cost: Mapping[str, Fraction], pool: NodePool, remaining: Mapping[str, Fraction]
) -> str:
    parts = [
        f"{r} {quantity(pool.in_use.get(r, Fraction(0)))} of {quantity(pool.limits[r])} in use, "
        f"a {t.name} counts {quantity(cost.get(r, Fraction(0)))}"
        for r, left in sorted(remaining.items())
        if cost.get(r, Fraction(0)) > left
    ]
    return "; ".join(parts)


def _launches(pool: NodePool) -> list[_Launch]:
    """The offerings the pool may launch, with the labels their nodes get."""
    out = []
    for t in pool.instance_types:
        for o in t.offerings:
            labels = _labels(pool, t, o)
            if labels is not None:
                out.append(_Launch(pool, t, o, labels))
    return out


def _labels(pool: NodePool, t: InstanceType, o: Offering) -> dict[str, str] | None:
    """The labels of a node of this offering, or None when the pool's requirements exclude
    it (a requirement on a label the offering defines must hold; Karpenter's Intersects
    allows a label neither defines)."""
    if pool.kind != KARPENTER:
        return {"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux", **pool.labels}
    defined = {**t.labels, INSTANCE_TYPE_LABEL: t.name, KARPENTER_ZONE: o.zone}
    if o.capacity_type:
        defined[CAPACITY_TYPE_LABEL] = o.capacity_type
    defined[NODEPOOL_LABEL] = pool.name
    custom: dict[str, str] = {}
    for r in pool.requirements:
        if r.key in defined:
            if not r.matches(defined):
                return None
        elif r.operator == "In" and len(r.values) == 1:
            custom[r.key] = r.values[0]
    return {
        **custom,
        **pool.labels,
        **defined,
        "karpenter.sh/registered": "true",
        "karpenter.sh/initialized": "true",
    }


def _why_not_here(pool: NodePool, zones: set[str], zone_label: str) -> str:
    """Why a pool launches nothing in these zones."""
    if pool.kind != KARPENTER:
        zone = pool.labels.get(zone_label)
        return f"its nodes are in {zone}" if zone else f"its nodes carry no {zone_label} label"
    if zone_label != KARPENTER_ZONE and zone_label not in pool.labels:
        return f"its nodes carry {KARPENTER_ZONE}, not {zone_label}"
    if not pool.instance_types:
        return "no instance type is declared for it"
    offered = sorted({o.zone for t in pool.instance_types for o in t.offerings})
    if not any(z in zones for z in offered):
        return f"no instance type it may launch is offered there (offered in {', '.join(offered)})"
    for r in pool.requirements:
        if r.key == KARPENTER_ZONE and not any(r.matches({KARPENTER_ZONE: z}) for z in zones):
            return f"its requirements allow {r.key} {r.operator} [{' '.join(r.values)}]"
    return "its requirements exclude every instance type offered there"
