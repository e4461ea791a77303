"""The last render's placements, with where the jobs run now (a snapshot's bound pods).

A job whose pods all run in one domain keeps it, as a placements.yaml entry keeps it, and
wins over the file when the two disagree (moving it would split it from its pods); the
snapshot's pods are read by sources/running.py, mapped to jobs by analysis/running.py,
kept by plan/planner.py and plan/packing.py. `snapshot_pods` is the other end: what `topogen snapshot -c`
records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from topogen.analysis.running import running_jobs, training_pods
from topogen.config import ClusterConfig, GroupConfig, TopogenConfig, load_config
from topogen.model import LastPlacements, Topology
from topogen.operators.registry import profile_for
from topogen.plan.group_plan import GroupPlan
from topogen.sources.objects import SNAPSHOT_KIND
from topogen.sources.running import PODS_KEY, pod_entry, profile_keys, running_pods
from topogen.sources.running import read_running_pods as _read
from topogen.sources.yamlio import Document

if TYPE_CHECKING:  # `topogen analyze` never loads the live reader
    from topogen.sources.live import ClusterObjects, LiveSource, PodRecord

__all__ = [
    "pods_said",
    "read_snapshot",
    "running_splits",
    "snapshot_pods",
    "with_running",
]

_FINISHED = ("Succeeded", "Failed")


def with_running(
    cfg: TopogenConfig,
    cluster: ClusterConfig,
    topology: Topology,
    groups: Sequence[GroupConfig],
    last: LastPlacements | None,
) -> tuple[LastPlacements | None, list[str]]:
    """`last` with the domains the cluster's snapshot says the groups' jobs run in, and
    what could not be kept (jobs split already, pods on unknown nodes)."""
    pods = _read(cfg, cluster)
    if not pods:
        return last, []
    found = running_jobs(groups, pods, topology, cluster.domain_label)
    base = last if last is not None else LastPlacements(pods[0].workload.source)
    return replace(base, running=found.jobs, running_groups=found.groups), list(found.warnings)


def running_splits(plan: GroupPlan, last: LastPlacements | None) -> list[str]:
    """Running jobs the plan sends elsewhere without a re-pin of their own: those of a
    pinned group outside its domain, and, spread, those the render does not know (not
    among the workloads) outside the domains of jobs it does not know."""
    if last is None or plan.domain is None or plan.refused:
        return []
    mine = sorted((j, d) for (g, j), d in last.running.items() if g == plan.group.name)
    if not plan.spread:
        return [
            f"job {job} of group {plan.group.name} runs in {domain}, but the group is pinned "
            f"to {plan.domain}: its pods created from now on go to {plan.domain} while the "
            f"others stay in {domain} (a split)"
            for job, domain in mine
            if domain != plan.domain
        ]
    known = {j.job for j in plan.job_domains}
    where = ", ".join(plan.fallback_domains)
    return [
        f"job {job} of group {plan.group.name} runs in {domain}, but the render does not know "
        f"it (not among the workloads): its pods created from now on go to {where} while the "
        f"others stay in {domain} (a split); add its manifest to the workloads to keep it there"
        for job, domain in mine
        if job not in known and domain not in plan.fallback_domains
    ]


def snapshot_pods(
    groups: Sequence[GroupConfig], records: Sequence[PodRecord]
) -> list[dict[str, Any]]:
    """The snapshot's `pods`: the bound, live pods of the groups' jobs, reduced to the
    labels their profiles read and the node; sorted by namespace and name."""
    keys = profile_keys(profile_for(g) for g in groups)
    entries = [
        pod_entry(r.namespace, r.name, r.body["metadata"].get("labels") or {}, r.node, keys)
        for r in records
        if r.node and not r.terminating and r.phase not in _FINISHED
    ]
    doc = {"kind": SNAPSHOT_KIND, PODS_KEY: entries}
    mine = training_pods(groups, running_pods([Document(doc, "the snapshot", 0)]))
    return sorted(
        (e for e in entries if (e["namespace"], e["name"]) in mine),
        key=lambda e: (e["namespace"], e["name"]),
    )


def read_snapshot(
    source: LiveSource, config_path: str | None, cluster: str | None, allow_outside: bool
) -> tuple[ClusterObjects, list[dict[str, Any]] | None]:
    """What `topogen snapshot` writes: the cluster's objects and, with a config, where
    its groups' jobs run (None: no config, no pods read)."""
    from topogen.sources.live import read_cluster, read_cluster_and_pods

    if not config_path:
        return read_cluster(source), None
    cfg = load_config(config_path, allow_outside=allow_outside)
    groups = snapshot_groups(cfg, cluster, source.context)
    namespaces = sorted({ns for g in groups for ns in g.namespaces})
    objects, records = read_cluster_and_pods(source, namespaces)
    return objects, snapshot_pods(groups, records)


def snapshot_groups(
    cfg: TopogenConfig, cluster: str | None, context: str | None
) -> list[GroupConfig]:
    """The groups whose pods a snapshot records: the named cluster's; the only cluster's;
    the one named like the kubeconfig context; else every group of the config."""
    names = [c.name for c in cfg.clusters]
    if cluster is None and len(names) == 1:
        cluster = names[0]
    elif cluster is None and context in names:
        cluster = context
    if cluster is not None:
        return cfg.groups_for(cfg.cluster(cluster).name)
    return list(cfg.groups)


def pods_said(pods: Sequence[dict[str, Any]] | None) -> str:
    """The snapshot's summary line's words on pods."""
    if pods is None:
        return " (no pods: give -c topogen.yaml to record where its groups' jobs run)"
    return f", {len(pods)} bound pod{'s' if len(pods) != 1 else ''} of training jobs"
