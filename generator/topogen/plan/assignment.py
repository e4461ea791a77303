"""Capacity-aware assignment of known jobs to domains (the spread plan, plan stage).

Each job needs its GPUs inside one of its domains (the allowed domains that can hold it
alone). `assign` packs the jobs so that as many of their GPUs as possible run at once:
largest and most constrained jobs first, each into the domain it fits most tightly (best
fit), then a repair pass that moves a packed job to another of its domains when that
makes room for a job left over. Deterministic: ties are broken by name.

The jobs that still do not fit at once queue, each in a slot of one of its domains: a set
of packed jobs of that domain and of the job's kind whose GPUs (with the domain's room
left over) hold the queued job (one kind: the engines select a slot's jobs with one
anti-affinity term, since the scheduler retries a pod that anti-affinity holds back when
a deleted pod matches all of its terms). A slot's alternatives (the packed jobs, then each group of queued jobs that
fit it together) never share the domain: each queued job excludes the jobs of the slot's
other alternatives (required pod anti-affinity on the domain, which the scheduler also
applies the other way round), so whichever alternative starts first runs whole and the
others wait, and no set of jobs that may run together needs more GPUs than the domain
has. A queued job goes where it waits behind the fewest alternatives (joining an
alternative it fits beside adds none; the queues drain side by side), then where the
fewest GPUs would idle if it started first: an alternative it fills further, a slot close
to its size, or a new slot of the packed jobs closest above its size. One that no slot
can hold runs alone in its domain (it excludes every other known job there).

Stable: a job the last render placed (`keep`: its domain then, still one of its own) stays
there. Those jobs go in first, largest first, each into its old domain while it has room;
the repair pass never moves them; the other jobs are packed into what is left. A kept job
its domain no longer has room for (the domain lost GPUs) is packed like a new one, its old
domain first; one that was queued stays queued there (it may be the one of its slot that
runs).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from topogen.plan.capacity import Room, SharedPool

__all__ = ["Assignment", "JobNeed", "PoolNeed", "assign"]

_MAX_BITS = 1 << 30  # the bit sets of one domain's subset sum, at most (128 MiB)


@dataclass(frozen=True)
class JobNeed:
    key: str
    gpus: Fraction
    domains: tuple[str, ...]  # in preference order
    kind: str = ""  # jobs share a slot only with jobs of their kind (one selector for all)


@dataclass(frozen=True)
class Assignment:
    domain: dict[str, str]  # job -> domain
    runs_at_once: frozenset[str]  # the jobs packed to run together; the others queue
    free: dict[str, Fraction]  # domain -> GPUs left when the packed jobs run
    # queued job -> the jobs of its domain it never runs beside (both ways round)
    excludes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # domain -> GPUs no known job ever needs: `free` less the room the queue slots take
    # (what a job that appears after the render can have without crowding a known one)
    left: dict[str, Fraction] = field(default_factory=dict)
    # domain -> the pools whose nodes its packed jobs need (they fit after a scale-up)
    scale_up: dict[str, tuple[str, ...]] = field(default_factory=dict)


def assign(
    jobs: Sequence[JobNeed],
    capacity: Mapping[str, Fraction],
    keep: Mapping[str, str] | None = None,
    was_queued: frozenset[str] = frozenset(),
    pools: Sequence[PoolNeed] = (),
) -> Assignment:
    """Every job with a domain gets one (see the module docstring); `capacity`: the GPUs of
    each domain's existing nodes; `keep`: job -> the domain the last render gave it,
    `was_queued`: those it queued there; `pools`: what autoscalers can add (capacity.py:
    one budget per pool for all its domains)."""
    scale = math.lcm(1, *(j.gpus.denominator for j in jobs),
                     *(Fraction(c).denominator for c in capacity.values()),
                     *(Fraction(v).denominator for p in pools
                       for v in (p.budget, *p.room.values())))  # fmt: skip
    cap = Room(
        {d: int(Fraction(c) * scale) for d, c in capacity.items()},
        [
            SharedPool(
                p.name, int(p.budget * scale), {d: int(v * scale) for d, v in p.room.items()}
            )
            for p in pools
        ],
    )
    order = sorted(
        (_Job(j.key, int(j.gpus * scale), j.domains, j.kind) for j in jobs if j.domains),
        key=lambda j: (-j.gpus, len(j.domains), j.key),
    )
    kept, order = _kept_first(order, cap, keep or {}, was_queued)
    fresh = [j for j in order if j.key not in kept]
    by_domain = _jobs_by_domain(fresh)
    tries = [
        _best_fit(fresh, cap),
        _domain_fill(by_domain, cap, True),
        _domain_fill(by_domain, cap, False),
    ]
    where, room = max(tries, key=lambda t: sum(j.gpus for j in fresh if j.key in t[0]))
    where, room = {**kept, **where}, room.copy()
    left = _repair([j for j in order if j.key not in where], order, where, room, set(kept))
    packed = set(where)
    free = {d: Fraction(r, scale) for d, r in room.items()}
    drawn = room.drawn()
    excludes = _queue(left, order, where, room, packed)
    spare = {d: Fraction(r, scale) for d, r in room.items()}
    return Assignment(where, frozenset(packed), free, excludes, spare, drawn)


@dataclass(frozen=True)
class PoolNeed:
    """What an autoscaler's pool can add: `budget` GPUs in all, at most `room[d]` in d."""

    name: str
    budget: Fraction
    room: Mapping[str, Fraction]


