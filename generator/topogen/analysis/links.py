"""Which members of a job required pod affinity links, and on which topology keys."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from topogen.model import PodAffinityTerm

__all__ = ["LinkView", "Linkable", "Links", "linked_pairs", "links"]


class Linkable(Protocol):
    """What pod-affinity links read of a member."""

    @property
    def namespace(self) -> str: ...
    @property
    def labels(self) -> Mapping[str, str]: ...
    @property
    def pod_affinity(self) -> tuple[PodAffinityTerm, ...]: ...


Links = tuple[dict[str, dict[int, int]], dict[str, set[int]], dict[str, set[int]]]


def links(sides: Sequence[Linkable]) -> Links:
    """Union-find per topology key over members linked by required pod affinity
    (members.possible_zone_pairs, domains, JobPaths): (roots per key, anchored per key, anti per key)."""
    parent: dict[str, dict[int, int]] = {}
    anchored: dict[str, set[int]] = {}
    anti: dict[str, set[int]] = {}

    def find(key: str, i: int) -> int:
        p = parent.setdefault(key, {})
        while p.get(i, i) != i:
            i = p[i]
        return i

    for i, m in enumerate(sides):
        for term in m.pod_affinity:
            namespaces = term.namespaces or (m.namespace,)
            targets = [
                j
                for j, o in enumerate(sides)
                if o.namespace in namespaces and term.selector.matches(o.labels)
            ]
            if term.anti:
                if i in targets:
                    anti.setdefault(term.topology_key, set()).add(i)
                continue
            if not targets:
                continue
            anchored.setdefault(term.topology_key, set()).add(i)
            for j in targets:
                a, b = find(term.topology_key, i), find(term.topology_key, j)
                if a != b:
                    parent[term.topology_key][a] = b
    resolved = {key: {i: find(key, i) for i in range(len(sides))} for key in parent}
    return resolved, anchored, anti


@dataclass(frozen=True)
class LinkView:
    """A Linkable made of the parts links() reads."""

    namespace: str
    labels: Mapping[str, str]
    pod_affinity: tuple[PodAffinityTerm, ...]


def linked_pairs(
    replicas: Sequence[int], found: Links
) -> list[tuple[int, int, list[str], list[str]]]:
    """Every ordered pair of members that talk (i == j: two replicas of one member), with
    the topology keys that link them and, for two replicas, the anti-affinity keys."""
    roots, anchored, anti = found
    out = []
    for i, count in enumerate(replicas):
        for j in range(len(replicas)):
            if i == j and count < 2:
                continue
            if i == j:
                linked = [k for k, s in anchored.items() if i in s]
                anti_keys = [k for k, s in anti.items() if i in s]
            else:
                linked = [k for k, r in roots.items() if r[i] == r[j]]
                anti_keys = []
            out.append((i, j, linked, anti_keys))
    return out
