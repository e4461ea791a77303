"""Per config group: the domain to confine its jobs to, and what the mutation must add.

Refuses (with the reason) when no domain can hold every job with its traffic allowed:
a constraint the capacity cannot meet turns a network failure into an eternal Pending.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from fractions import Fraction

from topogen.analysis.context import AnalysisContext
from topogen.analysis.denied_pairs import denied_zone_pairs
from topogen.analysis.domains import DomainCheck
from topogen.analysis.findings import JobAnalysis
from topogen.cilium.labelfilter import label_filter
from topogen.config import GroupConfig
from topogen.model import LastPlacements, Toleration
from topogen.model import quantity as _count
from topogen.nodepools import gpus_text
from topogen.operators.registry import profile_for
from topogen.plan.anchors import detached_selectors, worker_anchors
from topogen.plan.assignment import Assignment, JobNeed, PoolNeed, assign
from topogen.plan.fallback import Fallback, choose
from topogen.plan.group_plan import GroupPlan, JobDomain
from topogen.plan.identity_source import identity_source
from topogen.plan.kueue import plan_kueue
from topogen.plan.scoring import best_for_pin, spread_order

__all__ = ["plan_cluster", "plan_group", "why_not"]


def plan_group(
    cluster: str,
    group: GroupConfig,
    jobs: Sequence[JobAnalysis],
    ctx: AnalysisContext,
    last_domain: str | None = None,
    running_domain: str | None = None,
) -> GroupPlan:
    """The group's plan; `last_domain`: the domain the last render pinned it to,
    `running_domain`: where its running jobs run (kept first, while it holds every job)."""
    profile = profile_for(group)
    key = (
        ctx.topology.zone_label
        if group.colocate == "zone" or not ctx.domain_label
        else ctx.domain_label
    )
    planned = [j for j in jobs if j.kueue is None and j.members]
    kueue = tuple(sorted(j.job.key for j in jobs if j.kueue is not None))
    kueue_plan, kueue_note = plan_kueue(group, jobs, ctx)
    denied = denied_zone_pairs(planned, ctx)

    def make(
        domain: str | None,
        zones: tuple[str, ...],
        tolerations: tuple[Toleration, ...],
        identity: tuple[str, str] | None,
        refused: str | None,
    ) -> GroupPlan:
        return GroupPlan(
            cluster=cluster,
            group=group,
            profile=profile,
            zone_label=ctx.topology.zone_label,
            domain=domain,
            zones=zones,
            tolerations=tolerations,
            identity=identity,
            topology_key=key,
            jobs=tuple(sorted(j.job.key for j in planned)),
            kueue_jobs=kueue,
            refused=refused,
            denied_zone_pairs=denied,
            kueue=kueue_plan,
            note=kueue_note,
        )

    if not planned:
        return make(None, (), (), None, None)
    anchors, anchor_note = worker_anchors(profile, planned)
    detached = detached_selectors(profile, planned)
    base = make(None, (), (), None, None)
    base = replace(
        base,
        anchors=anchors,
        detached=detached,
        note="; ".join(n for n in (base.note, anchor_note) if n),
        job_gpus=tuple(
            sorted(
                (f"{j.job.namespace}/{j.job.job}", _count(j.domains[0].gpus_needed))
                for j in planned
                if j.domains
            )
        ),
    )
    why_pinned = ""
    if group.placement == "spread":
        spread = _plan_spread(base, planned, ctx)
        if spread.refused or len(spread.domains) <= 1 or not (detached or profile.scope):
            return spread
        # the per-job pins name a job by its job label: a pod no label ties to its job
        # (KubeRay's submitter) or a job the label names only with others (an LWS group)
        # cannot follow its job into another domain, so the group goes to one
        what = (
            f"pods without it ({profile.detached_label} ties them to their job)"
            if detached
            else f"jobs it names only with {', '.join(profile.scope)}"
        )
        why_pinned = (
            f"group {group.name}: placement spread pins each job by its {profile.job_label} "
            f"label, and the group has {what}: all its jobs go to one domain"
        )
    return _plan_pin(base, planned, why_pinned, last_domain, running_domain)


def _plan_pin(
    base: GroupPlan,
    planned: Sequence[JobAnalysis],
    why: str,
    last: str | None = None,
    running: str | None = None,
) -> GroupPlan:
    """One domain that holds each job (one at a time) with its traffic allowed."""
    group = base.group
    index = [_domain_index(j) for j in planned]
    names = [d.name for d in planned[0].domains]
    good = [n for n in names if all(ix[n].ok for ix in index)]
    if not good:
        reasons = [
            _homeless(j, [d for d in j.domains if not d.ok], base.zone_label) for j in planned
        ]
        refused = f"group {group.name}: no domain can hold it: " + " | ".join(reasons)
        return replace(base, refused=refused)
    keep = running or last
    chosen = keep if keep in good else best_for_pin(good, group.prefer_zones, index)
    previous, repin = keep, ""
    if keep is not None and chosen != keep:
        repin = next((w for w in (why_not(j, keep) for j in planned) if w), "")
        if running is not None:
            repin = f"running in {running}, but {repin}{_SPLIT}"
    elif running is not None and last not in (None, running):
        previous = last
        repin = f"running in {running}: {_STAYS.format(last)}"
    check = index[0][chosen]
    notes = [base.note, why]
    total = sum((ix[chosen].gpus_needed for ix in index), Fraction(0))
    scale_up = {t for ix in index for t in ix[chosen].scale_up}
    if total > check.gpus_now:  # together they need more than its existing nodes have
        scale_up.update(r.describe() for r in check.rooms)
    if len(planned) > 1 and total > check.gpus_free:
        notes.append(
            f"group {group.name}: its {len(planned)} jobs fit {chosen} one at a time but "
            f"together need {_count(total)} GPUs of its {gpus_text(check.gpus_free)}: "
            "some will wait Pending until others finish"
        )
    return replace(
        base,
        domain=chosen,
        zones=check.zones,
        tolerations=tuple(sorted({t for ix in index for t in ix[chosen].tolerations})),
        identity=check.identity,
        note="; ".join(n for n in notes if n),
        previous_domain=previous,
        repin=repin,
        scale_up=tuple(sorted(scale_up)),
    )


# where the pods of a running job are is where its replaced pods must go
_STAYS = "its pods run there (pinning it to {} would split it from the pods that stay)"
_SPLIT = "; pods created from now on go to the new domain while the others stay (a split)"


def why_not(job: JobAnalysis, name: str) -> str:
    """Why a job can no longer go to domain `name` ("" when it can)."""
    check = _domain_index(job).get(name)
    if check is None:
        return f"{name} is no longer a domain of the cluster"
    if not check.traffic_ok:
        return f"{name} no longer allows its traffic: " + (check.problems or ("denied",))[0]
    if not check.capacity_ok:
        return f"{name} can no longer hold it: " + (check.problems or ("too few GPUs",))[0]
    return ""


def _plan_spread(
    base: GroupPlan, planned: Sequence[JobAnalysis], ctx: AnalysisContext
) -> GroupPlan:
    """Every domain where some job's traffic is allowed and that can hold it; each known
    job assigned one of its own (a packing of the group's jobs, redone for the whole
    cluster by plan_cluster)."""
    group = base.group
    index = [_domain_index(j) for j in planned]
    names = [d.name for d in planned[0].domains]
    ok = [[n for n in names if ix[n].ok] for ix in index]
    homeless = [j for j, o in zip(planned, ok, strict=True) if not o]
    if homeless:
        reasons = [_homeless(j, j.domains, base.zone_label) for j in homeless]
        refused = f"group {group.name}: no domain can hold it: " + " | ".join(reasons)
        return replace(base, refused=refused, placement="spread")
    check = {n: ix[n] for ix in reversed(index) for n in names if n in ix}
    free = {n: c.gpus_free for n, c in check.items()}
    used = spread_order(sorted({n for o in ok for n in o}), group.prefer_zones, free)
    domains = tuple((n, check[n].zones) for n in used)
    in_set = {z for _, zs in domains for z in zs}
    zones = tuple(z for z in ctx.topology.zones if z in in_set)
    members = [m for j in planned for m in j.members]
    source = identity_source(
        group.identity_label,
        set_in_template=any(group.identity_label in m.template.labels for m in members)
        if group.identity_label
        else False,
        host_network=bool(members) and all(m.template.host_network for m in members),
        label_filter=label_filter(ctx.index.cilium),
    )
    default = used[0]
    plan = replace(
        base,
        domain=default,
        zones=zones,
        tolerations=tuple(sorted({t for n in used for t in check[n].tolerations})),
        identity=check[default].identity if len(used) == 1 else None,
        placement="spread",
        identity_source=source,
        domains=domains,
        # several domains: spans between them are the design (workers follow their
        # coordinator), spans inside one are not; one domain: as pinned
        denied_zone_pairs=_within_a_domain(base.denied_zone_pairs, domains),
    )
    capacity, pools = _capacity((_unit(plan.topology_key, n), check[n]) for n in used)
    a = assign(_needs(plan, planned), capacity, pools=pools)
    return _with_jobs(plan, planned, a, _job_names([(plan, planned)]))


def _homeless(j: JobAnalysis, bad: Sequence[DomainCheck], zone_label: str) -> str:
    """Why no domain holds job `j`: its first few domains' problems, or that there are none
    (no node carries the zone label: a node without it is a zone of its own, never a
    domain to pin to)."""
    job = f"job {j.job.namespace}/{j.job.job}"
    if not j.domains:
        return f"{job} has no domain: no node carries the zone label {zone_label}"
    detail = "; ".join(
        f"{d.name}: {d.problems[0] if d.problems else 'no capacity'}" for d in bad[:4]
    )
    return f"{job} needs {_count(j.domains[0].gpus_needed)} GPUs in one domain: {detail}"


DeniedPair = tuple[str, str, tuple[str, ...]]  # (zone, zone, policies)


def _within_a_domain(
    pairs: tuple[DeniedPair, ...], domains: tuple[tuple[str, tuple[str, ...]], ...]
) -> tuple[DeniedPair, ...]:
    """The zone pairs both of whose zones lie in one of the domains (all, with one)."""
    if len(domains) == 1:
        return pairs
    of: dict[str, set[int]] = {}  # zone -> the domains holding it
    for i, (_, zs) in enumerate(domains):
        for z in zs:
            of.setdefault(z, set()).add(i)
    none: set[int] = set()
    return tuple(p for p in pairs if not of.get(p[0], none).isdisjoint(of.get(p[1], none)))


def _capacity(
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
    fixed, pools = _capacity((c.name, c) for c in checks)
    grown = sum((min(p.budget, sum(p.room.values(), Fraction(0))) for p in pools), Fraction(0))
    return sum(fixed.values(), Fraction(0)) + grown


def _scale_up_texts(j: JobAnalysis, name: str, pools: Sequence[str]) -> tuple[str, ...]:
    """Where the job's domain gets the nodes it needs: its own (it does not fit the existing
    nodes alone) and the pools the packing drew on there."""
    check = _domain_index(j).get(name)
    if check is None:
        return ()
    texts = {*check.scale_up, *(r.describe() for r in check.rooms if r.pool in pools)}
    return tuple(sorted(texts))


def _needs(plan: GroupPlan, planned: Sequence[JobAnalysis]) -> list[JobNeed]:
    order = [n for n, _ in plan.domains]
    out = []
    for j in planned:
        ix = _domain_index(j)
        mine = tuple(_unit(plan.topology_key, n) for n in order if n in ix and ix[n].ok)
        key = f"{plan.group.name}\0{j.job.key}"
        out.append(JobNeed(key, j.domains[0].gpus_needed, mine, plan.profile.job_label))
    return out


JobName = tuple[str, str, str]  # namespace, job label, the label's value


def _job_names(groups: Sequence[tuple[GroupPlan, Sequence[JobAnalysis]]]) -> dict[str, JobName]:
    """The packing's job keys -> how an anti-affinity term selects each job's pods."""
    return {
        f"{p.group.name}\0{j.job.key}": (j.job.namespace, p.profile.job_label, j.job.job)
        for p, js in groups
        for j in js
    }


def _with_jobs(
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
        free = gpus_text(a.free.get(_unit(plan.topology_key, name), Fraction(0)))
        excludes = tuple(sorted(names[k] for k in a.excludes.get(key, ())))
        grown = _scale_up_texts(j, name, a.scale_up.get(_unit(plan.topology_key, name), ()))
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
        first = _domain_index(planned[0])
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
        return "moved", previous, f"running in {running}: {_STAYS.format(previous)}"
    had = running or previous
    if had is None:
        return "new", None, ""
    if had == now:
        return "kept", had, ""
    why = why_not(j, had) or (
        f"{had} no longer has room for its {need} GPUs beside the jobs kept there"
    )
    if running is not None:
        why = f"running in {running}, but {why}{_SPLIT}"
    return "moved", had, why


def _fallback(plan: GroupPlan, planned: Sequence[JobAnalysis], a: Assignment) -> Fallback:
    """Where a job that appears after the render goes (topogen.plan.fallback)."""
    names = [n for n, _ in plan.domains]
    index = [_domain_index(j) for j in planned]
    return choose(
        names,
        [n for n in names if all(n in ix and ix[n].ok for ix in index)],
        {n: a.left.get(_unit(plan.topology_key, n), Fraction(0)) for n in names},
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
    checks = [
        (_unit(p.topology_key, d.name), d)
        for p, js in zip(plans, jobs, strict=True)
        for j in js
        for d in j.domains
    ]
    total: dict[str, Fraction] = {}
    for unit, d in checks:
        total.setdefault(unit, d.gpus_free)
    capacity, pools = _capacity(checks)
    for p, js in zip(plans, jobs, strict=True):
        if p.enforceable and not p.spread and p.domain is not None:
            k = _unit(p.topology_key, p.domain)
            need = sum((_domain_index(j)[p.domain].gpus_needed for j in js
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
    needs = [n for _, p, js in spread for n in _needs(p, js)]
    keep, queued = _kept(spread, needs, last)
    a = assign(needs, capacity, keep, queued, pools)
    names = _job_names([(p, js) for _, p, js in spread])
    out = list(plans)
    for g, p, js in spread:
        out[g] = _with_jobs(p, js, a, names, last)
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
            unit = _unit(p.topology_key, previous) if previous is not None else None
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
    prefix = _unit(plan.topology_key, "")
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


def _unit(key: str, domain: str) -> str:
    """A domain as the packing names it: the co-location key and the domain's name."""
    return f"{key}\0{domain}"


def _by_name(job: JobAnalysis, name: str) -> DomainCheck:
    return next(d for d in job.domains if d.name == name)


def _domain_index(job: JobAnalysis) -> dict[str, DomainCheck]:
    """name -> the job's check of that domain (the first, as _by_name finds it)."""
    out: dict[str, DomainCheck] = {}
    for d in job.domains:
        out.setdefault(d.name, d)
    return out
