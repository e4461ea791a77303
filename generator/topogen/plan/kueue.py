"""A group's jobs that Kueue's Topology Aware Scheduling places: the zones their templates
are constrained to at creation (analysis/findings.py judged each job: KUEUE_CONSTRAINED
with the zones it may use)."""

from __future__ import annotations

from collections.abc import Sequence

from topogen.analysis.context import AnalysisContext
from topogen.analysis.findings import JobAnalysis
from topogen.config import GroupConfig
from topogen.model import Workload
from topogen.plan.group_plan import KueuePlan

__all__ = ["plan_kueue"]


def plan_kueue(
    group: GroupConfig, jobs: Sequence[JobAnalysis], ctx: AnalysisContext
) -> tuple[KueuePlan | None, str]:
    """The group's Kueue plan (None: no job to constrain), and a note when its
    constrained jobs share no zone (nothing is rendered for them then)."""
    constrained = [j for j in jobs if j.kueue_zones and j.kueue is not None and j.kueue.route]
    if not constrained:
        return None, ""
    shared = set(constrained[0].kueue_zones)
    for j in constrained[1:]:
        shared &= set(j.kueue_zones)
    if not shared:
        names = ", ".join(f"{j.job.namespace}/{j.job.job}" for j in constrained)
        return None, (
            f"group {group.name}: its jobs placed by Kueue's TAS ({names}) share no allowed "
            "zone: topogen constrains none of them"
        )
    queues = sorted(
        {
            (lq.namespace, lq.name)
            for j in constrained
            if j.kueue and j.kueue.route and (lq := j.kueue.route.local_queue)
        }
    )
    kinds = sorted({(w.api_version, w.kind) for j in constrained for w in _workloads(j)})
    level = next(j.kueue.judgement.level for j in constrained if j.kueue and j.kueue.judgement)
    zones = tuple(z for z in ctx.topology.zones if z in shared)
    return (
        KueuePlan(
            zones=zones,
            level=level,
            zone_label=ctx.topology.zone_label,
            queues=tuple(queues),
            kinds=tuple(kinds),
            group_name=f"topogen-{group.name}",
            jobs=tuple(sorted(j.job.key for j in constrained)),
        ),
        "",
    )


def _workloads(j: JobAnalysis) -> list[Workload]:
    return [w for r in j.job.roles for w in r.workloads]
