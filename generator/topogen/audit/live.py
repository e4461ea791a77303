"""`topogen audit` against a live cluster: read it (sources.live), build the model, audit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from topogen.analysis import PolicyIndex
from topogen.audit.core import AuditInputs, AuditPod, AuditReport, audit
from topogen.audit.prometheus import query_prometheus
from topogen.config import ClusterConfig, GroupConfig, TopogenConfig
from topogen.errors import InputError
from topogen.manifest import KubeObject
from topogen.model import CiliumSettings, Topology
from topogen.sources.cilium_config import read_cilium_config
from topogen.sources.live import (
    ClusterObjects,
    LiveError,
    LiveSource,
    PodRecord,
    read_cluster_and_pods,
    snapshot_document,
)
from topogen.sources.nodes import read_nodes
from topogen.sources.objects import flatten
from topogen.sources.policies import read_policies
from topogen.sources.workloads import read_namespaces, read_workloads
from topogen.sources.yamlio import Document

__all__ = ["audit_live", "gpu_query", "pick_cluster"]

LIVE_PATH = "<live cluster>"


def pick_cluster(cfg: TopogenConfig, name: str | None, context: str | None) -> ClusterConfig:
    """The cluster of topogen.yaml the live context stands for."""
    if name:
        return cfg.cluster(name)
    if len(cfg.clusters) == 1:
        return cfg.clusters[0]
    by_context = [c for c in cfg.clusters if context and c.name == context]
    if by_context:
        return by_context[0]
    names = ", ".join(c.name for c in cfg.clusters)
    raise InputError(
        f"topogen.yaml has several clusters ({names})", path=cfg.path, hint="pass --cluster NAME"
    )


def gpu_query(metric: str, namespaces: Sequence[str]) -> str:
    """Mean GPU utilisation per pod; DCGM's pod labels may arrive as exported_* after relabeling."""
    regex = "|".join(sorted(set(namespaces)))  # namespace names are DNS labels: no regex syntax
    by = "namespace, pod, exported_namespace, exported_pod"
    return (
        f'avg by ({by}) ({metric}{{namespace=~"{regex}"}} '
        f'or {metric}{{exported_namespace=~"{regex}"}})'
    )


def audit_live(
    cfg: TopogenConfig,
    source: LiveSource,
    cluster: str | None = None,
    prometheus: str | None = None,
) -> AuditReport:
    """Read the live cluster (and Prometheus when given) and audit the configured groups."""
    ccfg = pick_cluster(cfg, cluster, source.context)
    groups = cfg.groups_for(ccfg.name)
    namespaces = sorted({ns for g in groups for ns in g.namespaces})
    objects, records = read_cluster_and_pods(source, namespaces)
    gpu = None
    if prometheus:
        samples = query_prometheus(
            prometheus,
            gpu_query(cfg.monitoring.metrics.gpu_utilisation, namespaces),
            source.timeout,
        )
        gpu = gpu_by_pod(samples)
    inputs = build_inputs(
        ccfg,
        objects,
        records,
        groups=groups,
        gpu=gpu,
        idle_threshold=cfg.monitoring.idle_gpu_utilisation,
    )
    report = audit(inputs)
    return replace(report, warnings=objects.warnings + report.warnings)


def gpu_by_pod(samples: Sequence[tuple[Mapping[str, str], float]]) -> dict[tuple[str, str], float]:
    sums: dict[tuple[str, str], list[float]] = {}
    for labels, value in samples:
        ns = labels.get("exported_namespace") or labels.get("namespace", "")
        pod = labels.get("exported_pod") or labels.get("pod", "")
        if ns and pod:
            sums.setdefault((ns, pod), []).append(value)
    return {k: sum(v) / len(v) for k, v in sums.items()}


def _settings(cluster: ClusterConfig, kube: Sequence[KubeObject]) -> CiliumSettings:
    """The agent's settings: the live cluster's cilium-config, topogen.yaml's keys over it."""
    found = read_cilium_config(kube)
    return cluster.cilium.settings(found.values if found else None)


def build_inputs(
    cluster: ClusterConfig,
    objects: ClusterObjects,
    records: Sequence[PodRecord],
    *,
    groups: Sequence[GroupConfig],
    gpu: Mapping[tuple[str, str], float] | None,
    idle_threshold: float,
) -> AuditInputs:
    """Model objects from what was read, exactly as files would give them."""
    kube = list(flatten([Document(snapshot_document(objects), LIVE_PATH, 0)]))
    nodes = read_nodes(kube, cluster.zone_label)
    if not nodes:
        raise LiveError("the cluster has no Nodes")
    namespaces = {n.name: n for n in read_namespaces(kube)}
    topology = Topology(
        nodes=tuple(sorted(nodes, key=lambda n: n.name)),
        zone_label=cluster.zone_label,
        gpu_resources=tuple(cluster.gpu_resources),
        gpu_node_selector=dict(cluster.gpu_node_selector),
    )
    pods = []
    for r in records:
        obj = KubeObject("v1", "Pod", r.namespace, r.name, r.body, f"{LIVE_PATH} pod")
        (workload,) = read_workloads([obj], [])
        pods.append(AuditPod(r, workload))
    return AuditInputs(
        cluster=cluster.name,
        topology=topology,
        index=PolicyIndex(read_policies(kube, _settings(cluster, kube)), namespaces),
        namespaces=namespaces,
        groups=tuple(groups),
        pods=pods,
        gpu_utilisation=gpu,
        idle_threshold=idle_threshold,
        domain_label=cluster.domain_label,
    )
