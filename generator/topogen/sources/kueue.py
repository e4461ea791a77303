"""Kueue's queueing objects (kueue.x-k8s.io Topology, ResourceFlavor, ClusterQueue,
LocalQueue) into a KueueSetup: from a GitOps repository, a snapshot or the live cluster.

Only the fields that decide where Kueue v0.17.0 puts a queued job's pods are read: a
Topology's levels, a flavor's nodeLabels, tolerations and topologyName, a ClusterQueue's
flavors in the order its resource groups list them, a LocalQueue's ClusterQueue."""

from __future__ import annotations

from collections.abc import Iterable

from topogen.errors import InputError
from topogen.kueue.objects import (
    ClusterQueue,
    KueueSetup,
    KueueTopology,
    LocalQueue,
    ResourceFlavor,
)
from topogen.manifest import KubeObject, as_list, as_map, as_str, check_name, string_map
from topogen.names import check_labels
from topogen.sources.podspec import parse_tolerations

__all__ = ["KUEUE_GROUP", "KUEUE_KINDS", "is_kueue_object", "read_kueue"]

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_KINDS = ("Topology", "ResourceFlavor", "ClusterQueue", "LocalQueue")


def is_kueue_object(obj: KubeObject) -> bool:
    return obj.group == KUEUE_GROUP and obj.kind in KUEUE_KINDS


def read_kueue(objects: Iterable[KubeObject]) -> KueueSetup:
    """The Kueue objects among `objects` (the first of a name wins: inputs repeat them)."""
    topologies: dict[str, KueueTopology] = {}
    flavors: dict[str, ResourceFlavor] = {}
    queues: dict[str, ClusterQueue] = {}
    local: dict[tuple[str, str], LocalQueue] = {}
    for obj in objects:
        if not is_kueue_object(obj):
            continue
        check_name(obj)
        spec = as_map(obj.body.get("spec"), "spec", obj)
        if obj.kind == "Topology":
            topologies.setdefault(obj.name, _topology(obj, spec))
        elif obj.kind == "ResourceFlavor":
            flavors.setdefault(obj.name, _flavor(obj, spec))
        elif obj.kind == "ClusterQueue":
            queues.setdefault(obj.name, _cluster_queue(obj, spec))
        else:
            cq = as_str(spec.get("clusterQueue"), "spec.clusterQueue", obj)
            if not cq:
                raise InputError(f"{obj.where()}: spec.clusterQueue is required", path=obj.path)
            ns = obj.applied_namespace
            local.setdefault((ns, obj.name), LocalQueue(ns, obj.name, cq))
    return KueueSetup(topologies, flavors, queues, local)


def _topology(obj: KubeObject, spec: object) -> KueueTopology:
    levels = []
    for i, level in enumerate(as_list(as_map(spec, "spec", obj).get("levels"), "spec.levels", obj)):
        label = as_str(as_map(level, f"spec.levels[{i}]", obj).get("nodeLabel"), "nodeLabel", obj)
        if not label:
            raise InputError(
                f"{obj.where()}: spec.levels[{i}].nodeLabel is required", path=obj.path
            )
        levels.append(label)
    if not levels:
        raise InputError(f"{obj.where()}: spec.levels is empty", path=obj.path)
    return KueueTopology(obj.name, tuple(levels))


def _flavor(obj: KubeObject, spec: object) -> ResourceFlavor:
    s = as_map(spec, "spec", obj)
    labels = string_map(s.get("nodeLabels"), "spec.nodeLabels", obj)
    check_labels(labels, f"{obj.where()}: spec.nodeLabels", obj.path)
    return ResourceFlavor(
        obj.name,
        labels,
        parse_tolerations(s, "spec", obj),
        as_str(s.get("topologyName"), "spec.topologyName", obj),
    )


def _cluster_queue(obj: KubeObject, spec: object) -> ClusterQueue:
    flavors: list[str] = []
    groups = as_list(as_map(spec, "spec", obj).get("resourceGroups"), "spec.resourceGroups", obj)
    for i, group in enumerate(groups):
        at = f"spec.resourceGroups[{i}]"
        for j, flavor in enumerate(as_list(as_map(group, at, obj).get("flavors"), at, obj)):
            name = as_str(as_map(flavor, f"{at}.flavors[{j}]", obj).get("name"), "name", obj)
            if name and name not in flavors:
                flavors.append(name)
    return ClusterQueue(obj.name, tuple(flavors))
