"""How the plan ranks candidate domains, in one place. Every ranking puts the group's
preferZones first (in their order); then:

- pin (one domain for every job): the domain where the most jobs are eligible already,
  then the most GPUs free, then the name;
- spread (the order of the domains a group may use): the most GPUs free, then the name;
- a job that appears after the render, static identity: the most GPUs left over once the
  known jobs are packed, then the plan's order; no domain with room: the most left over,
  preferZones aside.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction

from topogen.analysis.domains import DomainCheck

__all__ = ["best_for_pin", "best_left_over", "most_left_over", "spread_order"]


def preferred(prefer: Sequence[str]) -> Callable[[str], int]:
    """A domain's place among preferZones (the others after them, alike)."""
    rank = {z: i for i, z in enumerate(prefer)}
    return lambda name: rank.get(name, len(rank))


def best_for_pin(
    good: Sequence[str], prefer: Sequence[str], checks: Sequence[Mapping[str, DomainCheck]]
) -> str:
    """Of the domains that hold every job, the one a pinned group goes to; `checks`: each
    job's check of each domain (the first job's free GPUs count)."""
    place = preferred(prefer)

    def score(name: str) -> tuple[int, int, Fraction, str]:
        mine = [c[name] for c in checks]
        return (place(name), -sum(c.already_eligible for c in mine), -mine[0].gpus_free, name)

    return min(good, key=score)


def spread_order(
    names: Sequence[str], prefer: Sequence[str], free: Mapping[str, Fraction]
) -> list[str]:
    """The domains a spread group may use, in the plan's order."""
    place = preferred(prefer)
    return sorted(names, key=lambda n: (place(n), -float(free[n]), n))


def best_left_over(
    room: Sequence[str], order: Sequence[str], prefer: Sequence[str], left: Mapping[str, Fraction]
) -> str:
    """Static identity: the one domain a job that appears after the render is pinned to."""
    place = preferred(prefer)
    return min(room, key=lambda n: (place(n), -left[n], order.index(n)))


def most_left_over(order: Sequence[str], left: Mapping[str, Fraction]) -> str:
    """No domain keeps room: the one with the most GPUs left over."""
    return min(order, key=lambda n: (-left[n], order.index(n)))
