"""The cluster's spread groups packed together onto its GPUs (plan_cluster), and each
group's jobs told the domain the packing gave them (with_jobs)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from fractions import Fraction

from topogen.analysis.domains import DomainCheck
from topogen.analysis.findings import JobAnalysis
from topogen.model import LastPlacements
from topogen.model import quantity as _count
from topogen.nodepools import gpus_text
from topogen.plan.anchors import worker_anchors
from topogen.plan.assignment import Assignment, JobNeed, PoolNeed, assign
from topogen.plan.domain_checks import SPLIT, STAYS, domain_index, domain_unit, why_not
from topogen.plan.fallback import Fallback, choose
from topogen.plan.group_plan import GroupPlan, JobDomain

__all__ = ["JobName", "capacity_of", "job_names", "needs_of", "plan_cluster", "with_jobs"]


def capacity_of(
    checks: Iterable[tuple[str, DomainCheck]],
) -> tuple[dict[str, Fraction], list[PoolNeed]]:
    """The packing's capacity: each domain's existing GPUs, and per autoscaler pool what it
    can add in each domain, its budget shared by all of them (plan/capacity.py)."""
    fixed: dict[str, Fraction] = {}
    budgets: dict[str, Fraction] = {}
    rooms: dict[str, dict[str, Fraction]] = {}
    for unit, c in checks:
        if unit in fixed:
            continue
        fixed[unit] = c.gpus_now
        for r in c.rooms:
            budgets[r.pool] = r.budget
            rooms.setdefault(r.pool, {})[unit] = r.gpus
    return fixed, [PoolNeed(p, budgets[p], rooms[p]) for p in sorted(rooms)]


def _total_gpus(checks: Sequence[DomainCheck]) -> Fraction:
    """The GPUs of these domains together: their nodes', and each pool's once (its limits
    are one budget for all of them)."""
    fixed, pools = capacity_of((c.name, c) for c in checks)
    grown = sum((min(p.budget, sum(p.room.values(), Fraction(0))) for p in pools), Fraction(0))
    return sum(fixed.values(), Fraction(0)) + grown


def _scale_up_texts(j: JobAnalysis, name: str, pools: Sequence[str]) -> tuple[str, ...]:
    """Where the job's domain gets the nodes it needs: its own (it does not fit the existing
    nodes alone) and the pools the packing drew on there."""
    check = domain_index(j).get(name)
    if check is None:
        return ()
    texts = {*check.scale_up, *(r.describe() for r in check.rooms if r.pool in pools)}
    return tuple(sorted(texts))


def needs_of(plan: GroupPlan, planned: Sequence[JobAnalysis]) -> list[JobNeed]:
    order = [n for n, _ in plan.domains]
    out = []
    for j in planned:
        ix = domain_index(j)
        mine = tuple(domain_unit(plan.topology_key, n) for n in order if n in ix and ix[n].ok)
        key = f"{plan.group.name}\0{j.job.key}"
        out.append(JobNeed(key, j.domains[0].gpus_needed, mine, plan.profile.job_label))
    return out


JobName = tuple[str, str, str]  # namespace, job label, the label's value


def job_names(groups: Sequence[tuple[GroupPlan, Sequence[JobAnalysis]]]) -> dict[str, JobName]:
    """The packing's job keys -> how an anti-affinity term selects each job's pods."""
    return {
        f"{p.group.name}\0{j.job.key}": (j.job.namespace, p.profile.job_label, j.job.job)
        for p, js in groups
        for j in js
    }


def with_jobs(
    plan: GroupPlan,
    planned: Sequence[JobAnalysis],
    a: Assignment,
    names: dict[str, JobName],
    last: LastPlacements | None = None,
) -> GroupPlan:
    zones = dict(plan.domains)
    scale_up: set[str] = set()
    waits: dict[str, list[str]] = {}  # a packed job -> the queued jobs that wait for it
    for q, ks in a.excludes.items():
        for k in ks:
            waits.setdefault(k, []).append(q)
    out = []
    for j in planned:
        key = f"{plan.group.name}\0{j.job.key}"
        name = a.domain[key].partition("\0")[2]
        need = _count(j.domains[0].gpus_needed)
        free = gpus_text(a.free.get(domain_unit(plan.topology_key, name), Fraction(0)))
        excludes = tuple(sorted(names[k] for k in a.excludes.get(key, ())))
        grown = _scale_up_texts(j, name, a.scale_up.get(domain_unit(plan.topology_key, name), ()))
        scale_up.update(grown)
        if key not in a.runs_at_once:
            reason = (
                f"queued: the known jobs need more GPUs than their domains have at once; "
                f"it never shares {name} with {_jobs_text(excludes)} (required pod "
                "anti-affinity, both ways): whichever starts first runs whole, the others "
                "wait"
            )
        else:
            reason = (
                f"packed: its {need} GPUs run at once with the cluster's other packed jobs "
                f"({free} GPUs of {name} left over)"
            )
            if key in waits:
                later = tuple(sorted(names[q] for q in waits[key]))
                reason += f"; {_jobs_text(later)} queued behind it"
        if grown:
            reason += f"; fits after scale-up: {'; '.join(grown)}"
        job = f"{j.job.namespace}/{j.job.job}"
        previous = last.job_domain(plan.group.name, job) if last is not None else None
        running = last.running_domain(plan.group.name, job) if last is not None else None
        change, previous, repin = _change(j, previous, running, name, need)
        if repin:
            reason = f"re-pinned from {previous}: {repin}; {reason}"
        elif running == name:
            reason = f"running in {running}: kept there; {reason}"
        out.append(
            JobDomain(
                job,
                j.job.job,
                name,
                zones[name],
                reason,
                excludes,
                need,
                key not in a.runs_at_once,
                change,
                previous,
                repin,
                grown,
                running,
            )
        )
    note = ""
    queued = [j for j in planned if f"{plan.group.name}\0{j.job.key}" not in a.runs_at_once]
    if queued:
        total = sum((j.domains[0].gpus_needed for j in planned), Fraction(0))
        first = domain_index(planned[0])
        have = _total_gpus([first[n] for n, _ in plan.domains if n in first])
        note = (
            f"group {plan.group.name}: its {len(planned)} jobs fit "
            f"{', '.join(n for n, _ in plan.domains)} one at a time but together need "
            f"{_count(total)} GPUs of its {gpus_text(have)}: {len(queued)} will wait Pending "
            "until others finish"
        )
    note = "; ".join(n for n in (worker_anchors(plan.profile, planned)[1], note) if n)
    where, why = _fallback(plan, planned, a)
    return replace(
        plan,
        job_domains=tuple(sorted(out, key=lambda d: d.job)),
        note=note,
        fallback_domains=where,
        fallback=why,
        scale_up=tuple(sorted(scale_up)),
    )


def _change(
    j: JobAnalysis, previous: str | None, running: str | None, now: str, need: str
) -> tuple[str, str | None, str]:
    """(new | kept | moved, the domain it had, why it moved) against where its pods run,
    else the domain the last render gave it."""
    if running is not None and now == running and previous not in (None, running):
        return "moved", previous, f"running in {running}: {STAYS.format(previous)}"
    had = running or previous
    if had is None:
        return "new", None, ""
    if had == now:
        return "kept", had, ""
    why = why_not(j, had) or (
        f"{had} no longer has room for its {need} GPUs beside the jobs kept there"
    )
    if running is not None:
        why = f"running in {running}, but {why}{SPLIT}"
    return "moved", had, why


def _fallback(plan: GroupPlan, planned: Sequence[JobAnalysis], a: Assignment) -> Fallback:
    """Where a job that appears after the render goes (topogen.plan.fallback)."""
    names = [n for n, _ in plan.domains]
    index = [domain_index(j) for j in planned]
    return choose(
        names,
        [n for n in names if all(n in ix and ix[n].ok for ix in index)],
        {n: a.left.get(domain_unit(plan.topology_key, n), Fraction(0)) for n in names},
        min(j.domains[0].gpus_needed for j in planned),
        plan.group.prefer_zones,
        plan.identity_source == "static",
    )


def _jobs_text(jobs: Sequence[JobName], most: int = 3) -> str:
    names = [f"{ns}/{name}" for ns, _, name in jobs]
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(names[:most]) + more


def plan_cluster(
    plans: Sequence[GroupPlan],
    jobs: Sequence[Sequence[JobAnalysis]],
    last: LastPlacements | None = None,
) -> list[GroupPlan]:
    """The spread groups' known jobs packed together onto the cluster's GPUs, less those
    of the pinned groups' jobs, so no two groups count the same GPUs free. Domains are
    told apart by the key they co-locate on (zone or domain label): a cluster mixing both
    counts each key's capacity on its own. `last`: where the last render put each job;
    a job stays there while the domain allows and holds it (plan/assignment.py)."""
    # each domain's first check (what they say of the domain itself is the same in all)
    checks: list[tuple[str, DomainCheck]] = []
    seen: dict[str, set[str]] = {}  # co-location key -> the domains it has a check of
    for p, js in zip(plans, jobs, strict=True):
        known = seen.setdefault(p.topology_key, set())
        for j in js:
            for d in j.domains:
                if d.name not in known:
                    known.add(d.name)
                    checks.append((domain_unit(p.topology_key, d.name), d))
    total = {unit: d.gpus_free for unit, d in checks}
    capacity, pools = capacity_of(checks)
    for p, js in zip(plans, jobs, strict=True):
        if p.enforceable and not p.spread and p.domain is not None:
            k = domain_unit(p.topology_key, p.domain)
            need = sum((domain_index(j)[p.domain].gpus_needed for j in js
                        if j.job.key in p.jobs), Fraction(0))  # fmt: skip
            own = min(need, capacity.get(k, Fraction(0)))
            capacity[k] = capacity.get(k, Fraction(0)) - own
            pools = _drawn(pools, k, need - own)
    # what each domain has left for the known jobs: its nodes' GPUs and the pools' room
    left = {u: c + sum((min(p.room.get(u, Fraction(0)), p.budget) for p in pools), Fraction(0))
            for u, c in capacity.items()}  # fmt: skip
    spread = [
        (g, p, [j for j in js if j.job.key in p.jobs])
        for g, (p, js) in enumerate(zip(plans, jobs, strict=True))
        if p.spread and p.enforceable
    ]
    if not spread:
        return [_with_room(p, total, left) for p in plans]
    needs = [n for _, p, js in spread for n in needs_of(p, js)]
    keep, queued = _kept(spread, needs, last)
    a = assign(needs, capacity, keep, queued, pools)
    names = job_names([(p, js) for _, p, js in spread])
    out = list(plans)
    for g, p, js in spread:
        out[g] = with_jobs(p, js, a, names, last)
    return [_with_room(p, total, {**left, **a.free}) for p in out]


def _kept(
    spread: Sequence[tuple[int, GroupPlan, Sequence[JobAnalysis]]],
    needs: Sequence[JobNeed],
    last: LastPlacements | None,
) -> tuple[dict[str, str], frozenset[str]]:
    """The packing's job keys -> the domain the last render gave each (where it is still
    one of the job's own), and those it queued there."""
    if last is None:
        return {}, frozenset()
    own = {n.key: n.domains for n in needs}
    keep: dict[str, str] = {}
    queued = set()
    for _, p, js in spread:
        for j in js:
            job = f"{j.job.namespace}/{j.job.job}"
            previous = last.kept_domain(p.group.name, job)
            key = f"{p.group.name}\0{j.job.key}"
            unit = domain_unit(p.topology_key, previous) if previous is not None else None
            if unit is not None and unit in own.get(key, ()):
                keep[key] = unit
                if last.was_queued(p.group.name, job):
                    queued.add(key)
    return keep, frozenset(queued)


def _with_room(
    plan: GroupPlan, capacity: dict[str, Fraction], left: dict[str, Fraction]
) -> GroupPlan:
    """The plan with the GPUs of the cluster's domains (of its key): free for the known
    jobs, and left once the packed ones run."""
    if not plan.enforceable:
        return plan
    prefix = domain_unit(plan.topology_key, "")
    room = tuple(
        (unit[len(prefix) :], capacity[unit], left.get(unit, capacity[unit]))
        for unit in sorted(capacity)
        if unit.startswith(prefix)
    )
    return replace(plan, room=room)


def _drawn(pools: Sequence[PoolNeed], unit: str, need: Fraction) -> list[PoolNeed]:
    """The pools once a pinned group takes `need` GPUs of theirs in that domain."""
    out = []
    for p in pools:
        part = max(Fraction(0), min(need, p.room.get(unit, Fraction(0)), p.budget))
        need -= part
        room = {d: v - part if d == unit else v for d, v in p.room.items()}
        out.append(replace(p, budget=p.budget - part, room=room))
    return out
