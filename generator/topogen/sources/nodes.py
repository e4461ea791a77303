"""Nodes: labels, taints, allocatable, cordon state, pod CIDRs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
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
from topogen.sources.api_rules import (
    canonical_ipv4_cidr,
    cidr_problem,
    parse_network,
    quantity_problem,
)
from topogen.sources.objects import parse_quantity

__all__ = ["node_from_object", "read_nodes", "read_taints"]

_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def read_nodes(
    objects: Iterable[KubeObject], zone_label: str, *, strict_cidrs: bool = True
) -> list[Node]:
    """The v1 Nodes among `objects`; `strict_cidrs`: podCIDRs as Kubernetes 1.36 and later
    validate them (api_rules.cidr_problem)."""
    return [
        node_from_object(o, zone_label, strict_cidrs=strict_cidrs)
        for o in objects
        if o.kind == "Node" and o.api_version == "v1"
    ]


def node_from_object(obj: KubeObject, zone_label: str, *, strict_cidrs: bool = True) -> Node:
    check_name(obj)
    labels = labels_of(obj)
    spec = as_map(obj.body.get("spec"), "spec", obj)
    status = as_map(obj.body.get("status"), "status", obj)
    taints = read_taints(spec.get("taints"), "spec.taints", obj)
    return Node(
        name=obj.name,
        labels=labels,
        taints=taints,
        allocatable=_allocatable(status.get("allocatable"), obj),
        unschedulable=as_bool(spec.get("unschedulable"), "spec.unschedulable", obj),
        pod_cidrs=_pod_cidrs(spec, obj, strict_cidrs),
        zone=labels.get(zone_label) or f"{NO_ZONE_PREFIX}{obj.name}",
    )


def _allocatable(raw: Any, obj: KubeObject) -> dict[str, Fraction]:
    """status.allocatable, each a quantity checked as the API server checks it. The nodes
    of a pool have the same map: read once, copied for each node."""
    try:
        key = tuple(raw.items()) if type(raw) is dict else None
        hit = _ALLOCATABLES.get(key) if key is not None else None
    except TypeError:  # a value that is no scalar: the error is told below
        key = hit = None
    if hit is not None:
        return dict(hit)
    allocatable = {}
    for k, v in as_map(raw, "status.allocatable", obj).items():
        quantity = parse_quantity(v, f"status.allocatable.{k}", obj)
        problem = quantity_problem(str(k), quantity)
        if problem:
            raise InputError(
                f"{obj.where()}: status.allocatable.{k}: {problem}, got {v!r}", path=obj.path
            )
        allocatable[str(k)] = quantity
    # kept only where every name and value is a string: an equal key then holds the same
    # strings (1, 1.0 and True are equal, and True is no quantity)
    if (
        key is not None
        and len(_ALLOCATABLES) < 1_000
        and all(type(k) is str and type(v) is str for k, v in key)
    ):
        _ALLOCATABLES[key] = allocatable
    return dict(allocatable)


# status.allocatable's items -> the map read from them (a fleet has a few hundred)
_ALLOCATABLES: dict[tuple[tuple[Any, Any], ...], dict[str, Fraction]] = {}


def _pod_cidrs(spec: Mapping[str, Any], obj: KubeObject, strict: bool) -> tuple[str, ...]:
    """spec.podCIDRs (else spec.podCIDR), each a CIDR, at most one per IP family."""
    field = "spec.podCIDRs"
    cidrs = as_list(spec.get("podCIDRs"), field, obj)
    if not cidrs and spec.get("podCIDR"):
        field, cidrs = "spec.podCIDR", [spec["podCIDR"]]
    families = []
    for i, c in enumerate(cidrs):
        if isinstance(c, str) and canonical_ipv4_cidr(c):
            families.append(4)  # taken by cidr_problem, strict or not
            continue
        problem = cidr_problem(c, strict=strict) if isinstance(c, str) else "must be a string"
        if problem:
            raise InputError(f"{obj.where()}: {field}[{i}] {c!r}: {problem}", path=obj.path)
        parsed = parse_network(c)
        families.append(parsed[0].version if parsed else 0)
    if len(cidrs) > 2 or len(set(families)) != len(families):
        raise InputError(
            f"{obj.where()}: {field}: may specify no more than one CIDR for each IP family",
            path=obj.path,
        )
    return tuple(cidrs)


def read_taints(raw: Any, what: str, obj: KubeObject) -> tuple[Taint, ...]:
    """A list of taints (a Node's spec.taints, a NodePool template's taints), checked."""
    taints: list[Taint] = []
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
        if any(x.key == t["key"] and x.effect == effect for x in taints):
            raise InputError(
                f"{obj.where()}: {what}[{i}]: taints must be unique by key and effect pair "
                f"({t['key']}:{effect} again)",
                path=obj.path,
            )
        taints.append(Taint(t["key"], t.get("value", ""), effect))
    return tuple(taints)
