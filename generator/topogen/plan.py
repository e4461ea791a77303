"""Per config group: the domain to confine its jobs to, and what the mutation must add.

Refuses (with the reason) when no domain can hold every job with its traffic allowed:
a constraint the capacity cannot meet turns a network failure into an eternal Pending.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction

from topogen.analysis.bits import bits as _bits
from topogen.analysis.bits import transpose
from topogen.analysis.context import AnalysisContext
from topogen.analysis.domains import DomainCheck
from topogen.analysis.families import Family
from topogen.analysis.findings import JobAnalysis
from topogen.analysis.placement import place_in_domains
from topogen.config import GroupConfig
from topogen.model import PolicyRef, Toleration
from topogen.operators.base import Profile
from topogen.operators.registry import profile_for

__all__ = ["GroupPlan", "plan_group"]


@dataclass(frozen=True)
class GroupPlan:
    cluster: str
    group: GroupConfig
    profile: Profile
    zone_label: str
    domain: str | None
    zones: tuple[str, ...]
    tolerations: tuple[Toleration, ...]
    identity: tuple[str, str] | None
    topology_key: str
    jobs: tuple[str, ...]
    kueue_jobs: tuple[str, ...]
    refused: str | None
    denied_zone_pairs: tuple[tuple[str, str, tuple[str, ...]], ...]  # (zone, zone, policies)
    note: str = ""  # e.g. the jobs fit one at a time but not all at once

    @property
    def enforceable(self) -> bool:
        return self.domain is not None

    def describe_fix(self) -> str:
        if self.refused:
            return f"none: {self.refused}"
        if self.domain is None:
            return "none: no jobs of this group to plan for"
        tols = ", ".join(_tol(t) for t in self.tolerations) or "none needed"
        ident = f", identity {self.identity[0]}={self.identity[1]}" if self.identity else ""
        return (
            f"confine to {self.domain} ({', '.join(self.zones)}): coordinator tolerates "
            f"{tols}, node affinity {self.zone_label} in [{', '.join(self.zones)}]{ident}; "
            f"workers require pod affinity to their coordinator on {self.topology_key}"
        )


def _tol(t: Toleration) -> str:
    value = f"={t.value}" if t.value else ""
    return f"{t.key}{value}:{t.effect}" if t.effect else f"{t.key}{value}"


def plan_group(
    cluster: str, group: GroupConfig, jobs: Sequence[JobAnalysis], ctx: AnalysisContext
) -> GroupPlan:
    profile = profile_for(group)
    key = (
        ctx.topology.zone_label
        if group.colocate == "zone" or not ctx.domain_label
        else ctx.domain_label
    )
    planned = [j for j in jobs if not j.job.kueue_managed and j.members]
    kueue = tuple(sorted(j.job.key for j in jobs if j.job.kueue_managed))
    denied = _denied_zone_pairs(planned, ctx)

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
        )

    if not planned:
        return make(None, (), (), None, None)
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
        return make(None, (), (), None, refused)
    prefer = {z: i for i, z in enumerate(group.prefer_zones)}

    def score(name: str) -> tuple[int, int, float, str]:
        checks = [ix[name] for ix in index]
        return (
            prefer.get(name, len(prefer)),
            -sum(c.already_eligible for c in checks),
            -float(checks[0].gpus_free),
            name,
        )

    chosen = min(good, key=score)
    check = index[0][chosen]
    tolerations = tuple(sorted({t for ix in index for t in ix[chosen].tolerations}))
    plan = make(chosen, check.zones, tolerations, check.identity, None)
    total = sum((ix[chosen].gpus_needed for ix in index), Fraction(0))
    if len(planned) > 1 and total > check.gpus_free:
        note = (
            f"group {group.name}: its {len(planned)} jobs fit {chosen} one at a time but "
            f"together need {_count(total)} GPUs of its {_count(check.gpus_free)}: "
            "some will wait Pending until others finish"
        )
        plan = replace(plan, note=note)
    return plan


def _count(q: Fraction) -> str:
    return str(q.numerator) if q.denominator == 1 else f"{float(q):g}"


def _by_name(job: JobAnalysis, name: str) -> DomainCheck:
    return next(d for d in job.domains if d.name == name)


def _domain_index(job: JobAnalysis) -> dict[str, DomainCheck]:
    """name -> the job's check of that domain (the first, as _by_name finds it)."""
    out: dict[str, DomainCheck] = {}
    for d in job.domains:
        out.setdefault(d.name, d)
    return out


def _denied_zone_pairs(
    jobs: Sequence[JobAnalysis], ctx: AnalysisContext
) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """Zone pairs across which some job's internal traffic would be denied.

    Each member is pinned to each zone, tolerating every taint (traffic, not taints, is
    the question here), and every pair of its job's members is checked both ways.
    Jobs whose members have the same identities and zones add the same pairs: each
    such combination is looked at once.
    """
    eng = ctx.engine
    single = ctx.cluster.one_zone
    combos: dict[tuple[int, int, int, int], tuple[Family, Family]] = {}
    for job in jobs:
        members = list(job.members)
        placed = [
            place_in_domains(m.template, ctx.cluster.nodes, single.zones, single.anywhere)
            for m in members
        ]
        fams = [
            eng.host_family_in_zones(pl, single.names, m.template.ports)
            if m.template.host_network
            else ctx.family(m)
            for m, pl in zip(members, placed, strict=True)
        ]
        nonempty = [
            sum(1 << eng.zone_index[z] for d, z in enumerate(single.names) if pl.nonempty(d))
            for pl in placed
        ]
        for i, a in enumerate(members):
            for j in range(len(members)):
                if i == j and a.replicas < 2:
                    continue
                key = (fams[i].fid, fams[j].fid, nonempty[i], nonempty[j])
                combos.setdefault(key, (fams[i], fams[j]))
    n = eng.n
    rows: dict[tuple[PolicyRef, ...], list[int]] = {}
    cols: dict[tuple[PolicyRef, ...], list[int]] = {}
    for (_, _, ni, nj), (fa, fb) in combos.items():
        m = eng.matrix(fa, fb)
        for policies, prow in m.row_policies:
            acc = rows.setdefault(policies, [0] * n)
            for za in _bits(ni):
                acc[za] |= prow[za] & nj
        for policies, pcol in m.col_policies:
            acc = cols.setdefault(policies, [0] * n)
            for zb in _bits(nj):
                acc[zb] |= pcol[zb] & ni
    for policies, acc in cols.items():
        by_row = rows.setdefault(policies, [0] * n)
        for za, row in enumerate(transpose(acc, n)):
            by_row[za] |= row
    # per zone pair (in order): which of the policy tuples deny it, either way round; each
    # distinct combination of tuples named once
    tuples = list(rows)
    both = [[r | c for r, c in zip(rows[p], transpose(rows[p], n), strict=True)] for p in tuples]
    named: dict[int, tuple[str, ...]] = {}
    zones = eng.zones
    out = []
    for za in range(n):
        above = ~((2 << za) - 1)  # zones after za
        any_row = 0
        for sym in both:
            any_row |= sym[za]
        for zb in _bits(any_row & above):
            mask = 0
            for k, sym in enumerate(both):
                if sym[za] >> zb & 1:
                    mask |= 1 << k
            text = named.get(mask)
            if text is None:
                refs = {p for k in _bits(mask) for p in tuples[k]}
                text = named[mask] = tuple(sorted(str(p) for p in refs))
            out.append((zones[za], zones[zb], text))
    return tuple(out)
