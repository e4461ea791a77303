"""Nodes: labels, taints, allocatable, cordon state, pod CIDRs."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from topogen.errors import InputError
from topogen.manifest import (
    KubeObject,
    as_bool,
    as_list,
    as_map,
    check_name,
    labels_of,
    string_map,
)
from topogen.model import NO_ZONE_PREFIX, Node, Taint
from topogen.names import check_label_key, check_label_value
from topogen.sources.objects import parse_quantity

__all__ = ["node_from_object", "read_nodes", "read_taints"]

_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def read_nodes(objects: Iterable[KubeObject], zone_label: str) -> list[Node]:
    return [
        node_from_object(o, zone_label)
        for o in objects
        if o.kind == "Node" and o.api_version == "v1"
    ]


def node_from_object(obj: KubeObject, zone_label: str) -> Node:
    check_name(obj)
    labels = labels_of(obj)
    spec = as_map(obj.body.get("spec"), "spec", obj)
    status = as_map(obj.body.get("status"), "status", obj)
    taints = read_taints(spec.get("taints"), "spec.taints", obj)
    allocatable = {
        str(k): parse_quantity(v, f"status.allocatable.{k}", obj)
        for k, v in as_map(status.get("allocatable"), "status.allocatable", obj).items()
    }
    cidrs = [str(c) for c in as_list(spec.get("podCIDRs"), "spec.podCIDRs", obj)]
    if not cidrs and spec.get("podCIDR"):
        cidrs = [str(spec["podCIDR"])]
    zone = labels.get(zone_label) or f"{NO_ZONE_PREFIX}{obj.name}"
    return Node(
        name=obj.name,
        labels=labels,
        taints=taints,
        allocatable=allocatable,
        unschedulable=as_bool(spec.get("unschedulable"), "spec.unschedulable", obj),
        pod_cidrs=tuple(cidrs),
        zone=zone,
    )


def read_taints(raw: Any, what: str, obj: KubeObject) -> tuple[Taint, ...]:
    """A list of taints (a Node's spec.taints, a NodePool template's taints), checked."""
    taints = []
    for i, item in enumerate(as_list(raw, what, obj)):
        t = string_map(item, f"{what}[{i}]", obj)
        effect = t.get("effect", "")
        if "key" not in t or effect not in _EFFECTS:
            raise InputError(
                f"{obj.where()}: {what}[{i}] needs a key and an effect ({', '.join(_EFFECTS)})",
                path=obj.path,
            )
        check_label_key(t["key"], f"{obj.where()}: {what}[{i}].key", obj.path)
        check_label_value(t.get("value", ""), f"{obj.where()}: {what}[{i}].value", obj.path)
        taints.append(Taint(t["key"], t.get("value", ""), effect))
    return tuple(taints)
