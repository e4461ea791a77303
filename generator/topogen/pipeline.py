"""The core entry points the CLI calls: sources -> analysis -> plan (-> render, emit)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from topogen.analysis import AnalysisContext, JobAnalysis, PolicyIndex, analyze_job, find_groups
from topogen.config import TopogenConfig
from topogen.model import Finding, Workload
from topogen.plan import GroupPlan, plan_group
from topogen.sources.loader import ClusterInputs, load_cluster_inputs, load_workload_inputs

__all__ = ["AnalysisReport", "ClusterAnalysis", "analyze"]


@dataclass(frozen=True)
class ClusterAnalysis:
    cluster: str
    inputs: ClusterInputs
    jobs: tuple[JobAnalysis, ...]
    plans: tuple[GroupPlan, ...]
    findings: tuple[Finding, ...]


@dataclass(frozen=True)
class AnalysisReport:
    clusters: tuple[ClusterAnalysis, ...]
    skipped: tuple[str, ...]
    warnings: tuple[str, ...]

    @property
    def findings(self) -> tuple[Finding, ...]:
        return tuple(f for c in self.clusters for f in c.findings)

    @property
    def has_problems(self) -> bool:
        return any(f.kind.is_problem for f in self.findings)

    @property
    def plans(self) -> tuple[GroupPlan, ...]:
        return tuple(p for c in self.clusters for p in c.plans)


def analyze(
    cfg: TopogenConfig,
    clusters: list[str] | None = None,
    workloads: tuple[Workload, ...] | None = None,
) -> AnalysisReport:
    """Analyze every (or the named) cluster of the config against its workloads."""
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
        jobs: list[JobAnalysis] = []
        plans: list[GroupPlan] = []
        findings: list[Finding] = []
        for group in cfg.groups_for(cluster.name):
            ctx = AnalysisContext(
                inputs.topology, index, namespaces, group, domain_label=cluster.domain_label
            )
            group_jobs = [
                analyze_job(cluster.name, j, ctx) for j in find_groups(group, all_workloads)
            ]
            if not group_jobs:
                warnings.append(
                    f"cluster {cluster.name}: no workloads of group {group.name} "
                    f"found in namespaces {', '.join(group.namespaces)}"
                )
            plan = plan_group(cluster.name, group, group_jobs, ctx)
            if plan.note:
                warnings.append(f"cluster {cluster.name}: {plan.note}")
            fix = plan.describe_fix()
            for j in group_jobs:
                findings.extend(replace(f, fix=fix) if f.kind.is_problem else f for f in j.findings)
            jobs.extend(group_jobs)
            plans.append(plan)
        results.append(
            ClusterAnalysis(cluster.name, inputs, tuple(jobs), tuple(plans), tuple(findings))
        )
    skipped = loaded.skipped + tuple(s for c in results for s in c.inputs.skipped)
    return AnalysisReport(tuple(results), skipped, tuple(warnings))
