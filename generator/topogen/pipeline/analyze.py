"""`topogen analyze` (and the first half of render): sources -> analysis -> plan, per
cluster; the groups of a cluster analysed and planned on several cores (ClusterRun)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from topogen.analysis import (
    AnalysisContext,
    ClusterIndex,
    JobAnalysis,
    PolicyIndex,
    analyze_job,
)
from topogen.analysis.groups import (
    ByNamespace,
    check_profiles,
    find_all_groups,
    group_selector,
    left_out,
)
from topogen.analysis.kueue import admitted_workloads
from topogen.analysis.members import Member
from topogen.analysis.paths import BlockedPath
from topogen.analysis.policychecks import policy_notes, policy_warnings
from topogen.config import ClusterConfig, GroupConfig, TopogenConfig
from topogen.errors import InputError, InternalError, Notice
from topogen.kueue.engines import KUEUE_ENGINE_GAPS, KUEUE_JOB_ENGINES, engine_gap
from topogen.model import (
    Finding,
    FindingKind,
    LastPlacements,
    Namespace,
    PolicySet,
    TrainingGroup,
    Workload,
)
from topogen.operators.registry import profile_for
from topogen.pipeline.inputs import Reading, start_reading
from topogen.pipeline.parallel import Shared, map_groups, no_cycle_collection, workers
from topogen.pipeline.running import running_splits, with_running
from topogen.plan.group_plan import GroupPlan
from topogen.plan.packing import plan_cluster
from topogen.plan.planner import plan_group
from topogen.sources.last_render import read_last_placements
from topogen.sources.loader import (
    ClusterInputs,
    WorkloadInputs,
    finish_cluster_inputs,
    read_cluster_sources,
)
from topogen.textui import step

__all__ = [
    "GATEKEEPER_FAILS_OPEN",
    "AnalysisReport",
    "ClusterAnalysis",
    "ClusterRun",
    "EmptyGroup",
    "analyze",
    "engine_warnings",
    "repins",
]

# Gatekeeper's install registers its webhooks with failurePolicy Ignore (and 1 s / 3 s
# timeouts for mutation / validation): an outage admits pods as they were submitted.
GATEKEEPER_FAILS_OPEN = (
    "Gatekeeper's webhooks fail open (failurePolicy Ignore, Gatekeeper's default): while "
    "Gatekeeper is down or slower than its webhook timeouts (1 s mutation, 3 s validation) "
    "pods are admitted unmutated and unchecked, and a group can be split again; "
    "gatekeeper.failurePolicy: Fail renders kustomize/components/gatekeeper-fail-closed "
    "for the kustomization that installs Gatekeeper"
)


@dataclass(frozen=True)
class ClusterAnalysis:
    cluster: str
    inputs: ClusterInputs
    jobs: tuple[JobAnalysis, ...]
    plans: tuple[GroupPlan, ...]
    findings: tuple[Finding, ...]


@dataclass(frozen=True)
class EmptyGroup:
    """A config group that matches no workload of the inputs (and does not allow it)."""

    cluster: str
    group: str
    selector: str  # what it selects, in words
    templates: int  # the pod templates read

    def __str__(self) -> str:
        return (
            f"cluster {self.cluster}: group {self.group} matches no workload: it selects "
            f"{self.selector}, and none of the {self.templates} pod template(s) read matches; "
            "fix its profile, labels or namespaces (or the config's workloads), or set "
            "allowEmpty: true on the group if it is meant to have no job here (it gets no "
            "policies until it has one)"
        )


@dataclass(frozen=True)
class AnalysisReport:
    clusters: tuple[ClusterAnalysis, ...]
    skipped: tuple[str, ...]
    warnings: tuple[str, ...]  # a cluster's: Notice
    # the config's workload files as read (render patches them)
    read: WorkloadInputs
    # what Cilium enforces beyond L3/L4 on the analysed pods (L7 rules, authentication ...)
    notes: tuple[str, ...] = ()
    # groups that match no workload: analyze fails on them (no silent all-clear)
    empty_groups: tuple[EmptyGroup, ...] = ()
    # False: made for a render, which shows no finding and no note: none was made
    # (analyze(findings=False)); the notes are then empty
    findings_made: bool = True

    @property
    def findings(self) -> tuple[Finding, ...]:
        if not self.findings_made:
            raise InternalError("a render's analysis has no findings: analyze(findings=True)")
        return tuple(f for c in self.clusters for f in c.findings)

    @property
    def has_problems(self) -> bool:
        """A problem finding, or a group that matches nothing (analyze exits 1)."""
        return bool(self.empty_groups) or any(f.kind.is_problem for f in self.findings)

    @property
    def plans(self) -> tuple[GroupPlan, ...]:
        return tuple(p for c in self.clusters for p in c.plans)


def _no_overlap(
    cfg: TopogenConfig,
    cluster: str,
    groups: list[GroupConfig],
    found: list[list[TrainingGroup]],
) -> None:
    """Two groups of one cluster may not select the same pods: their policies would
    contradict each other (each confining the pods to its own domain)."""
    owner: dict[tuple[str, str, str, str], str] = {}
    for group, jobs in zip(groups, found, strict=True):
        for w in (w for j in jobs for r in j.roles for w in r.workloads):
            key = (w.kind, w.namespace, w.name, w.replica_name)
            first = owner.setdefault(key, group.name)
            if first != group.name:
                raise InputError(
                    f"groups {first} and {group.name} both select the pods of {w.ref} "
                    f"(cluster {cluster}): their policies would contradict each other",
                    path=cfg.path,
                    hint="give each group its own namespaces or labels",
                )
    for i, a in enumerate(groups):
        for b in groups[i + 1 :]:
            shared = sorted(set(a.namespaces) & set(b.namespaces))
            if shared and profile_for(a) == profile_for(b):
                raise InputError(
                    f"groups {a.name} and {b.name} select the same pods in namespace "
                    f"{shared[0]} (same profile and labels): their policies would contradict "
                    "each other",
                    path=cfg.path,
                    hint="give each group its own namespaces or labels",
                )


@dataclass
class _PolicyNotices:
    """A cluster's policy warnings (`keys`: identity labels, topology keys) and notes,
    made when `make` is called: by this process while the others start on the groups
    (ClusterRun.analyze's `meanwhile`)."""

    cluster: str
    policies: PolicySet
    index: PolicyIndex
    namespaces: dict[str, Namespace]
    workloads: Sequence[Workload]
    pods: Sequence[tuple[str, tuple[str, ...]]]
    keys: tuple[set[str], set[str]]
    with_notes: bool = True  # the notes go with the findings (a render shows neither)
    warnings: list[Notice] = field(default_factory=list)
    notes: list[Notice] = field(default_factory=list)

    def make(self) -> None:
        self.warnings = [
            Notice(self.cluster, w) for w in policy_warnings(self.policies, self.pods, *self.keys)
        ]
        if self.with_notes:
            self.notes = [
                Notice(self.cluster, n)
                for n in policy_notes(self.index, self.workloads, self.namespaces)
            ]


SYSTEM_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease")


def _system_namespaces(cluster: str, group: GroupConfig) -> list[Notice]:
    return [
        Notice(
            cluster,
            f"group {group.name} is in the system namespace {ns}: Kyverno's default install "
            f"leaves {ns} out of its webhooks (the policies never run there), and where they "
            "run they fail closed (failurePolicy Fail): while the webhook is down no pod of "
            f"the group can be created in {ns}",
            group.name,
        )
        for ns in group.namespaces
        if ns in SYSTEM_NAMESPACES
    ]


def analyze(
    cfg: TopogenConfig,
    clusters: list[str] | None = None,
    workloads: tuple[Workload, ...] | None = None,
    out: Path | None = None,
    *,
    denied_pairs: bool = True,
    findings: bool = True,
    reading: Reading | None = None,
) -> AnalysisReport:
    """Analyze every (or the named) cluster of the config against its workloads, and plan
    each group (the cluster's spread groups packed together). How the groups are shared
    out among the cores: ClusterRun, parallel.py. `out`: the output tree of the last
    render (default: the config's folder), whose placements each job keeps.
    `denied_pairs`: whether the plans carry the zone pairs their validation policies
    deny (a render's; `topogen analyze` shows none of them). `findings`: whether each
    job's findings and the policies' notes are made (`topogen render` shows neither;
    the plans and warnings are the same). `reading`: the inputs' read, already begun
    (start_reading(cfg, clusters), the same clusters)."""
    with no_cycle_collection():
        base = cfg.base_dir if out is None else out
        if reading is None:
            reading = start_reading(cfg, clusters)
        return _analyze(cfg, clusters, workloads, base, reading, denied_pairs, findings)


def engine_warnings(cfg: TopogenConfig, cluster: ClusterConfig) -> list[Notice]:
    """What the chosen engines do when they are down, where that admits pods unconstrained."""
    if "gatekeeper" in cfg.engines_for(cluster) and cfg.gatekeeper.failure_policy == "Ignore":
        return [Notice(cluster.name, GATEKEEPER_FAILS_OPEN)]
    return []


def _analyze(
    cfg: TopogenConfig,
    clusters: list[str] | None,
    workloads: tuple[Workload, ...] | None,
    out: Path,
    reading: Reading,
    denied_pairs: bool = True,
    findings: bool = True,
) -> AnalysisReport:
    loaded, early = reading()
    all_workloads = loaded.workloads if workloads is None else workloads
    chosen = [cfg.cluster(n) for n in clusters] if clusters else list(cfg.clusters)
    results = []
    warnings: list[str] = list(loaded.warnings)
    notes: list[str] = []
    empty: list[EmptyGroup] = []
    pods = [(w.namespace, tuple(w.template.labels)) for w in all_workloads]
    by_namespace = ByNamespace(all_workloads)  # left_out's, for every cluster's groups
    for k, cluster in enumerate(chosen):
        step(f"cluster {cluster.name}: reading nodes and policies")
        first = early if k == 0 else None
        sources = first.sources if first is not None else read_cluster_sources(cfg, cluster)
        policies = first.policies if first is not None else None
        inputs = finish_cluster_inputs(cfg, sources, loaded.services, loaded.objects, policies)
        namespaces = {**loaded.namespaces, **inputs.namespaces}
        policy_index = PolicyIndex(inputs.policies, namespaces)
        # a queued job's pods as Kueue admits them (its flavor's nodeSelector, tolerations)
        admitted = admitted_workloads(all_workloads, inputs.kueue)
        index = ClusterIndex(
            inputs.topology, policy_index, namespaces, admitted, inputs.pools, inputs.kueue
        )
        warnings.extend(inputs.warnings)
        warnings.extend(engine_warnings(cfg, cluster))
        groups = cfg.groups_for(cluster.name)
        identity_labels = {g.identity_label for g in groups if g.identity_label}
        topology = {cluster.zone_label, *([cluster.domain_label] if cluster.domain_label else [])}
        # the policies' warnings and notes: made while the other processes start on the
        # groups, listed here
        policy = _PolicyNotices(
            cluster.name,
            inputs.policies,
            policy_index,
            namespaces,
            all_workloads,
            pods,
            (identity_labels, topology),
            findings,
        )
        at_warnings = len(warnings)
        step(f"cluster {cluster.name}: analysing {len(groups)} groups")
        admitted_by_namespace = ByNamespace(admitted)  # finding the jobs, checking profiles
        found = find_all_groups(groups, admitted_by_namespace)
        warnings.extend(
            Notice(cluster.name, w, g.name) for g in groups for w in left_out(g, by_namespace)
        )
        _no_overlap(cfg, cluster.name, groups, found)
        check_profiles(groups, admitted_by_namespace, found)
        last, running = with_running(
            cfg, cluster, inputs.topology, groups, read_last_placements(out, cluster.name)
        )
        warnings.extend(Notice(cluster.name, w) for w in running)
        run = ClusterRun(
            cluster.name,
            index,
            cluster.domain_label,
            groups,
            found,
            last,
            denied_pairs,
            findings,
        )
        analyzed = run.analyze(admitted, policy.make)
        warnings[at_warnings:at_warnings] = policy.warnings
        notes.extend(policy.notes)
        jobs: list[JobAnalysis] = []
        plans: list[GroupPlan] = []
        cluster_findings: list[Finding] = []
        engines = cfg.engines_for(cluster)
        for group, (group_jobs, plan) in zip(groups, analyzed, strict=True):
            warnings.extend(_system_namespaces(cluster.name, group))
            if not group_jobs and not group.allow_empty:
                empty.append(
                    EmptyGroup(cluster.name, group.name, group_selector(group), len(all_workloads))
                )
            if plan.note:
                warnings.append(Notice(cluster.name, plan.note, group.name))
            warnings.extend(Notice(cluster.name, r, group.name) for r in repins(plan))
            warnings.extend(Notice(cluster.name, r, group.name) for r in running_splits(plan, last))
            fix = plan.describe_fix()
            gaps = [e for e in engines if e in KUEUE_ENGINE_GAPS] if plan.kueue else []
            warnings.extend(
                Notice(cluster.name, engine_gap(e, group.name), group.name) for e in gaps
            )
            for j in group_jobs:
                cluster_findings.extend(
                    replace(f, fix=fix)
                    if f.kind.is_problem
                    else _kueue_finding(f, j, plan, engines)
                    for f in j.findings
                )
            jobs.extend(group_jobs)
            plans.append(plan)
        results.append(
            ClusterAnalysis(
                cluster.name, inputs, tuple(jobs), tuple(plans), tuple(cluster_findings)
            )
        )
    skipped = loaded.skipped + tuple(s for c in results for s in c.inputs.skipped)
    return AnalysisReport(
        tuple(results),
        skipped,
        tuple(warnings),
        loaded,
        tuple(notes),
        tuple(empty),
        findings,
    )


class ClusterRun:
    """The config groups of one cluster (their jobs found), analyzed and planned group by
    group, the largest first, shared out among the cores (map_groups)."""

    def __init__(
        self,
        cluster: str,
        index: ClusterIndex,
        domain_label: str | None,
        groups: Sequence[GroupConfig],
        found: Sequence[Sequence[TrainingGroup]],
        last: LastPlacements | None = None,
        denied_pairs: bool = True,
        findings: bool = True,
    ) -> None:
        self.cluster = cluster
        self.last = last
        self.denied_pairs = denied_pairs  # plan_group's: only a render reads them
        self.findings = findings  # analyze_job's: a render shows none
        self.index = index
        self.domain_label = domain_label
        self.groups = list(groups)
        self.found = [list(js) for js in found]
        self._contexts: dict[int, AnalysisContext] = {}

    def analyze(
        self, workloads: Sequence[Workload], meanwhile: Callable[[], object] | None = None
    ) -> list[tuple[list[JobAnalysis], GroupPlan]]:
        """Per group: its jobs analyzed, and its plan; `meanwhile`: this process's own work
        beside the groups, done first (map_groups)."""
        shared = Shared(
            [
                *workloads,
                *(w.template for w in workloads),
                *(j for js in self.found for j in js),
                *self.groups,
                # what a domain's cannot-run texts are made from in the parent (CannotRun)
                self.index.nodes,
                self.index.provisioning,
            ],
            self.index.topology.nodes,
            self._blocked,
        )
        procs = workers(sum(len(js) for js in self.found))
        analyzed = map_groups(
            self._one, len(self.groups), procs, shared, self._order(), True, meanwhile
        )
        # the spread groups' jobs share the cluster's GPUs: packed together, in one place
        planned = plan_cluster([p for _, p in analyzed], [js for js, _ in analyzed], self.last)
        return [(js, p) for (js, _), p in zip(analyzed, planned, strict=True)]

    def _order(self) -> list[int]:
        """The groups in the order the processes share them out: groups alike (profile,
        identity label, ports, co-location: what fills the same caches) together, each
        kind's largest first."""

        def kind(g: int) -> str:
            group = self.groups[g]
            ports = ",".join(str(p) for p in group.ports or ())
            return f"{group.profile}|{group.identity_label or ''}|{ports}|{group.colocate}"

        return sorted(range(len(self.groups)), key=lambda g: (kind(g), -len(self.found[g]), g))

    def _context(self, g: int) -> AnalysisContext:
        ctx = self._contexts.get(g)
        if ctx is None:
            ctx = self._contexts[g] = AnalysisContext(
                self.index, self.groups[g], domain_label=self.domain_label
            )
        return ctx

    def _one(self, g: int) -> tuple[list[JobAnalysis], GroupPlan]:
        ctx = self._context(g)
        group_jobs = [analyze_job(self.cluster, j, ctx, self.findings) for j in self.found[g]]
        name = self.groups[g].name
        last = self.last.groups.get(name) if self.last is not None else None
        running = self.last.running_groups.get(name) if self.last is not None else None
        plan = plan_group(
            self.cluster, self.groups[g], group_jobs, ctx, last, running, self.denied_pairs
        )
        return group_jobs, plan

    def _blocked(self, g: int, members: tuple[Member, ...]) -> Callable[[], Iterator[BlockedPath]]:
        """The blocked paths of a job of group g, listed when asked for (in the parent)."""
        return lambda: self._context(g).job_paths(members).blocked()


def _kueue_finding(
    f: Finding, job: JobAnalysis, plan: GroupPlan, engines: Sequence[str]
) -> Finding:
    """A KUEUE_CONSTRAINED job with the plan's fix; left to Kueue (KUEUE_MANAGED) when the
    plan constrains none of the group's Kueue jobs (they share no allowed zone), or when
    none of the cluster's engines renders the Kueue job policies."""
    if f.kind is not FindingKind.KUEUE_CONSTRAINED:
        return f
    if plan.kueue is None or job.job.key not in plan.kueue.jobs:
        return replace(
            f, kind=FindingKind.KUEUE_MANAGED, message=f"{plan.note}; topogen adds no affinity"
        )
    by = [e for e in engines if e in KUEUE_JOB_ENGINES]
    if not by:
        return replace(
            f,
            kind=FindingKind.KUEUE_MANAGED,
            message=f"{f.message.split(': topogen constrains')[0]}: engine "
            f"{', '.join(engines)} renders no Kueue job policy; topogen adds no affinity",
            fix=f"add kyverno or native to the cluster's engines (README, Kueue); "
            f"{KUEUE_ENGINE_GAPS[engines[0]]}",
        )
    others = [e for e in engines if e not in KUEUE_JOB_ENGINES]
    note = f" (by {', '.join(by)}; not by {', '.join(others)})" if others else ""
    return replace(f, message=f.message + note, fix=plan.describe_kueue_fix())


def repins(plan: GroupPlan) -> list[str]:
    """What the plan moves from where the last render put it, and why (one line each)."""
    if plan.repin:
        return [
            f"group {plan.group.name} re-pinned from {plan.previous_domain} to {plan.domain}: "
            f"{plan.repin}"
        ]
    return [
        f"job {j.job} of group {plan.group.name} re-pinned from {j.previous} to {j.domain}: "
        f"{j.repin}"
        for j in plan.job_domains
        if j.change == "moved"
    ]


def largest_first(jobs: Sequence[int]) -> list[int]:
    """The groups in the order workers claim them: the most jobs first (balances best)."""
    return sorted(range(len(jobs)), key=lambda g: -jobs[g])