@dataclass(frozen=True)
class _Job:
    key: str
    gpus: int  # scaled to whole units
    domains: tuple[str, ...]
    kind: str = ""


def _kept_first(
    order: Sequence[_Job], cap: Room, keep: Mapping[str, str], was_queued: frozenset[str]
) -> tuple[dict[str, str], list[_Job]]:
    """The jobs the last render packed that stay where it put them, placed first (`cap`
    loses their GPUs); and every job in packing order, the others it placed with their old
    domain first among their own (one it queued: its only domain, so it queues there
    again unless room is left)."""
    kept: dict[str, str] = {}
    out: list[_Job] = []
    for j in order:
        d = keep.get(j.key)
        if d is None or d not in j.domains:
            out.append(j)
        elif j.key not in was_queued and cap.get(d, 0) >= j.gpus:
            cap[d] -= j.gpus
            kept[j.key] = d
            out.append(j)
        else:
            rest = () if j.key in was_queued else tuple(e for e in j.domains if e != d)
            out.append(_Job(j.key, j.gpus, (d, *rest), j.kind))
    return kept, out


def _best_fit(order: Sequence[_Job], capacity: Room) -> tuple[dict[str, str], Room]:
    """Largest job first, into the domain it leaves the least room in."""
    room = capacity.copy()
    where: dict[str, str] = {}
    for j in order:
        best: tuple[int, int, str] | None = None  # (room, its place in j.domains, domain)
        for k, d in enumerate(j.domains):
            r = room.get(d, 0)
            if r >= j.gpus and (best is None or (r, k, d) < best):
                best = (r, k, d)
        if best is not None:
            d = best[2]
            room[d] -= j.gpus
            where[j.key] = d
    return where, room


def _jobs_by_domain(order: Sequence[_Job]) -> dict[str, list[_Job]]:
    """Per domain its jobs, those with fewer other domains first, then the larger (sorted
    once, for both of _domain_fill's tries)."""
    by_domain: dict[str, list[_Job]] = {}
    for j in sorted(order, key=lambda j: (len(j.domains), -j.gpus, j.key)):
        for d in dict.fromkeys(j.domains):
            by_domain.setdefault(d, []).append(j)
    return by_domain


def _domain_fill(
    by_domain: Mapping[str, Sequence[_Job]], capacity: Room, smallest_first: bool
) -> tuple[dict[str, str], Room]:
    """Domain by domain, the subset of the jobs left that fills it the most (subset sum
    over whole GPUs, as bit sets), jobs with fewer other domains preferred (by_domain:
    _jobs_by_domain)."""
    room = capacity.copy()
    where: dict[str, str] = {}
    domains = sorted(capacity, key=lambda d: (capacity[d] if smallest_first else -capacity[d], d))
    for d in domains:
        mine = [j for j in by_domain.get(d, ()) if j.key not in where]
        # sums beyond the jobs' total are never reached; a subset sum too large to hold
        # as bit sets (a node reporting 2^63 GPUs) leaves the domain to the other tries
        cap = min(room[d], sum(j.gpus for j in mine))
        if cap * (len(mine) + 1) > _MAX_BITS:
            continue
        full = (2 << cap) - 1
        reach = [1]  # reach[k]: bit s set when the first k jobs can make s GPUs
        for j in mine:
            reach.append((reach[-1] | reach[-1] << j.gpus) & full)
            if reach[-1] >> cap:
                break  # the domain can be filled: the jobs after are never taken below
        s = reach[-1].bit_length() - 1
        for k in range(len(reach) - 1, 0, -1):  # take job k-1 only when the jobs before cannot
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
    room: Room,
    fixed: set[str],
    budget: int = 200_000,
) -> list[_Job]:
    """Fit left-over jobs by moving one packed job (not a `fixed` one) out of the way,
    where that works (moves only shift room between domains: a job larger than all the
    room left is skipped at once; at most `budget` candidate moves are looked at)."""
    still = []
    by_key = {j.key: j for j in order}
    packed: dict[str, list[_Job]] = {}
    for k, d in where.items():
        if k not in fixed:
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


@dataclass
class _Slot:
    domain: str
    kind: str
    width: int  # the GPUs its alternatives may use at once
    alternatives: list[list[_Job]]  # [0]: the packed jobs it is made of


