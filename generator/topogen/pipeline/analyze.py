"""The core entry points the CLI calls: sources -> analysis -> plan (-> render, emit)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from topogen.analysis import ClusterIndex, JobAnalysis, PolicyIndex, find_groups
from topogen.analysis.groups import check_profiles
from topogen.analysis.policychecks import policy_notes, policy_warnings
from topogen.config import ClusterConfig, GroupConfig, TopogenConfig
from topogen.errors import InputError
from topogen.model import Finding, TrainingGroup, Workload
from topogen.operators.registry import profile_for
from topogen.pipeline.parallel import ClusterRun, Then, no_cycle_collection
from topogen.plan.planner import GroupPlan
from topogen.sources.loader import (
    ClusterInputs,
    WorkloadInputs,
    load_cluster_inputs,
    load_workload_inputs,
)
from topogen.textui import step

__all__ = [
    "GATEKEEPER_FAILS_OPEN",
    "AnalysisReport",
    "ClusterAnalysis",
    "analyze",
    "engine_warnings",
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
    # what analyze's `then` made of each plan (in the same order), when it was given one
    then: tuple[Any, ...] = ()


@dataclass(frozen=True)
class AnalysisReport:
    clusters: tuple[ClusterAnalysis, ...]
    skipped: tuple[str, ...]
    warnings: tuple[str, ...]
    # the config's workload files as read (render patches them)
    read: WorkloadInputs
    # what Cilium enforces beyond L3/L4 on the analysed pods (L7 rules, authentication ...)
    notes: tuple[str, ...] = ()

    @property
    def findings(self) -> tuple[Finding, ...]:
        return tuple(f for c in self.clusters for f in c.findings)

    @property
    def has_problems(self) -> bool:
        return any(f.kind.is_problem for f in self.findings)

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


SYSTEM_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease")


def _system_namespaces(cluster: str, group: GroupConfig) -> list[str]:
    return [
        f"cluster {cluster}: group {group.name} is in the system namespace {ns}: Kyverno's "
        f"default install leaves {ns} out of its webhooks (the policies never run there), "
        "and where they run they fail closed (failurePolicy Fail): while the webhook is down "
        f"no pod of the group can be created in {ns}"
        for ns in group.namespaces
        if ns in SYSTEM_NAMESPACES
    ]


def analyze(
    cfg: TopogenConfig,
    clusters: list[str] | None = None,
    workloads: tuple[Workload, ...] | None = None,
    then: Then | None = None,
) -> AnalysisReport:
    """Analyze every (or the named) cluster of the config against its workloads.

    `then(cluster, plan)` runs on each group's final plan (after the cluster's spread
    groups are packed together), shared out among the cores on a fleet (render passes
    the rendering of a group's policies); its results are ClusterAnalysis.then. How the
    groups are shared out among the cores: parallel.py.
    """
    with no_cycle_collection():
        return _analyze(cfg, clusters, workloads, then)


def engine_warnings(cfg: TopogenConfig, cluster: ClusterConfig) -> list[str]:
    """What the chosen engines do when they are down, where that admits pods unconstrained."""
    if "gatekeeper" in cfg.engines_for(cluster) and cfg.gatekeeper.failure_policy == "Ignore":
        return [f"cluster {cluster.name}: {GATEKEEPER_FAILS_OPEN}"]
    return []


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
    warnings: list[str] = list(loaded.warnings)
    notes: list[str] = []
    pods = [(w.namespace, tuple(w.template.labels)) for w in all_workloads]
    for cluster in chosen:
        step(f"cluster {cluster.name}: reading nodes and policies")
        inputs = load_cluster_inputs(cfg, cluster, loaded.services)
        namespaces = {**loaded.namespaces, **inputs.namespaces}
        policy_index = PolicyIndex(inputs.policies, namespaces)
        index = ClusterIndex(inputs.topology, policy_index, namespaces, all_workloads)
        warnings.extend(inputs.warnings)
        warnings.extend(engine_warnings(cfg, cluster))
        groups = cfg.groups_for(cluster.name)
        identity_labels = {g.identity_label for g in groups if g.identity_label}
        topology = {cluster.zone_label, *([cluster.domain_label] if cluster.domain_label else [])}
        warnings.extend(
            f"cluster {cluster.name}: {w}"
            for w in policy_warnings(inputs.policies, pods, identity_labels, topology)
        )
        notes.extend(
            f"cluster {cluster.name}: {n}"
            for n in policy_notes(policy_index, all_workloads, namespaces)
        )
        step(f"cluster {cluster.name}: analysing {len(groups)} groups")
        found = [find_groups(group, all_workloads) for group in groups]
        _no_overlap(cfg, cluster.name, groups, found)
        check_profiles(groups, all_workloads, found)
        run = ClusterRun(cluster.name, index, cluster.domain_label, groups, found, then)
        analyzed = run.analyze(all_workloads)
        jobs: list[JobAnalysis] = []
        plans: list[GroupPlan] = []
        findings: list[Finding] = []
        made: list[Any] = []
        for group, (group_jobs, plan, after) in zip(groups, analyzed, strict=True):
            warnings.extend(_system_namespaces(cluster.name, group))
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
    return AnalysisReport(tuple(results), skipped, tuple(warnings), loaded, tuple(notes))
