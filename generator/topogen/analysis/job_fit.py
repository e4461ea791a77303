"""Whether a job's pods fit its nodes: first-fit decreasing, and the room shortcut."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from topogen.analysis.nodeindex import NodeIndex
from topogen.analysis.placed import Placement
from topogen.model import Node, quantity

__all__ = ["PodDemand", "fits", "pack", "pack_pods", "room"]


def room(
    placement: Placement | Mapping[int, int], idx: NodeIndex, requests: Mapping[str, Fraction]
) -> tuple[int, int]:
    """(pods with these requests pack() puts on the placement's nodes when they are empty,
    the most on one node). Large when nothing bounds them. The placement may be given as
    its nodes counted by allocatable (PinnedPlacements.allocatables)."""
    counts = idx.counts(placement) if isinstance(placement, Placement) else placement
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
    fits, short, _ = pack_pods(demands, nodes, gpu_resources)
    return fits, short


def pack_pods(
    demands: Sequence[PodDemand],
    nodes: Sequence[Node],
    gpu_resources: Sequence[str],
    budgets: Mapping[str, Mapping[str, Fraction]] | None = None,
) -> tuple[bool, str, tuple[tuple[str, str], ...]]:
    """pack(), where a node an autoscaler would add (Node.scale_up) is used only while its
    pool's limits (`budgets`: pool -> what they leave) hold its cost, and the cost is then
    drawn from them; also the (pool, zone) of every such node the pods went to."""
    allocatable = {n.name: n.allocatable for n in nodes}
    new = {n.name: n for n in nodes if n.scale_up is not None}
    left = {p: dict(b) for p, b in (budgets or {}).items()}
    limited: set[str] = set()  # pools whose limits kept a pod off a node
    free: dict[str, dict[str, Fraction]] = {}  # nodes a pod went to (the rest: allocatable)

    def affordable(name: str) -> bool:
        """An unused new node whose pool's limits still hold it (others: True)."""
        node = new.get(name)
        if node is None or name in free or node.scale_up is None:
            return True
        budget = left.get(node.scale_up.pool, {})
        if all(node.scale_up.cost.get(r, 0) <= v for r, v in budget.items()):
            return True
        limited.add(node.scale_up.pool)
        return False

    def opened(name: str) -> None:
        node = new.get(name)
        if node is not None and node.scale_up is not None:
            budget = left.get(node.scale_up.pool, {})
            for r in budget:
                budget[r] -= node.scale_up.cost.get(r, Fraction(0))

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
            while i < len(names) and not (
                fits(d.requests, free_of(names[i])) and affordable(names[i])
            ):
                i += 1
            if i == len(names):
                short = _shortfall(d, d.count - placed, free_of, gpu_resources)
                usable = [new[n] for n in names if n in new]
                over = [n for n in new.values() if _over_limit(n, d.requests)]
                spent = (
                    limited | _spent(usable, left) | {n.scale_up.pool for n in over if n.scale_up}
                )
                if spent:
                    short += f"; the limits of {', '.join(sorted(spent))} are reached"
                return False, short, _opened(free, new)
            target = free.get(names[i])
            if target is None:
                opened(names[i])
                target = free[names[i]] = dict(allocatable[names[i]])
            for res, want in d.requests.items():
                if res in target:
                    target[res] -= want
            if "pods" in target:
                target["pods"] -= 1
    return True, "", _opened(free, new)


def _over_limit(node: Node, requests: Mapping[str, Fraction]) -> bool:
    """A new node its pool's limits leave no room for, which would hold such a pod."""
    return (
        node.scale_up is not None
        and bool(node.scale_up.over_limit)
        and (fits(requests, node.allocatable))
    )


def _spent(nodes: Sequence[Node], left: Mapping[str, Mapping[str, Fraction]]) -> set[str]:
    """The pools of these new nodes whose limits hold none of them any more."""
    pools: dict[str, bool] = {}
    for n in nodes:
        if n.scale_up is not None:
            budget = left.get(n.scale_up.pool, {})
            room = all(n.scale_up.cost.get(r, 0) <= v for r, v in budget.items())
            pools[n.scale_up.pool] = pools.get(n.scale_up.pool, False) or room
    return {p for p, room in pools.items() if not room}


def _opened(free: Mapping[str, object], new: Mapping[str, Node]) -> tuple[tuple[str, str], ...]:
    """(pool, zone) of the new nodes pods went to."""
    return tuple(
        sorted({(n.scale_up.pool, n.zone) for k, n in new.items() if k in free and n.scale_up})
    )


def fits(requests: Mapping[str, Fraction], free: Mapping[str, Fraction]) -> bool:
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
                f"{left} more {d.role} pod(s) need {quantity(want * left)} {g}, "
                f"only {quantity(have)} free on the nodes they may use"
            )
    return f"{left} more {d.role} pod(s) do not fit on the nodes they may use"


def _known(free_of: Callable[[str], Mapping[str, Fraction]], name: str) -> bool:
    try:
        free_of(name)
    except KeyError:
        return False
    return True
