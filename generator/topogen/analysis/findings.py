"""Verdicts for one job: HARD_BLOCK, CROSS_ZONE, UNSCHEDULABLE, IDENTITY_MISMATCH, OK, or for a
job Kueue's TAS places KUEUE_CONSTRAINED or KUEUE_MANAGED. Each check is a small function;
MEMBER_CHECKS and JOB_CHECKS list them in the order their findings are reported."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from topogen.analysis.context import AnalysisContext
from topogen.analysis.domains import DomainCheck, check_domains
from topogen.analysis.kueue import KueueJob, kueue_job
from topogen.analysis.members import Member, members_of
from topogen.analysis.paths import BlockedPath, BlockedPaths
from topogen.analysis.zonepaths import JobPaths
from topogen.model import Finding, FindingKind, PodAffinityTerm, TrainingGroup, quantity
from topogen.nodepools import gpus_text

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
    kueue: KueueJob | None = None  # placed by Kueue's TAS, not by kube-scheduler
    kueue_zones: tuple[str, ...] = ()  # KUEUE_CONSTRAINED: the zones it may go to

    @property
    def worst(self) -> FindingKind:
        order = [
            FindingKind.HARD_BLOCK,
            FindingKind.UNSCHEDULABLE,
            FindingKind.IDENTITY_MISMATCH,
            FindingKind.CROSS_ZONE,
            FindingKind.KUEUE_MANAGED,
            FindingKind.KUEUE_CONSTRAINED,
            FindingKind.OK,
        ]
        kinds = {f.kind for f in self.findings}
        return next(k for k in order if k in kinds or k is FindingKind.OK)


@dataclass
class _Job:
    """What the checks of one job share: the job, its members, and what is found."""

    cluster: str
    job: TrainingGroup
    ctx: AnalysisContext
    members: list[Member]
    findings: list[Finding] = field(default_factory=list)
    stuck: bool = False  # a member stays Pending on its own pod affinity
    paths: JobPaths | None = None  # when every member can be placed
    blocked: Sequence[BlockedPath] = ()
    domains: tuple[DomainCheck, ...] = ()
    kueue_zones: tuple[str, ...] = ()

    def add(
        self, kind: FindingKind, roles: set[str], zones: set[str], policies: set[str], message: str
    ) -> None:
        self.findings.append(
            Finding(
                self.cluster,
                self.job.config_group,
                self.job.job,
                self.job.namespace,
                kind,
                tuple(sorted(roles)),
                tuple(sorted(zones)),
                tuple(sorted(policies)),
                message,
            )
        )

    @property
    def roles(self) -> set[str]:
        return {m.role for m in self.members}


def _no_node(j: _Job, m: Member) -> None:
    if not m.placement.nodes:
        j.add(
            FindingKind.UNSCHEDULABLE,
            {m.role},
            set(),
            set(),
            f"{m.role} {m.name} has no eligible node: {m.placement.why_not()}",
        )


def _pending_affinity(j: _Job, m: Member) -> None:
    term = unmatched_affinity(m, j.members, j.ctx)
    if term is not None:
        j.stuck = True
        j.add(
            FindingKind.UNSCHEDULABLE,
            {m.role},
            set(),
            set(),
            f"{m.role} {m.name} stays Pending: no pod matches its required pod affinity "
            f"({term.selector} on {term.topology_key}) among the analysed workloads, "
            "and the pod itself does not either",
        )


def _identity_mismatch(j: _Job, m: Member) -> None:
    kind, value = m.identity(j.ctx.identity_label)
    if kind == "static" and value is not None:
        elsewhere = [z for z in m.placement.zones if z != value]
        if elsewhere:
            can = "can only land in" if value not in m.placement.zones else "may land in"
            j.add(
                FindingKind.IDENTITY_MISMATCH,
                {m.role},
                {value, *elsewhere},
                set(),
                f"{m.role} {m.name} claims {j.ctx.identity_label}={value} but {can} "
                f"{', '.join(elsewhere)}",
            )


def _hard_block(j: _Job) -> None:
    paths, count = j.paths, len(j.blocked)
    if paths is None or not count:
        return
    first = list(paths.blocked(limit=2))
    shown = "; ".join(b.describe() for b in first)
    more = f" (+{count - 2} more paths)" if count > 2 else ""
    j.add(
        FindingKind.HARD_BLOCK,
        paths.blocked_roles(),
        paths.blocked_zones(),
        {str(p) for p in paths.blocked_policies()},
        f"a placement the scheduler may choose leaves the group's traffic denied: {shown}{more}",
    )


def _cross_zone(j: _Job) -> None:
    """A split denied in either direction is a hard block, never an "allowed" split."""
    if j.paths is None:
        return
    split, roles, zones = j.paths.split_summary()
    if split is not None:
        j.add(
            FindingKind.CROSS_ZONE,
            roles,
            zones,
            set(),
            f"the scheduler may split the group ({split[0]} in {split[2]}, {split[1]} in "
            f"{split[3]}); traffic is allowed but {CROSS_ZONE_COST}",
        )


def _domains(j: _Job) -> None:
    """Each candidate domain checked for the job (what its plan is made from)."""
    ctx = j.ctx
    j.domains = tuple(
        check_domains(j.members, ctx.cluster.candidates(ctx.colocate, ctx.domain_label), ctx)
    )


def _no_domain(j: _Job) -> None:
    domains = list(j.domains)
    if j.members and not any(d.ok for d in domains):
        detail = "; ".join(_domain_problem(d) for d in domains[:4]) or "the cluster has no zones"
        j.add(
            FindingKind.UNSCHEDULABLE,
            j.roles,
            {z for d in domains for z in d.zones},
            {p for d in domains for p in d.policies},
            f"no single allowed domain can hold the whole group (needs {_n(domains)} GPUs): "
            f"{detail}",
        )


def _ok(j: _Job) -> None:
    if not any(f.kind.is_problem for f in j.findings):
        zones = {z for m in j.members for z in m.placement.zones}
        j.add(
            FindingKind.OK,
            j.roles,
            zones,
            set(),
            f"every placement the scheduler may choose keeps the group in one zone with its "
            f"traffic allowed ({', '.join(sorted(zones)) or 'no zone'})",
        )


# the checks, in the order their findings are listed: each member's, then the job's
MEMBER_CHECKS: tuple[Callable[[_Job, Member], None], ...] = (
    _no_node,
    _pending_affinity,
    _identity_mismatch,
)
JOB_CHECKS: tuple[Callable[[_Job], None], ...] = (_hard_block, _cross_zone, _no_domain, _ok)


def analyze_job(
    cluster: str, job: TrainingGroup, ctx: AnalysisContext, findings: bool = True
) -> JobAnalysis:
    """The job's members, domains and findings. `findings`: False for what only a plan
    reads (members, domains, Kueue's zones), as `topogen render` does: no finding is made
    (the job's own zone pairs are not looked at) and none is returned."""
    j = _Job(cluster, job, ctx, members_of(job, ctx.cluster.nodes))
    kueue = kueue_job(job, ctx.cluster.kueue, ctx.domain_key)
    # a queued job whose flavor topogen does not know: its pods are not known either
    known = kueue is None or (kueue.route is not None and kueue.route.flavor is not None)
    for m in j.members if known and findings else ():
        for member_check in MEMBER_CHECKS:
            member_check(j, m)
    if findings and not j.stuck and all(m.placement.nodes for m in j.members):
        j.paths = ctx.job_paths(j.members)
        if j.paths.blocked_count:
            j.blocked = BlockedPaths(j.paths.blocked_count, j.paths.blocked, tuple(j.members))
    if kueue is not None:
        _kueue(j, kueue)
    else:
        _domains(j)
        for job_check in JOB_CHECKS if findings else ():
            job_check(j)
    return JobAnalysis(
        cluster,
        job,
        tuple(j.members),
        tuple(j.findings) if findings else (),
        j.domains,
        j.blocked,
        kueue,
        j.kueue_zones,
    )


def _kueue(j: _Job, k: KueueJob) -> None:
    """Kueue's TAS, not kube-scheduler, picks the domain: constrain the job's templates to
    the allowed domains where TAS honours that (KUEUE_CONSTRAINED), else report why not."""
    queue = f" (queue {k.route.name})" if k.route is not None else ""
    if k.judgement is None:
        _kueue_managed(j, k.unknown)
        return
    if not k.judgement.constrainable:
        _kueue_managed(j, f"placed by Kueue Topology Aware Scheduling{queue}: {k.judgement.reason}")
        return
    j.domains = tuple(
        check_domains(
            j.members, j.ctx.cluster.candidates(j.ctx.colocate, j.ctx.domain_label), j.ctx
        )
    )
    allowed = [d for d in j.domains if d.ok]
    zones = tuple(sorted({z for d in allowed for z in d.zones}))
    key = k.judgement.level
    flavor = k.route.flavor if k.route is not None else None
    pinned = flavor.node_labels.get(j.ctx.topology.zone_label) if flavor is not None else None
    if pinned is not None and pinned not in zones:
        there = next((d for d in j.domains if pinned in d.zones), None)
        why = there.problems[0] if there is not None and there.problems else "no domain has it"
        _kueue_managed(
            j,
            f"placed by Kueue Topology Aware Scheduling{queue}: its ResourceFlavor "
            f"{flavor.name if flavor else ''} pins {j.ctx.topology.zone_label}={pinned}, "
            f"where it cannot be kept with its traffic allowed ({why})",
        )
        return
    if not allowed:
        detail = "; ".join(_domain_problem(d) for d in j.domains[:4]) or "the cluster has no zones"
        _kueue_managed(
            j,
            f"placed by Kueue Topology Aware Scheduling{queue}: no single allowed domain can "
            f"hold the whole group (needs {_n(list(j.domains))} GPUs): {detail}",
        )
        return
    j.kueue_zones = zones
    topology = k.route.topology.name if k.route and k.route.topology else ""
    group = ", one podset-group-name for its two PodSets" if k.judgement.grouped else ""
    j.add(
        FindingKind.KUEUE_CONSTRAINED,
        j.roles,
        set(zones),
        set(),
        f"placed by Kueue Topology Aware Scheduling{queue} on Topology {topology}: topogen "
        f"constrains its templates at creation to {key} in [{', '.join(zones)}] (required node "
        f"affinity, podset-required-topology {key}{group}), where its traffic is allowed",
    )


def _kueue_managed(j: _Job, why: str) -> None:
    """Left to Kueue: why, and whether its traffic across zones is denied."""
    policies: set[str] = set()
    zones: set[str] = set()
    if j.paths is not None and j.blocked:
        policies = {str(p) for p in j.paths.blocked_policies()}
        zones = j.paths.blocked_zones()
    note = (
        (
            f"; across zones its traffic is denied ({', '.join(sorted(policies))}), so the "
            "Kueue topology request must keep it in one zone"
        )
        if j.blocked
        else ""
    )
    j.add(
        FindingKind.KUEUE_MANAGED,
        j.roles,
        zones,
        policies,
        f"{why}; topogen adds no affinity{note}",
    )


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
    free = gpus_text(d.gpus_free)
    first = d.problems[0] if d.problems else "does not fit"
    return f"{d.name} ({free} GPUs): {first}"
