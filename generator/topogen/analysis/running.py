"""Where each known job runs, from the bound pods a snapshot records (model.RunningPod).

A job whose bound pods all sit in one domain (the zone, or the cluster's domain label
value, as the group co-locates) runs there: the plan keeps it there, since a replaced
pod sent elsewhere would split it from the pods that stay. A job already split across
domains keeps nothing (the audit's SPLIT_ZONES): that is said, once per job.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from topogen.analysis.groups import find_groups
from topogen.config import GroupConfig
from topogen.model import NO_ZONE_PREFIX, Node, RunningPod, Topology

__all__ = ["RunningJobs", "running_jobs", "training_pods"]

SPLIT = "SPLIT_ZONES"


@dataclass(frozen=True)
class RunningJobs:
    jobs: dict[tuple[str, str], str]  # (group, ns/job) -> the one domain its pods run in
    # group -> where most of its running jobs' pods run (a pinned group: the fewest split)
    groups: dict[str, str]
    warnings: tuple[str, ...] = ()


def training_pods(
    groups: Sequence[GroupConfig], pods: Sequence[RunningPod]
) -> frozenset[tuple[str, str]]:
    """(namespace, name) of the pods a group's profile takes for one of its jobs'."""
    workloads = [p.workload for p in pods]
    return frozenset(
        (w.namespace, w.name)
        for g in groups
        for job in find_groups(g, workloads)
        for role in job.roles
        for w in role.workloads
    )


def running_jobs(
    groups: Sequence[GroupConfig],
    pods: Sequence[RunningPod],
    topology: Topology,
    domain_label: str | None,
) -> RunningJobs:
    """The domain each job of the groups runs in (see the module docstring)."""
    if not pods:
        return RunningJobs({}, {})
    nodes = {n.name: n for n in topology.nodes}
    node_of = {(p.workload.namespace, p.workload.name): p.node for p in pods}
    workloads = [p.workload for p in pods]
    jobs: dict[tuple[str, str], str] = {}
    most: dict[str, str] = {}
    warnings: list[str] = []
    for g in groups:
        key = topology.zone_label if g.colocate == "zone" or not domain_label else domain_label
        seen: Counter[str] = Counter()
        for job in find_groups(g, workloads):
            name = f"{job.namespace}/{job.job}"
            where = {
                _domain(nodes.get(node_of[(w.namespace, w.name)]), key)
                for r in job.roles
                for w in r.workloads
            }
            if None in where:
                warnings.append(
                    f"job {name} of group {g.name} has pods on nodes the snapshot does not "
                    f"list or that have no {key} label: where it runs is not known, so no "
                    "domain is kept for it"
                )
            elif len(where) > 1:
                warnings.append(
                    f"job {name} of group {g.name} runs split across "
                    f"{', '.join(sorted(str(d) for d in where))} ({SPLIT}): no domain is kept "
                    "for it; its pods created from now on go where the plan puts it"
                )
            else:
                (domain,) = where
                assert domain is not None
                jobs[(g.name, name)] = domain
                seen[domain] += sum(len(r.workloads) for r in job.roles)
        if seen:
            most[g.name] = min(seen, key=lambda d: (-seen[d], d))
    return RunningJobs(jobs, most, tuple(warnings))


def _domain(node: Node | None, key: str) -> str | None:
    """The node's domain on the co-location key (its zone label or the domain label)."""
    if node is None or node.zone.startswith(NO_ZONE_PREFIX):
        return None
    return node.labels.get(key)
