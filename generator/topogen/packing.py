"""Capacity-aware assignment of known jobs to domains (the spread plan, plan stage).

Each job needs its GPUs inside one of its domains (the allowed domains that can hold it
alone). `assign` packs the jobs so that as many of their GPUs as possible run at once:
largest and most constrained jobs first, each into the domain it fits most tightly (best
fit), then a repair pass that moves a packed job to another of its domains when that
makes room for a job left over. The jobs that still do not fit at once queue where the
queued GPUs are the smallest share of the domain's GPUs, so every domain's queue drains
at about the same pace. Deterministic: ties are broken by name.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

__all__ = ["Assignment", "JobNeed", "assign"]

_MAX_BITS = 1 << 30  # the bit sets of one domain's subset sum, at most (128 MiB)


@dataclass(frozen=True)
class JobNeed:
    key: str
    gpus: Fraction
    domains: tuple[str, ...]  # in preference order


@dataclass(frozen=True)
class Assignment:
    domain: dict[str, str]  # job -> domain
    runs_at_once: frozenset[str]  # the jobs packed to run together; the others queue
    free: dict[str, Fraction]  # domain -> GPUs left when the packed jobs run


def assign(jobs: Sequence[JobNeed], capacity: Mapping[str, Fraction]) -> Assignment:
    """Every job with a domain gets one (see the module docstring)."""
    scale = math.lcm(1, *(j.gpus.denominator for j in jobs),
                     *(Fraction(c).denominator for c in capacity.values()))  # fmt: skip
    cap = {d: int(Fraction(c) * scale) for d, c in capacity.items()}
    order = sorted(
        (_Job(j.key, int(j.gpus * scale), j.domains) for j in jobs if j.domains),
        key=lambda j: (-j.gpus, len(j.domains), j.key),
    )
    tries = [_best_fit(order, cap), _domain_fill(order, cap, True), _domain_fill(order, cap, False)]
    where, room = max(tries, key=lambda t: sum(j.gpus for j in order if j.key in t[0]))
    where, room = dict(where), dict(room)
    left = _repair([j for j in order if j.key not in where], order, where, room)
    packed = frozenset(where)
    queued = dict.fromkeys(cap, 0)
    for j in left:
        d = min(
            j.domains,
            key=lambda d: (
                (queued.get(d, 0) + j.gpus) / max(cap.get(d, 0), 1),
                j.domains.index(d),
                d,
            ),
        )
        queued[d] = queued.get(d, 0) + j.gpus
        where[j.key] = d
    return Assignment(where, packed, {d: Fraction(r, scale) for d, r in room.items()})


@dataclass(frozen=True)
class _Job:
    key: str
    gpus: int  # scaled to whole units
    domains: tuple[str, ...]


def _best_fit(
    order: Sequence[_Job], capacity: Mapping[str, int]
) -> tuple[dict[str, str], dict[str, int]]:
    """Largest job first, into the domain it leaves the least room in."""
    room = dict(capacity)
    where: dict[str, str] = {}
    for j in order:
        fits = [d for d in j.domains if room.get(d, 0) >= j.gpus]
        if fits:
            d = min(fits, key=lambda d: (room[d], j.domains.index(d), d))
            room[d] -= j.gpus
            where[j.key] = d
    return where, room


def _domain_fill(
    order: Sequence[_Job], capacity: Mapping[str, int], smallest_first: bool
) -> tuple[dict[str, str], dict[str, int]]:
    """Domain by domain, the subset of the jobs left that fills it the most (subset sum
    over whole GPUs, as bit sets), jobs with fewer other domains preferred."""
    room = dict(capacity)
    where: dict[str, str] = {}
    domains = sorted(capacity, key=lambda d: (capacity[d] if smallest_first else -capacity[d], d))
    for d in domains:
        mine = [j for j in order if j.key not in where and d in j.domains]
        mine.sort(key=lambda j: (len(j.domains), -j.gpus, j.key))
        # sums beyond the jobs' total are never reached; a subset sum too large to hold
        # as bit sets (a node reporting 2^63 GPUs) leaves the domain to the other tries
        cap = min(room[d], sum(j.gpus for j in mine))
        if cap * (len(mine) + 1) > _MAX_BITS:
            continue
        full = (2 << cap) - 1
        reach = [1]  # reach[k]: bit s set when the first k jobs can make s GPUs
        for j in mine:
            reach.append((reach[-1] | reach[-1] << j.gpus) & full)
        s = reach[-1].bit_length() - 1
        for k in range(len(mine), 0, -1):  # take job k-1 only when the jobs before cannot
            if s and not reach[k - 1] >> s & 1:
                j = mine[k - 1]
                where[j.key] = d
                room[d] -= j.gpus
                s -= j.gpus
    return where, room


def _repair(
    left: list[_Job],
    order: Sequence[_Job],
    where: dict[str, str],
    room: dict[str, int],
    budget: int = 200_000,
) -> list[_Job]:
    """Fit left-over jobs by moving one packed job out of the way, where that works
    (moves only shift room between domains: a job larger than all the room left is
    skipped at once; at most `budget` candidate moves are looked at)."""
    still = []
    by_key = {j.key: j for j in order}
    packed: dict[str, list[_Job]] = {}
    for k, d in where.items():
        packed.setdefault(d, []).append(by_key[k])
    for d in packed:
        packed[d].sort(key=lambda m: (m.gpus, m.key))
    free = sum(room.values())
    for j in left:
        placed = False
        if j.gpus <= free and budget > 0:
            for d in j.domains:
                need = j.gpus - room.get(d, 0)
                for m in packed.get(d, ()):
                    budget -= 1
                    if m.gpus < need:
                        continue
                    dest = [e for e in m.domains if e != d and room.get(e, 0) >= m.gpus]
                    if not dest:
                        continue
                    e = min(dest, key=lambda e: (room[e], m.domains.index(e), e))
                    room[e] -= m.gpus
                    where[m.key] = e
                    packed[d].remove(m)
                    packed.setdefault(e, []).append(m)
                    packed[e].sort(key=lambda x: (x.gpus, x.key))
                    room[d] += m.gpus - j.gpus
                    where[j.key] = d
                    packed[d].append(j)
                    packed[d].sort(key=lambda x: (x.gpus, x.key))
                    free -= j.gpus
                    placed = True
                    break
                if placed or budget <= 0:
                    break
        if not placed:
            still.append(j)
    return still