def _queue(
    left: Sequence[_Job],
    order: Sequence[_Job],
    where: dict[str, str],
    room: Room,
    packed: set[str],
) -> dict[str, tuple[str, ...]]:
    """Each job left over into a slot (see the module docstring); `where` gets their
    domains, `room` loses the room slots take. Returns what each queued job excludes."""
    by_key = {j.key: j for j in order}
    loose: dict[tuple[str, str], list[_Job]] = {}  # (domain, kind) -> packed, in no slot
    for k in sorted(where):
        loose.setdefault((where[k], by_key[k].kind), []).append(by_key[k])
    slots: list[_Slot] = []
    alone: list[_Job] = []
    for j in left:
        best: tuple[tuple[int, ...], _Slot | None, int, str] | None = None
        for rank, d in enumerate(j.domains):
            for n, s in enumerate(slots):
                if s.domain != d or s.kind != j.kind or s.width < j.gpus:
                    continue
                for i, alt in enumerate(s.alternatives[1:], 1):  # join a queued alternative
                    idle = s.width - sum(m.gpus for m in alt) - j.gpus
                    if idle >= 0:
                        best = _better(best, ((len(s.alternatives), idle, 0, rank, n), s, i, d))
                idle = s.width - j.gpus  # a new alternative: one more to wait its turn
                best = _better(best, ((len(s.alternatives) + 1, idle, 1, rank, n), s, 0, d))
            need = j.gpus - room.get(d, 0)
            took = _closest_above(loose.get((d, j.kind), []), need)
            if took is not None:
                idle = max(0, sum(m.gpus for m in took) - j.gpus)
                best = _better(best, ((2, idle, 2, rank, len(slots)), None, 0, d))
        if best is None:
            alone.append(j)
            continue
        _, slot, i, d = best
        where[j.key] = d
        if slot is None:
            if j.gpus <= room.get(d, 0):  # room enough after all: it runs with the packed
                room[d] -= j.gpus
                packed.add(j.key)
                continue
            mine = loose.get((d, j.kind), [])
            took = _closest_above(mine, j.gpus - room.get(d, 0)) or []
            held = sum(m.gpus for m in took)
            room[d] -= max(0, j.gpus - held)
            loose[(d, j.kind)] = [m for m in mine if m not in took]
            slots.append(_Slot(d, j.kind, max(held, j.gpus), [list(took), [j]]))
        elif i:
            slot.alternatives[i].append(j)
        else:
            slot.alternatives.append([j])
    return _exclusions(slots, alone, where)


def _better(
    best: tuple[tuple[int, ...], _Slot | None, int, str] | None,
    option: tuple[tuple[int, ...], _Slot | None, int, str],
) -> tuple[tuple[int, ...], _Slot | None, int, str]:
    return option if best is None or option[0] < best[0] else best


def _closest_above(jobs: Sequence[_Job], need: int) -> list[_Job] | None:
    """The subset of `jobs` whose GPUs are the fewest at or above `need` (subset sum over
    whole GPUs, as bit sets; [] when need <= 0; all of them when the sums are too large for
    bit sets), None when even all of them fall short."""
    if need <= 0:
        return []
    total = sum(j.gpus for j in jobs)
    if total < need:
        return None
    if total * (len(jobs) + 1) > _MAX_BITS:  # too large to hold as bit sets: all of them
        return sorted(jobs, key=lambda m: m.key)
    reach = [1]
    for j in jobs:
        reach.append(reach[-1] | reach[-1] << j.gpus)
    above = reach[-1] >> need
    if not above:
        return None
    s = need + (above & -above).bit_length() - 1
    took = []
    for k in range(len(jobs), 0, -1):
        if not reach[k - 1] >> s & 1:
            took.append(jobs[k - 1])
            s -= jobs[k - 1].gpus
    return sorted(took, key=lambda m: m.key)


def _exclusions(
    slots: Sequence[_Slot], alone: Sequence[_Job], where: dict[str, str]
) -> dict[str, tuple[str, ...]]:
    """A slot's queued job excludes the jobs of its other alternatives; a job that runs
    alone (in its first domain with the fewest known jobs) excludes every job there."""
    out: dict[str, set[str]] = {}
    for s in slots:
        for i, alt in enumerate(s.alternatives[1:], 1):
            others = {m.key for n, a in enumerate(s.alternatives) if n != i for m in a}
            for j in alt:
                out.setdefault(j.key, set()).update(others)
    for j in alone:
        count = {d: sum(1 for v in where.values() if v == d) for d in j.domains}
        where[j.key] = min(j.domains, key=lambda d: (count[d], j.domains.index(d)))
    for j in alone:
        out[j.key] = {k for k, d in where.items() if d == where[j.key] and k != j.key}
    return {k: tuple(sorted(v)) for k, v in sorted(out.items())}
