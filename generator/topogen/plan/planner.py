"""Per config group: the domain to confine its jobs to, and what the mutation must add.

Refuses (with the reason) when no domain can hold every job with its traffic allowed:
a constraint the capacity cannot meet turns a network failure into an eternal Pending.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from fractions import Fraction

from topogen.analysis.context import AnalysisContext
from topogen.analysis.denied_pairs import denied_zone_pairs
from topogen.analysis.domains import DomainCheck
from topogen.analysis.findings import JobAnalysis
from topogen.cilium.labelfilter import label_filter
from topogen.config import GroupConfig
from topogen.model import Toleration
from topogen.model import quantity as _count
from topogen.operators.registry import profile_for
from topogen.plan.anchors import detached_selectors, worker_anchors
from topogen.plan.assignment import Assignment, JobNeed, assign
from topogen.plan.fallback import Fallback, choose
from topogen.plan.group_plan import GroupPlan, JobDomain
from topogen.plan.identity_source import identity_source
from topogen.plan.kueue import plan_kueue
from topogen.plan.scoring import best_for_pin, spread_order

__all__ = ["plan_cluster", "plan_group"]


def plan_group(
    cluster: str, group: GroupConfig, jobs: Sequence[JobAnalysis], ctx: AnalysisContext
) -> GroupPlan:
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
    return _plan_pin(base, planned, why_pinned)


def _plan_pin(base: GroupPlan, planned: Sequence[JobAnalysis], why: str) -> GroupPlan:
    """One domain that holds each job (one at a time) with its traffic allowed."""
    group = base.group
    index = [_domain_index(j) for j in planned]
    names = [d.name for d in planned[0].domains]
    good = [n for n in names if all(ix[n].ok for ix in index)]
    if not good:
        reasons = []
        for j in planned:
            bad = [d for d in j.domains if not d.ok]
            detail = "; ".join(
                f"{d.name}: {d.problems[0] if d.problems else 'no capacity'}" for d in bad[:4]
            )
            need = _count(j.domains[0].gpus_needed) if j.domains else "0"
            reasons.append(
                f"job {j.job.namespace}/{j.job.job} needs {need} GPUs in one "
                f"domain: {detail or 'the cluster has no zones'}"
            )
        refused = f"group {group.name}: no domain can hold it: " + " | ".join(reasons)
        return replace(base, refused=refused)
    chosen = best_for_pin(good, group.prefer_zones, index)
    check = index[0][chosen]
    notes = [base.note, why]
    total = sum((ix[chosen].gpus_needed for ix in index), Fraction(0))
    if len(planned) > 1 and total > check.gpus_free:
        notes.append(
            f"group {group.name}: its {len(planned)} jobs fit {chosen} one at a time but "
            f"together need {_count(total)} GPUs of its {_count(check.gpus_free)}: "
            "some will wait Pending until others finish"
        )
    return replace(
        base,
        domain=chosen,
        zones=check.zones,
        tolerations=tuple(sorted({t for ix in index for t in ix[chosen].tolerations})),
        identity=check.identity,
        note="; ".join(n for n in notes if n),
    )


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
        reasons = [
            f"job {j.job.namespace}/{j.job.job} needs {_count(j.domains[0].gpus_needed)} GPUs "
            f"in one domain: "
            + "; ".join(
                f"{d.name}: {d.problems[0] if d.problems else 'no capacity'}" for d in j.domains[:4]
            )
            for j in homeless
        ]
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
        denied_zone_pairs=tuple(
            p
            for p in base.denied_zone_pairs
            if len(domains) == 1 or any(p[0] in zs and p[1] in zs for _, zs in domains)
        ),
    )
    capacity = {_unit(plan.topology_key, n): check[n].gpus_free for n in used}
    a = assign(_needs(plan, planned), capacity)
    return _with_jobs(plan, planned, a, _job_names([(plan, planned)]))


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
) -> GroupPlan:
    zones = dict(plan.domains)
    waits: dict[str, list[str]] = {}  # a packed job -> the queued jobs that wait for it
    for q, ks in a.excludes.items():
        for k in ks:
            waits.setdefault(k, []).append(q)
    out = []
    for j in planned:
        key = f"{plan.group.name}\0{j.job.key}"
        name = a.domain[key].partition("\0")[2]
        need = _count(j.domains[0].gpus_needed)
        free = _count(a.free.get(_unit(plan.topology_key, name), Fraction(0)))
        excludes = tuple(sorted(names[k] for k in a.excludes.get(key, ())))
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
        out.append(
            JobDomain(
                f"{j.job.namespace}/{j.job.job}", j.job.job, name, zones[name], reason, excludes
            )
        )
    note = ""
    queued = [j for j in planned if f"{plan.group.name}\0{j.job.key}" not in a.runs_at_once]
    if queued:
        total = sum((j.domains[0].gpus_needed for j in planned), Fraction(0))
        have = sum((_domain_index(planned[0])[n].gpus_free for n, _ in plan.domains
                    if n in _domain_index(planned[0])), Fraction(0))  # fmt: skip
        note = (
            f"group {plan.group.name}: its {len(planned)} jobs fit "
            f"{', '.join(n for n, _ in plan.domains)} one at a time but together need "
            f"{_count(total)} GPUs of its {_count(have)}: {len(queued)} will wait Pending "
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
    )


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
    plans: Sequence[GroupPlan], jobs: Sequence[Sequence[JobAnalysis]]
) -> list[GroupPlan]:
    """The spread groups' known jobs packed together onto the cluster's GPUs, less those
    of the pinned groups' jobs, so no two groups count the same GPUs free. Domains are
    told apart by the key they co-locate on (zone or domain label): a cluster mixing both
    counts each key's capacity on its own."""
    capacity: dict[str, Fraction] = {}
    for p, js in zip(plans, jobs, strict=True):
        for j in js:
            for d in j.domains:
                capacity.setdefault(_unit(p.topology_key, d.name), d.gpus_free)
    for p, js in zip(plans, jobs, strict=True):
        if p.enforceable and not p.spread and p.domain is not None:
            k = _unit(p.topology_key, p.domain)
            need = sum((_domain_index(j)[p.domain].gpus_needed for j in js
                        if j.job.key in p.jobs), Fraction(0))  # fmt: skip
            capacity[k] = max(Fraction(0), capacity.get(k, Fraction(0)) - need)
    spread = [
        (g, p, [j for j in js if j.job.key in p.jobs])
        for g, (p, js) in enumerate(zip(plans, jobs, strict=True))
        if p.spread and p.enforceable
    ]
    if not spread:
        return list(plans)
    a = assign([n for _, p, js in spread for n in _needs(p, js)], capacity)
    names = _job_names([(p, js) for _, p, js in spread])
    out = list(plans)
    for g, p, js in spread:
        out[g] = _with_jobs(p, js, a, names)
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
