"""The core entry points the CLI calls: sources -> analysis -> plan (-> render, emit)."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from topogen.analysis import AnalysisContext, JobAnalysis, PolicyIndex, analyze_job, find_groups
from topogen.analysis.context import BlockedPath
from topogen.analysis.members import Member
from topogen.config import GroupConfig, TopogenConfig
from topogen.model import Finding, Namespace, TrainingGroup, Workload
from topogen.parallel import Shared, map_groups, workers
from topogen.plan import GroupPlan, plan_group
from topogen.sources.loader import (
    ClusterInputs,
    WorkloadInputs,
    load_cluster_inputs,
    load_workload_inputs,
)

__all__ = ["AnalysisReport", "ClusterAnalysis", "analyze", "no_cycle_collection"]


@dataclass(frozen=True)
class ClusterAnalysis:
    cluster: str
    inputs: ClusterInputs
    jobs: tuple[JobAnalysis, ...]
    plans: tuple[GroupPlan, ...]
    findings: tuple[Finding, ...]
    # what analyze's `then` made of each plan (in the same order), when it was given one
    then: tuple[Any, ...] = ()


@dataclass(frozen=True)
class AnalysisReport:
    clusters: tuple[ClusterAnalysis, ...]
    skipped: tuple[str, ...]
    warnings: tuple[str, ...]
    # the config's workload files as read (render patches them)
    read: WorkloadInputs

    @property
    def findings(self) -> tuple[Finding, ...]:
        return tuple(f for c in self.clusters for f in c.findings)

    @property
    def has_problems(self) -> bool:
        return any(f.kind.is_problem for f in self.findings)

    @property
    def plans(self) -> tuple[GroupPlan, ...]:
        return tuple(p for c in self.clusters for p in c.plans)


@contextmanager
def no_cycle_collection() -> Iterator[None]:
    """Pause Python's cyclic garbage collector.

    Reading a fleet and analyzing it allocates millions of small, acyclic objects; the
    collector, triggered by allocation counts, would walk them again and again (about a
    quarter of the run at 5,000 nodes) and find nothing. Reference counting still frees
    everything as usual; cycles made meanwhile are collected once it is back on.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


Then = Callable[[str, GroupPlan], Any]  # see analyze()


class _ClusterGroups:
    """The groups of one cluster, analyzed one by one (see parallel.map_groups)."""

    def __init__(
        self,
        cluster: str,
        domain_label: str | None,
        inputs: ClusterInputs,
        index: PolicyIndex,
        namespaces: dict[str, Namespace],
        groups: list[GroupConfig],
    ) -> None:
        self.cluster = cluster
        self.domain_label = domain_label
        self.inputs = inputs
        self.index = index
        self.namespaces = namespaces
        self.groups = groups
        self.found: list[list[TrainingGroup]] = []
        self.then: Then | None = None
        self._contexts: dict[int, AnalysisContext] = {}

    def context(self, g: int) -> AnalysisContext:
        ctx = self._contexts.get(g)
        if ctx is None:
            ctx = self._contexts[g] = AnalysisContext(
                self.inputs.topology,
                self.index,
                self.namespaces,
                self.groups[g],
                domain_label=self.domain_label,
            )
        return ctx

    def one(self, g: int) -> tuple[list[JobAnalysis], GroupPlan, Any]:
        ctx = self.context(g)
        group_jobs = [analyze_job(self.cluster, j, ctx) for j in self.found[g]]
        plan = plan_group(self.cluster, self.groups[g], group_jobs, ctx)
        return group_jobs, plan, None if self.then is None else self.then(self.cluster, plan)

    def blocked(self, g: int, members: tuple[Member, ...]) -> Callable[[], Iterator[BlockedPath]]:
        """The blocked paths of a job of group g, listed when asked for."""
        return lambda: self.context(g).job_paths(members).blocked()


def analyze(
    cfg: TopogenConfig,
    clusters: list[str] | None = None,
    workloads: tuple[Workload, ...] | None = None,
    then: Then | None = None,
) -> AnalysisReport:
    """Analyze every (or the named) cluster of the config against its workloads.

    `then(cluster, plan)` runs on each group's plan where the group was analyzed (on a
    fleet, in the worker process: render passes the rendering of a group's policies);
    its results are ClusterAnalysis.then.
    """
    with no_cycle_collection():
        return _analyze(cfg, clusters, workloads, then)


def _analyze(
    cfg: TopogenConfig,
    clusters: list[str] | None,
    workloads: tuple[Workload, ...] | None,
    then: Then | None,
) -> AnalysisReport:
    loaded = load_workload_inputs(cfg)
    all_workloads = loaded.workloads if workloads is None else workloads
    chosen = [cfg.cluster(n) for n in clusters] if clusters else list(cfg.clusters)
    results = []
    warnings: list[str] = []
    for cluster in chosen:
        inputs = load_cluster_inputs(cfg, cluster)
        namespaces = {**loaded.namespaces, **inputs.namespaces}
        index = PolicyIndex(inputs.policies, namespaces)
        warnings.extend(inputs.warnings)
        groups = cfg.groups_for(cluster.name)
        run = _ClusterGroups(cluster.name, cluster.domain_label, inputs, index, namespaces, groups)
        run.found = [find_groups(group, all_workloads) for group in groups]
        run.then = then
        shared = Shared(
            [
                *all_workloads,
                *(w.template for w in all_workloads),
                *(j for js in run.found for j in js),
                *groups,
            ],
            inputs.topology.nodes,
            run.blocked,
        )
        jobs_count = sum(len(js) for js in run.found)
        largest_first = sorted(range(len(groups)), key=lambda g: -len(run.found[g]))
        analyzed = map_groups(run.one, len(groups), workers(jobs_count), shared, largest_first)
        jobs: list[JobAnalysis] = []
        plans: list[GroupPlan] = []
        findings: list[Finding] = []
        made: list[Any] = []
        for group, (group_jobs, plan, after) in zip(groups, analyzed, strict=True):
            if not group_jobs:
                warnings.append(
                    f"cluster {cluster.name}: no workloads of group {group.name} "
                    f"found in namespaces {', '.join(group.namespaces)}"
                )
            if plan.note:
                warnings.append(f"cluster {cluster.name}: {plan.note}")
            fix = plan.describe_fix()
            for j in group_jobs:
                findings.extend(replace(f, fix=fix) if f.kind.is_problem else f for f in j.findings)
            jobs.extend(group_jobs)
            plans.append(plan)
            made.append(after)
        results.append(
            ClusterAnalysis(
                cluster.name,
                inputs,
                tuple(jobs),
                tuple(plans),
                tuple(findings),
                tuple(made) if then is not None else (),
            )
        )
    skipped = loaded.skipped + tuple(s for c in results for s in c.inputs.skipped)
    return AnalysisReport(tuple(results), skipped, tuple(warnings), loaded)
