"""Read everything one cluster of topogen.yaml names into model objects."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from topogen.errors import InputError, Notice
from topogen.kueue.objects import KueueSetup
from topogen.manifest import KubeObject
from topogen.model import (
    NO_ZONE_PREFIX,
    Namespace,
    Node,
    PolicySet,
    Service,
    Topology,
    Workload,
)
from topogen.sources.api_rules import STRICT_CIDRS_SINCE
from topogen.sources.cilium_config import ClusterCilium, is_cilium_config, read_cilium_config
from topogen.sources.kueue import is_kueue_object, read_kueue
from topogen.sources.nodes import read_nodes
from topogen.sources.objects import flatten
from topogen.sources.policies import read_policies, read_services
from topogen.sources.workloads import read_namespaces, read_workloads
from topogen.sources.yamlio import expand_paths, iter_documents
from topogen.yamltext import display_path

if TYPE_CHECKING:  # the config model (pydantic) is not needed to read files
    from topogen.config import ClusterConfig, TopogenConfig
    from topogen.nodepools import NodePool

__all__ = [
    "ClusterInputs",
    "ClusterSources",
    "WorkloadInputs",
    "finish_cluster_inputs",
    "load_cluster_inputs",
    "load_workload_inputs",
    "read_cluster_policies",
    "read_cluster_sources",
    "read_objects",
]


@dataclass(frozen=True)
class ClusterInputs:
    name: str
    topology: Topology
    policies: PolicySet
    namespaces: dict[str, Namespace]
    skipped: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()  # e.g. nodes without the zone label, once each
    cilium: ClusterCilium | None = None  # the cluster's cilium-config, when given
    # what its autoscalers can add: Karpenter NodePools and Cluster Autoscaler node groups
    pools: tuple[NodePool, ...] = ()
    kueue: KueueSetup = field(default_factory=KueueSetup)  # its Kueue objects, if any


@dataclass(frozen=True)
class WorkloadInputs:
    workloads: tuple[Workload, ...]
    namespaces: dict[str, Namespace]
    skipped: tuple[str, ...] = field(default=())
    objects: tuple[KubeObject, ...] = field(default=())  # as read, for the workload patches
    services: tuple[Service, ...] = field(default=())  # for toServices rules
    warnings: tuple[str, ...] = field(default=())  # e.g. a TrainJob's runtime not found


def read_objects(
    paths: list[str],
    base: Path,
    what: str,
    cfg: TopogenConfig | None = None,
    default_namespace: str | None = None,
) -> list[KubeObject]:
    """The objects of `paths` (files, or folders of YAML files); with `cfg`, confined to
    its root (see load_config). Namespaced ones without a namespace apply in
    `default_namespace` (else the config's defaultNamespace, else default)."""
    root, source = (cfg.root, cfg.path) if cfg is not None else (None, None)
    ns = default_namespace or (cfg.default_namespace if cfg is not None else "default")
    files = expand_paths(paths, base=base, what=what, root=root, source=source)
    return list(flatten(iter_documents(files), ns))


def load_cluster_inputs(
    cfg: TopogenConfig,
    cluster: ClusterConfig,
    services: Sequence[Service] = (),
    workload_objects: Sequence[KubeObject] = (),
) -> ClusterInputs:
    """`services`: Services read elsewhere (beside the workloads), for toServices rules;
    `workload_objects`: the objects read beside the workloads, for the Kueue objects a
    GitOps repository holds (the cluster's own sources first: a snapshot's)."""
    return finish_cluster_inputs(
        cfg, read_cluster_sources(cfg, cluster), services, workload_objects
    )


@dataclass(frozen=True)
class ClusterSources:
    """What load_cluster_inputs reads before it needs anything read beside the workloads:
    the nodes, the autoscalers' pools, the policy objects and the agent's settings."""

    cluster: ClusterConfig
    strict: bool  # the API server's CIDR rules of the cluster's Kubernetes version
    nodes: list[Node]
    node_objs: list[KubeObject]  # the objects of the node sources, pools aside
    skipped: list[str]
    policy_objs: list[KubeObject]
    pools: list[NodePool]
    pool_notes: list[Notice]
    cilium: ClusterCilium | None


def read_cluster_sources(cfg: TopogenConfig, cluster: ClusterConfig) -> ClusterSources:
    """The first part of load_cluster_inputs (the same checks, in the same order)."""
    from topogen.sources.pools import is_pool_object  # autoscalers: only with a config

    base = cfg.base_dir
    # the API server's CIDR rules of the cluster's Kubernetes version
    strict = tuple(map(int, cluster.kubernetes_version.split("."))) >= STRICT_CIDRS_SINCE
    node_objs = read_objects(cluster.nodes, base, f"clusters.{cluster.name}.nodes", cfg)
    nodes = read_nodes(node_objs, cluster.zone_label, strict_cidrs=strict)
    if not nodes:
        shown = ", ".join(cluster.nodes)
        raise InputError(
            f"no Node objects found in {shown}",
            path=cfg.path,
            hint="point clusters[].nodes at `kubectl get nodes -o yaml` output "
            "or a topogen snapshot",
        )
    pool_objs = [o for o in node_objs if is_pool_object(o)]
    node_objs = [o for o in node_objs if not is_pool_object(o)]
    skipped = [
        f"{o.path}: {o.where()} is not a Node"
        for o in node_objs
        if o.kind != "Node" and not is_cilium_config(o) and not is_kueue_object(o)
    ]
    # a snapshot may carry the policies too: read them from the node sources as well
    policy_objs = read_objects(
        cluster.network_policies, base, f"clusters.{cluster.name}.networkPolicies", cfg
    )
    seen = {(o.group, o.kind, o.applied_namespace, o.name) for o in policy_objs}
    policy_objs += [
        o
        for o in node_objs
        if o.kind != "Node" and (o.group, o.kind, o.applied_namespace, o.name) not in seen
    ]
    pools, pool_notes = _pools(cfg, cluster, pool_objs, nodes)
    # the agent's settings: its cilium-config among the cluster's files (topogen.yaml's keys
    # override them)
    cilium = read_cilium_config(policy_objs)
    return ClusterSources(
        cluster, strict, nodes, node_objs, skipped, policy_objs, pools, pool_notes, cilium
    )


def read_cluster_policies(src: ClusterSources, services: Sequence[Service] = ()) -> PolicySet:
    """The cluster's policies (toServices rules read `services`)."""
    cilium = src.cilium
    return read_policies(
        src.policy_objs,
        src.cluster.cilium.settings(cilium.values if cilium else None),
        services,
        strict_cidrs=src.strict,
    )


def finish_cluster_inputs(
    cfg: TopogenConfig,
    src: ClusterSources,
    services: Sequence[Service] = (),
    workload_objects: Sequence[KubeObject] = (),
    policies: PolicySet | None = None,
) -> ClusterInputs:
    """The rest of load_cluster_inputs: the policies (toServices rules read `services`;
    `policies`: read already, with these services), the namespaces, the topology and the
    Kueue objects."""
    cluster, cilium = src.cluster, src.cilium
    if policies is None:
        policies = read_cluster_policies(src, services)
    ns_objs = read_objects(
        cluster.namespaces, cfg.base_dir, f"clusters.{cluster.name}.namespaces", cfg
    )
    node_objs, policy_objs = src.node_objs, src.policy_objs
    namespaces = {n.name: n for n in read_namespaces(ns_objs + node_objs + policy_objs)}
    topology = Topology(
        nodes=tuple(sorted(src.nodes, key=lambda n: n.name)),
        zone_label=cluster.zone_label,
        gpu_resources=tuple(cluster.gpu_resources),
        gpu_node_selector=dict(cluster.gpu_node_selector),
    )
    kueue = read_kueue([*node_objs, *policy_objs, *ns_objs, *workload_objects])
    return ClusterInputs(
        cluster.name,
        topology,
        policies,
        namespaces,
        tuple(src.skipped),
        (*_zoneless(cluster.name, cluster.zone_label, topology), *src.pool_notes),
        cilium=cilium,
        pools=tuple(src.pools),
        kueue=kueue,
    )


def _zoneless(cluster: str, zone_label: str, topology: Topology) -> tuple[Notice, ...]:
    """One note for the nodes without the zone label: each is read as a zone of its own
    (the scheduler puts them in no zone's domain), never a domain a group is pinned to."""
    names = [n.name for n in topology.nodes if n.zone.startswith(NO_ZONE_PREFIX)]
    if not names:
        return ()
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    what = f"node {shown} has" if len(names) == 1 else f"{len(names)} nodes ({shown}) have"
    return (
        Notice(
            cluster,
            f"{what} no {zone_label} label: each counts as a zone of its own, where no "
            "group is pinned",
        ),
    )


def _pools(
    cfg: TopogenConfig, cluster: ClusterConfig, objects: list[KubeObject], nodes: list[Node]
) -> tuple[list[NodePool], list[Notice]]:
    """The cluster's NodePools and node groups (read, or declared under autoscaling)."""
    from topogen.sources.instance_types import declared_node_groups, instance_types
    from topogen.sources.pools import read_pools

    what = f"clusters.{cluster.name}.autoscaling"
    auto = cluster.autoscaling
    types = instance_types(auto, what, cfg.path, cfg.base_dir, cfg.root)
    pools, notes = read_pools(objects, nodes, types, cluster.zone_label, cluster.name)
    pools += declared_node_groups(auto.node_groups, nodes, cluster.zone_label, what, cfg.path)
    names = [p.title for p in pools]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InputError(f"{twice[0]} is given twice for cluster {cluster.name}", path=cfg.path)
    return pools, notes


def load_workload_inputs(
    cfg: TopogenConfig, paths: list[str] | None = None, base: Path | None = None
) -> WorkloadInputs:
    paths = cfg.workloads if paths is None else paths
    objs = read_objects(paths, base or cfg.base_dir, "workloads", cfg)
    skipped: list[str] = []
    warnings: list[str] = []
    workloads = read_workloads(objs, skipped, warnings)
    namespaces = {n.name: n for n in read_namespaces(objs)}
    return WorkloadInputs(
        tuple(workloads),
        namespaces,
        tuple(skipped),
        tuple(objs),
        tuple(read_services(objs)),
        tuple(warnings),
    )


def shown(path: Path) -> str:
    return display_path(path)
