"""GPU room per domain for the packing (assignment.py): the GPUs of a domain's existing
nodes, plus what autoscalers' pools can add there, where one pool's limits are one budget
for all its domains (a Karpenter NodePool's limits count every node it launches, in any
zone). Taking room from a domain takes its existing GPUs first, then the pools' in
order, and what a pool gives one domain it no longer has for another."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Room", "SharedPool"]


@dataclass(frozen=True)
class SharedPool:
    """A pool's room: `budget` units in all its domains together, at most `room[d]` in d."""

    name: str
    budget: int
    room: Mapping[str, int]


class Room:
    """domain -> units of room left, as a mapping the packing reads and writes
    (`room[d] -= n` takes n, `room[d] += n` gives n back)."""

    def __init__(self, fixed: Mapping[str, int], pools: Sequence[SharedPool] = ()) -> None:
        self.fixed = dict(fixed)
        self.pools = list(pools)
        self.used = {d: 0 for d in self.fixed}
        self.draw: list[dict[str, int]] = [{} for _ in self.pools]
        self.spent = [0 for _ in self.pools]

    def copy(self) -> Room:
        out = Room(self.fixed, self.pools)
        out.used = dict(self.used)
        out.draw = [dict(d) for d in self.draw]
        out.spent = list(self.spent)
        return out

    def _pool_room(self, p: int, d: str) -> int:
        pool = self.pools[p]
        return max(
            0,
            min(pool.room.get(d, 0) - self.draw[p].get(d, 0), pool.budget - self.spent[p]),
        )

    def __getitem__(self, d: str) -> int:
        if d not in self.fixed:
            raise KeyError(d)
        own = self.fixed[d] - self.used[d]
        if not self.pools:
            return own
        return own + sum(self._pool_room(p, d) for p in range(len(self.pools)))

    def get(self, d: str, default: int = 0) -> int:
        return self[d] if d in self.fixed else default

    def __setitem__(self, d: str, value: int) -> None:
        delta = value - self[d]
        if delta < 0:
            self._take(d, -delta)
        elif delta > 0:
            self._give(d, delta)

    def _take(self, d: str, units: int) -> None:
        own = min(units, max(0, self.fixed[d] - self.used[d]))
        self.used[d] += own
        units -= own
        for p in range(len(self.pools)):
            if units <= 0:
                break
            part = min(units, self._pool_room(p, d))
            self.draw[p][d] = self.draw[p].get(d, 0) + part
            self.spent[p] += part
            units -= part
        self.used[d] += units  # beyond every room: the domain goes short

    def _give(self, d: str, units: int) -> None:
        """Back in the reverse order of _take: what went short, the pools, then its own."""
        short = min(units, max(0, self.used[d] - self.fixed[d]))
        self.used[d] -= short
        units -= short
        for p in reversed(range(len(self.pools))):
            part = min(units, self.draw[p].get(d, 0))
            self.draw[p][d] = self.draw[p].get(d, 0) - part
            self.spent[p] -= part
            units -= part
        self.used[d] -= units

    def __contains__(self, d: object) -> bool:
        return d in self.fixed

    def __iter__(self) -> Iterator[str]:
        return iter(self.fixed)

    def keys(self) -> Iterator[str]:
        return iter(self.fixed)

    def values(self) -> Iterator[int]:
        return (self[d] for d in self.fixed)

    def items(self) -> Iterator[tuple[str, int]]:
        return ((d, self[d]) for d in self.fixed)

    def drawn(self) -> dict[str, tuple[str, ...]]:
        """domain -> the pools whose room it took (in pool order)."""
        out: dict[str, list[str]] = {}
        for p, pool in enumerate(self.pools):
            for d, units in sorted(self.draw[p].items()):
                if units > 0:
                    out.setdefault(d, []).append(pool.name)
        return {d: tuple(ps) for d, ps in out.items()}
