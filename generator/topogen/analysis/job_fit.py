"""Whether a job's pods fit its nodes: first-fit decreasing, and the room shortcut."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from topogen.analysis.nodeindex import NodeIndex
from topogen.analysis.placed import Placement
from topogen.model import Node, quantity

__all__ = ["PodDemand", "fits", "pack", "room"]


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
            while i < len(names) and not fits(d.requests, free_of(names[i])):
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
