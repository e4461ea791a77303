"""Verdicts for one job: HARD_BLOCK, CROSS_ZONE, UNSCHEDULABLE, IDENTITY_MISMATCH or OK."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from topogen.analysis.context import AnalysisContext
from topogen.analysis.domains import DomainCheck, check_domains
from topogen.analysis.members import Member, members_of
from topogen.analysis.paths import BlockedPath, BlockedPaths
from topogen.model import Finding, FindingKind, PodAffinityTerm, TrainingGroup, quantity

__all__ = ["CROSS_ZONE_COST", "JobAnalysis", "analyze_job", "unmatched_affinity"]

CROSS_ZONE_COST = (
    "every collective pays cross-zone latency: ~0.5-2 ms RTT against ~0.1-0.3 ms inside a zone "
    "(30-60% throughput loss reported), and cross-zone traffic is billed "
    "(AWS ~$0.01/GB each direction, ~$0.02/GB crossing; GCP ~$0.01/GB)"
)


@dataclass(frozen=True)
class JobAnalysis:
    cluster: str
    job: TrainingGroup
    members: tuple[Member, ...]
    findings: tuple[Finding, ...]
    domains: tuple[DomainCheck, ...]
    blocked: Sequence[BlockedPath]  # listed lazily: a job may have thousands

    @property
    def worst(self) -> FindingKind:
        order = [
            FindingKind.HARD_BLOCK,
            FindingKind.UNSCHEDULABLE,
            FindingKind.IDENTITY_MISMATCH,
            FindingKind.CROSS_ZONE,
            FindingKind.KUEUE_MANAGED,
            FindingKind.OK,
        ]
        kinds = {f.kind for f in self.findings}
        return next(k for k in order if k in kinds or k is FindingKind.OK)


def analyze_job(cluster: str, job: TrainingGroup, ctx: AnalysisContext) -> JobAnalysis:
    members = members_of(job, ctx.cluster.nodes)
    findings: list[Finding] = []

    def add(
        kind: FindingKind, roles: set[str], zones: set[str], policies: set[str], message: str
    ) -> None:
        findings.append(
            Finding(
                cluster,
                job.config_group,
                job.job,
                job.namespace,
                kind,
                tuple(sorted(roles)),
                tuple(sorted(zones)),
                tuple(sorted(policies)),
                message,
            )
        )

    stuck: set[int] = set()
    for i, m in enumerate(members):
        if not m.placement.nodes:
            add(
                FindingKind.UNSCHEDULABLE,
                {m.role},
                set(),
                set(),
                f"{m.role} {m.name} has no eligible node: {m.placement.why_not()}",
            )
        term = unmatched_affinity(m, members, ctx)
        if term is not None:
            stuck.add(i)
            add(
                FindingKind.UNSCHEDULABLE,
                {m.role},
                set(),
                set(),
                f"{m.role} {m.name} stays Pending: no pod matches its required pod affinity "
                f"({term.selector} on {term.topology_key}) among the analysed workloads, "
                "and the pod itself does not either",
            )
        kind, value = m.identity(ctx.identity_label)
        if kind == "static" and value is not None:
            elsewhere = [z for z in m.placement.zones if z != value]
            if elsewhere:
                can = "can only land in" if value not in m.placement.zones else "may land in"
                add(
                    FindingKind.IDENTITY_MISMATCH,
                    {m.role},
                    {value, *elsewhere},
                    set(),
                    f"{m.role} {m.name} claims {ctx.identity_label}={value} but {can} "
                    f"{', '.join(elsewhere)}",
                )
    placeable = not stuck and all(m.placement.nodes for m in members)
    paths = ctx.job_paths(members) if placeable else None
    count = paths.blocked_count if paths is not None else 0
    blocked: Sequence[BlockedPath] = ()
    b_roles: set[str] = set()
    b_zones: set[str] = set()
    b_policies: set[str] = set()
    if paths is not None and count:
        blocked = BlockedPaths(count, paths.blocked, tuple(members))
        b_roles = paths.blocked_roles()
        b_zones = paths.blocked_zones()
        b_policies = {str(p) for p in paths.blocked_policies()}
    if job.kueue_managed:
        # Kueue TAS, not the free scheduler, picks the domain: report, never plan
        note = (
            (
                f"; across zones its traffic is denied ({', '.join(sorted(b_policies))}), so the "
                "Kueue topology request must keep it in one zone"
            )
            if count
            else ""
        )
        add(
            FindingKind.KUEUE_MANAGED,
            {m.role for m in members},
            b_zones,
            b_policies,
            "placed by Kueue Topology Aware Scheduling (kueue.x-k8s.io/tas): topogen adds no "
            f"affinity; make the Kueue topology match the network domains{note}",
        )
        return JobAnalysis(cluster, job, tuple(members), tuple(findings), (), blocked)
    if paths is not None and count:
        first = list(paths.blocked(limit=2))
        shown = "; ".join(b.describe() for b in first)
        more = f" (+{count - 2} more paths)" if count > 2 else ""
        add(
            FindingKind.HARD_BLOCK,
            b_roles,
            b_zones,
            b_policies,
            f"a placement the scheduler may choose leaves the group's traffic denied: {shown}{more}",
        )
    # a split denied in either direction is a hard block, never an "allowed" split
    if paths is not None:
        split, s_roles, s_zones = paths.split_summary()
        if split is not None:
            add(
                FindingKind.CROSS_ZONE,
                s_roles,
                s_zones,
                set(),
                f"the scheduler may split the group ({split[0]} in {split[2]}, {split[1]} in "
                f"{split[3]}); traffic is allowed but {CROSS_ZONE_COST}",
            )
    domains = check_domains(members, ctx.cluster.candidates(ctx.colocate, ctx.domain_label), ctx)
    if members and not any(d.ok for d in domains):
        detail = "; ".join(_domain_problem(d) for d in domains[:4]) or "the cluster has no zones"
        add(
            FindingKind.UNSCHEDULABLE,
            {m.role for m in members},
            {z for d in domains for z in d.zones},
            {p for d in domains for p in d.policies},
            f"no single allowed domain can hold the whole group (needs {_n(domains)} GPUs): "
            f"{detail}",
        )
    if not any(f.kind.is_problem for f in findings):
        zones = {z for m in members for z in m.placement.zones}
        add(
            FindingKind.OK,
            {m.role for m in members},
            zones,
            set(),
            f"every placement the scheduler may choose keeps the group in one zone with its "
            f"traffic allowed ({', '.join(sorted(zones)) or 'no zone'})",
        )
    return JobAnalysis(cluster, job, tuple(members), tuple(findings), tuple(domains), blocked)


def unmatched_affinity(
    m: Member, members: Sequence[Member], ctx: AnalysisContext
) -> PodAffinityTerm | None:
    """A required pod affinity term of m that no pod can meet: none of the analysed pods
    (its job's members, the other workloads' pods, save those created only once others
    run) matches it, and m itself matches not all its terms (the scheduler's exception
    for the first pod of a self-affine series)."""
    terms = [t for t in m.template.pod_affinity if not t.anti]
    if not terms:
        return None
    own = m.template.labels
    if all(t.selector.matches(own) for t in terms):
        return None
    for t in terms:
        namespaces = t.namespaces or (m.workload.namespace,)
        if any(
            t.selector.matches(labels)
            for ns in namespaces
            for labels, late in ctx.cluster.pods.get(ns, ())
            if not late and labels is not m.workload.template.labels
        ):
            continue
        if any(
            n is not m
            and not n.workload.late
            and n.workload.namespace in namespaces
            and t.selector.matches(n.template.labels)
            for n in members
        ):
            continue
        return t
    return None


def _n(domains: list[DomainCheck]) -> str:
    if not domains:
        return "0"
    return quantity(domains[0].gpus_needed)


def _domain_problem(d: DomainCheck) -> str:
    free = quantity(d.gpus_free)
    first = d.problems[0] if d.problems else "does not fit"
    return f"{d.name} ({free} GPUs): {first}"
