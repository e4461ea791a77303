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
from topogen.nodepools import gpus_text
from topogen.operators.registry import profile_for
from topogen.plan.anchors import detached_selectors, worker_anchors
from topogen.plan.domain_checks import SPLIT, STAYS, domain_index, why_not
from topogen.plan.group_plan import GroupPlan
from topogen.plan.identity_source import identity_source
from topogen.plan.kueue import plan_kueue
from topogen.plan.scoring import best_for_pin, spread_order

__all__ = ["plan_group"]


def plan_group(
    cluster: str,
    group: GroupConfig,
    jobs: Sequence[JobAnalysis],
    ctx: AnalysisContext,
    last_domain: str | None = None,
    running_domain: str | None = None,
    denied_pairs: bool = True,
) -> GroupPlan:
    """The group's plan; `last_domain`: the domain the last render pinned it to,
    `running_domain`: where its running jobs run (kept first, while it holds every job);
    `denied_pairs`: whether to find the zone pairs the validation policies carry (only a
    render reads them; else the plan's denied_zone_pairs is None)."""
    profile = profile_for(group)
    key = (
        ctx.topology.zone_label
        if group.colocate == "zone" or not ctx.domain_label
        else ctx.domain_label
    )
    planned = [j for j in jobs if j.kueue is None and j.members]
    kueue = tuple(sorted(j.job.key for j in jobs if j.kueue is not None))
    kueue_plan, kueue_note = plan_kueue(group, jobs, ctx)
    denied = denied_zone_pairs(planned, ctx) if denied_pairs else None

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
    index = [domain_index(j) for j in planned]
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
            repin = f"running in {running}, but {repin}{SPLIT}"
    elif running is not None and last not in (None, running):
        previous = last
        repin = f"running in {running}: {STAYS.format(last)}"
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


def _plan_spread(
    base: GroupPlan, planned: Sequence[JobAnalysis], ctx: AnalysisContext
) -> GroupPlan:
    """Every domain where some job's traffic is allowed and that can hold it. Each known
    job is assigned one of its own by plan_cluster, which packs every spread group's jobs
    together (a packing of this group's jobs alone would be thrown away)."""
    group = base.group
    index = [domain_index(j) for j in planned]
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
    return plan


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
    pairs: tuple[DeniedPair, ...] | None, domains: tuple[tuple[str, tuple[str, ...]], ...]
) -> tuple[DeniedPair, ...] | None:
    """The zone pairs both of whose zones lie in one of the domains (all, with one; None:
    not computed)."""
    if pairs is None or len(domains) == 1:
        return pairs
    of: dict[str, set[int]] = {}  # zone -> the domains holding it
    for i, (_, zs) in enumerate(domains):
        for z in zs:
            of.setdefault(z, set()).add(i)
    none: set[int] = set()
    return tuple(p for p in pairs if not of.get(p[0], none).isdisjoint(of.get(p[1], none)))
