"""Per config group: the domain to confine its jobs to, and what the mutation must add.

Refuses (with the reason) when no domain can hold every job with its traffic allowed:
a constraint the capacity cannot meet turns a network failure into an eternal Pending.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction

from topogen.analysis.context import AnalysisContext
from topogen.analysis.domains import DomainCheck
from topogen.analysis.findings import JobAnalysis
from topogen.analysis.members import pin
from topogen.config import GroupConfig
from topogen.model import PolicyRef, Toleration
from topogen.sources.nodes import NO_ZONE_PREFIX
from topogen.sources.profiles import Profile, profile_for

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
    names = [d.name for d in planned[0].domains]
    good = [n for n in names if all(_by_name(j, n).ok for j in planned)]
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
        checks = [_by_name(j, name) for j in planned]
        return (
            prefer.get(name, len(prefer)),
            -sum(c.already_eligible for c in checks),
            -float(checks[0].gpus_free),
            name,
        )

    chosen = min(good, key=score)
    check = _by_name(planned[0], chosen)
    tolerations = tuple(sorted({t for j in planned for t in _by_name(j, chosen).tolerations}))
    plan = make(chosen, check.zones, tolerations, check.identity, None)
    total = sum((_by_name(j, chosen).gpus_needed for j in planned), Fraction(0))
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


def _denied_zone_pairs(
    jobs: Sequence[JobAnalysis], ctx: AnalysisContext
) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """Zone pairs across which some job's internal traffic would be denied."""
    zones = [z for z in ctx.topology.zones if not z.startswith(NO_ZONE_PREFIX)]
    out: dict[tuple[str, str], set[PolicyRef]] = {}
    anywhere = (Toleration("", "Exists"),)  # traffic, not taints, is the question here
    for job in jobs:
        members = list(job.members)
        pinned = {
            (i, z): pin(m, ctx.topology, [z], anywhere)
            for i, m in enumerate(members)
            for z in zones
        }
        for za in zones:
            for zb in zones:
                if za >= zb:
                    continue
                for i, a in enumerate(members):
                    for j in range(len(members)):
                        if i == j and a.replicas < 2:
                            continue
                        for src_zone, dst_zone in ((za, zb), (zb, za)):
                            pa, pb = pinned[(i, src_zone)], pinned[(j, dst_zone)]
                            if not pa.placement.nodes or not pb.placement.nodes:
                                continue
                            blocked = ctx.check_path(pa, src_zone, pb, dst_zone)
                            if blocked is not None:
                                out.setdefault((za, zb), set()).update(blocked.policies)
    return tuple(
        (za, zb, tuple(sorted(str(p) for p in ps))) for (za, zb), ps in sorted(out.items())
    )
