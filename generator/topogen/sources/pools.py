"""What the cluster's autoscalers can add, read from the cluster's node sources (files,
snapshots): Karpenter NodePools (karpenter.sh/v1) and Cluster API MachineDeployments,
MachineSets and MachinePools that carry the Cluster Autoscaler's node-group size
annotations, with its scale-from-zero capacity annotations (cluster-autoscaler's
cloudprovider/clusterapi: `capacity.cluster-autoscaler.kubernetes.io/*`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from topogen.errors import InputError, Notice
from topogen.manifest import (
    KubeObject,
    as_list,
    as_map,
    as_str,
    check_fields,
    check_name,
    string_map,
)
from topogen.model import Node, Taint
from topogen.names import check_labels
from topogen.nodepools import KARPENTER, NODEPOOL_LABEL, NODES, InstanceType, NodePool
from topogen.sources.instance_types import node_group
from topogen.sources.label_selectors import read_requirements
from topogen.sources.nodes import read_taints
from topogen.sources.objects import parse_quantity

__all__ = ["CAPI_GROUP", "CAPI_KINDS", "is_pool_object", "read_pools", "reduced_pool_object"]

CAPI_GROUP = "cluster.x-k8s.io"
CAPI_KINDS = ("MachineDeployment", "MachineSet", "MachinePool")
_MIN_SIZE = f"{CAPI_GROUP}/cluster-api-autoscaler-node-group-min-size"
_MAX_SIZE = f"{CAPI_GROUP}/cluster-api-autoscaler-node-group-max-size"
_CAPACITY = "capacity.cluster-autoscaler.kubernetes.io/"
# Cluster API syncs these label domains from a machine template to its node
_MANAGED = ("node-role.kubernetes.io", "node-restriction.kubernetes.io", "node.cluster.x-k8s.io")
_REQUIREMENT_FIELDS = {"key", "operator", "values", "minValues"}


def is_pool_object(obj: KubeObject) -> bool:
    """A NodePool, or a Cluster API object that names itself a node group."""
    if obj.group == "karpenter.sh" and obj.kind == "NodePool":
        return True
    return obj.group == CAPI_GROUP and obj.kind in CAPI_KINDS


def read_pools(
    objects: Iterable[KubeObject],
    nodes: Sequence[Node],
    types: Sequence[InstanceType],
    zone_label: str,
    cluster: str,
) -> tuple[list[NodePool], list[Notice]]:
    """The NodePools and node groups among the objects; notices for what adds nothing."""
    pools: list[NodePool] = []
    notes: list[Notice] = []
    for obj in objects:
        if obj.group == "karpenter.sh" and obj.kind == "NodePool":
            if obj.api_version != "karpenter.sh/v1":
                raise InputError(
                    f"{obj.where()}: {obj.api_version} is not read (karpenter.sh/v1 is)",
                    path=obj.path,
                )
            pool = _nodepool(obj, nodes, types)
            if not pool.instance_types:
                notes.append(
                    Notice(
                        cluster,
                        f"{pool.title}: no instance type of its NodeClass {pool.node_class} is "
                        "declared (clusters[].autoscaling.instanceTypes): topogen counts no "
                        "node it could add",
                    )
                )
            pools.append(pool)
        elif obj.group == CAPI_GROUP and obj.kind in CAPI_KINDS:
            group, note = _capi_group(obj, zone_label)
            if note:
                notes.append(Notice(cluster, note))
            if group is not None:
                pools.append(group)
    return pools, notes


def _nodepool(obj: KubeObject, nodes: Sequence[Node], types: Sequence[InstanceType]) -> NodePool:
    check_name(obj)
    spec = as_map(obj.body.get("spec"), "spec", obj)
    template = as_map(spec.get("template"), "spec.template", obj)
    meta = as_map(template.get("metadata"), "spec.template.metadata", obj)
    labels = string_map(meta.get("labels"), "spec.template.metadata.labels", obj)
    check_labels(labels, f"{obj.where()}: spec.template.metadata.labels", obj.path)
    tspec = as_map(template.get("spec"), "spec.template.spec", obj)
    raw = as_list(tspec.get("requirements"), "spec.template.spec.requirements", obj)
    for i, r in enumerate(raw):
        check_fields(
            as_map(r, f"spec.template.spec.requirements[{i}]", obj),
            _REQUIREMENT_FIELDS,
            f"spec.template.spec.requirements[{i}]",
            obj,
        )
    requirements = read_requirements(
        [{k: v for k, v in r.items() if k != "minValues"} for r in raw],
        "spec.template.spec.requirements",
        obj,
    )
    ref = as_map(tspec.get("nodeClassRef"), "spec.template.spec.nodeClassRef", obj)
    node_class = as_str(ref.get("name"), "spec.template.spec.nodeClassRef.name", obj)
    limits = {
        str(k): parse_quantity(v, f"spec.limits.{k}", obj)
        for k, v in as_map(spec.get("limits"), "spec.limits", obj).items()
    }
    replicas = spec.get("replicas")
    if replicas is not None:  # a static NodePool keeps exactly that many nodes
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise InputError(f"{obj.where()}: spec.replicas must be a count", path=obj.path)
        limits[NODES] = min(limits.get(NODES, Fraction(replicas)), Fraction(replicas))
    weight = spec.get("weight", 0)
    if not isinstance(weight, int) or isinstance(weight, bool):
        raise InputError(f"{obj.where()}: spec.weight must be a number", path=obj.path)
    offered = tuple(t for t in types if t.offered_to(node_class))
    return NodePool(
        KARPENTER,
        obj.name,
        labels,
        read_taints(tspec.get("taints"), "spec.template.spec.taints", obj),
        offered,
        tuple(requirements),
        read_taints(tspec.get("startupTaints"), "spec.template.spec.startupTaints", obj),
        limits,
        _in_use(obj.name, nodes, offered),
        weight,
        node_class,
        obj.path,
    )


def _in_use(name: str, nodes: Sequence[Node], types: Sequence[InstanceType]) -> dict[str, Fraction]:
    """What the NodePool's nodes count against its limits: each at its instance type's
    capacity (as Karpenter counts a node), its allocatable when its type is not declared."""
    capacity = {t.name: t.capacity for t in types}
    used: dict[str, Fraction] = {NODES: Fraction(0)}
    for n in nodes:
        if n.labels.get(NODEPOOL_LABEL) != name:
            continue
        used[NODES] += 1
        counted = capacity.get(n.labels.get("node.kubernetes.io/instance-type", ""), n.allocatable)
        for k, v in counted.items():
            used[k] = used.get(k, Fraction(0)) + v
    return used


def _capi_group(obj: KubeObject, zone_label: str) -> tuple[NodePool | None, str]:
    """A Cluster API scalable resource as the Cluster Autoscaler's clusterapi provider sees
    it (clusterapi_unstructured.go): a node group when it has a max-size annotation; its
    new node from the capacity annotations (cpu and memory at least), the labels Cluster API
    syncs to nodes and the labels/taints annotations."""
    meta = as_map(obj.body.get("metadata"), "metadata", obj)
    notes = string_map(meta.get("annotations"), "metadata.annotations", obj)
    if _MAX_SIZE not in notes:
        return None, ""
    check_name(obj)
    title = f"{obj.where()}"
    max_size = _count(notes[_MAX_SIZE], _MAX_SIZE, obj)
    min_size = _count(notes.get(_MIN_SIZE, "0"), _MIN_SIZE, obj)
    if max_size < min_size or max_size == 0:
        return None, f"{title}: max size {max_size} below min size {min_size}: no node group"
    spec = as_map(obj.body.get("spec"), "spec", obj)
    capacity = _capacity(notes, obj)
    if "cpu" not in capacity or "memory" not in capacity:
        return None, (
            f"{title}: no {_CAPACITY}cpu and memory annotations: topogen cannot tell what "
            "node it adds (its infrastructure template is not read); declare it under "
            "clusters[].autoscaling.nodeGroups"
        )
    template = as_map(spec.get("template"), "spec.template", obj)
    tmeta = as_map(template.get("metadata"), "spec.template.metadata", obj)
    synced = string_map(tmeta.get("labels"), "spec.template.metadata.labels", obj)
    labels = {k: v for k, v in synced.items() if _managed(k)}
    labels.update(_pairs(notes.get(_CAPACITY + "labels", "")))
    check_labels(labels, f"{title}: the node group's labels", obj.path)
    taints = list(
        read_taints(
            as_map(template.get("spec"), "spec.template.spec", obj).get("taints"),
            "spec.template.spec.taints",
            obj,
        )
    )
    for t in _taints(notes.get(_CAPACITY + "taints", ""), obj):
        taints = [x for x in taints if (x.key, x.effect) != (t.key, t.effect)] + [t]
    replicas = spec.get("replicas", min_size)
    size = replicas if isinstance(replicas, int) and not isinstance(replicas, bool) else min_size
    name = f"{obj.namespace or obj.default_namespace}/{obj.name}"
    group = node_group(name, labels, tuple(taints), capacity, max_size, size, zone_label, title)
    note = ""
    if not group.instance_types[0].offerings:
        note = f"{title}: its new nodes carry no {zone_label} label: it adds capacity to no zone"
    return group, note


def _capacity(notes: Mapping[str, str], obj: KubeObject) -> dict[str, Fraction]:
    out: dict[str, Fraction] = {}
    for key, resource in (
        ("cpu", "cpu"),
        ("memory", "memory"),
        ("ephemeral-disk", "ephemeral-storage"),
        ("maxPods", "pods"),
    ):
        if _CAPACITY + key in notes:
            out[resource] = parse_quantity(notes[_CAPACITY + key], _CAPACITY + key, obj)
    gpu_type, gpus = notes.get(_CAPACITY + "gpu-type"), notes.get(_CAPACITY + "gpu-count")
    if gpu_type and gpus:
        out[gpu_type] = parse_quantity(gpus, _CAPACITY + "gpu-count", obj)
    return out


def _count(text: str, what: str, obj: KubeObject) -> int:
    if not text.isdigit():
        raise InputError(f"{obj.where()}: annotation {what} must be a count", path=obj.path)
    return int(text)


def _managed(key: str) -> bool:
    domain = key.split("/")[0] if "/" in key else ""
    return any(domain == d or domain.endswith("." + d) for d in _MANAGED[1:]) or (
        domain == _MANAGED[0]
    )


def _pairs(text: str) -> dict[str, str]:
    """`k1=v1,k2=v2`, as the autoscaler splits it (an entry without `=` is skipped)."""
    out = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if sep:
            out[key] = value
    return out


def _taints(text: str, obj: KubeObject) -> list[Taint]:
    """`k1=v1:NoSchedule,k2:NoExecute` (cluster-autoscaler's parseTaint; a malformed entry
    is skipped, as it is there)."""
    out = []
    for item in filter(None, text.split(",")):
        head, sep, effect = item.partition(":")
        key, _, value = head.partition("=")
        if sep and key and effect in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            out.append(Taint(key, value, effect))
    return out


def reduced_pool_object(out: dict[str, Any], body: Mapping[str, Any]) -> dict[str, Any]:
    """A live NodePool or Cluster API object (`out`: its apiVersion, kind and name) with
    what topogen reads of it: a NodePool's spec; of a Cluster API object the autoscaler's
    annotations, its replicas and its template's labels and taints."""
    if out["kind"] == "NodePool":
        if body.get("spec") is not None:
            out["spec"] = body["spec"]
        return out
    meta = body.get("metadata") or {}
    notes = {
        k: v
        for k, v in (meta.get("annotations") or {}).items()
        if k in (_MIN_SIZE, _MAX_SIZE) or k.startswith(_CAPACITY)
    }
    if notes:
        out["metadata"]["annotations"] = notes
    spec = body.get("spec") or {}
    template = spec.get("template") or {}
    kept: dict[str, Any] = {}
    labels = (template.get("metadata") or {}).get("labels")
    if labels:
        kept["metadata"] = {"labels": dict(labels)}
    taints = (template.get("spec") or {}).get("taints")
    if taints:
        kept["spec"] = {"taints": list(taints)}
    reduced: dict[str, Any] = {}
    if spec.get("replicas") is not None:
        reduced["replicas"] = spec["replicas"]
    if kept:
        reduced["template"] = kept
    if reduced:
        out["spec"] = reduced
    return out
