"""What topogen.yaml declares about autoscaling (`clusters[].autoscaling`): the instance
types behind Karpenter's NodeClasses, inline or from files (a YAML list of the same
entries, or Karpenter's KWOK provider's instance-types JSON, read as that provider reads
it), and Cluster Autoscaler node groups."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from topogen.config import InstanceTypeConfig, NodeGroupConfig, checked_entry
from topogen.errors import InputError
from topogen.model import NO_ZONE_PREFIX, Taint
from topogen.nodepools import (
    ARCH_LABEL,
    CAPACITY_TYPE_LABEL,
    NODE_GROUP,
    NODES,
    OS_LABEL,
    InstanceType,
    NodePool,
    Offering,
)
from topogen.sources.api_rules import quantity_problem
from topogen.sources.objects import quantity_of
from topogen.sources.yamlio import expand_paths, iter_documents
from topogen.yamltext import display_path

if TYPE_CHECKING:
    from topogen.config import AutoscalingConfig
    from topogen.model import Node

__all__ = [
    "DEFAULT_LABELS",
    "declared_node_groups",
    "instance_types",
    "node_group",
    "quantities",
]

DEFAULT_LABELS = {ARCH_LABEL: "amd64", OS_LABEL: "linux"}
DEFAULT_PODS = Fraction(110)  # Kubernetes' default pods per node (KWOK, Cluster API, kubelet)
# what Karpenter's KWOK provider reserves of each instance type (kube-reserved)
_KWOK_RESERVED = {"cpu": Fraction(1, 10), "memory": Fraction(10 * 2**20)}
_ZONE = "topology.kubernetes.io/zone"  # what Karpenter's offerings name zones by


def quantities(raw: Mapping[str, Any], what: str, path: str) -> dict[str, Fraction]:
    """resource -> quantity; an entry that is no Kubernetes quantity, or none the node it
    describes may have (negative, a fraction of a GPU: api_rules), is an error."""
    out: dict[str, Fraction] = {}
    for key, value in raw.items():
        if isinstance(value, int) and not isinstance(value, bool):
            q: Fraction | None = Fraction(value)
        else:
            q = quantity_of(str(value)) if isinstance(value, str | float) else None
        if q is None:
            raise InputError(f"{what}.{key} is not a quantity: {value!r}", path=path)
        problem = quantity_problem(str(key), q)
        if problem:
            raise InputError(f"{what}.{key}: {problem}, got {value!r}", path=path)
        out[str(key)] = q
    return out


def instance_types(
    cfg: AutoscalingConfig, what: str, config_path: str, base: Path, root: Path | None
) -> list[InstanceType]:
    """The declared instance types: the inline ones, then each file's, in order."""
    out = [
        _declared(t, f"{what}.instanceTypes[{i}]", config_path)
        for i, t in enumerate(cfg.instance_types)
    ]
    files = expand_paths(
        cfg.instance_type_files,
        base=base,
        what=f"{what}.instanceTypeFiles",
        root=root,
        source=config_path,
    )
    for doc in iter_documents(files):
        entries = doc.data if isinstance(doc.data, list) else None
        if entries is None or not all(isinstance(e, dict) for e in entries):
            raise InputError(
                "an instance-types file holds a list of instance types",
                path=doc.path,
                hint="Karpenter's KWOK instance-types JSON, or a YAML list of "
                "clusters[].autoscaling.instanceTypes entries",
            )
        for i, entry in enumerate(entries):
            where = f"[{i}]"
            if "offerings" in entry:
                out.append(_kwok(entry, where, doc.path))
            else:
                declared = checked_entry(InstanceTypeConfig, entry, doc.path, where)
                out.append(_declared(declared, where, doc.path))
    twice = sorted(n for n, c in Counter(t.name for t in out).items() if c > 1)
    if twice:
        raise InputError(f"{what}: instance type {twice[0]} is declared twice", path=config_path)
    return out


def _declared(t: InstanceTypeConfig, what: str, path: str) -> InstanceType:
    capacity = quantities(t.resources, f"{what}.resources", path)
    capacity.setdefault("pods", DEFAULT_PODS)
    allocatable = (
        quantities(t.allocatable, f"{what}.allocatable", path)
        if t.allocatable is not None
        else dict(capacity)
    )
    allocatable.setdefault("pods", capacity["pods"])
    offerings = tuple(sorted(Offering(z, c) for z in t.zones for c in t.capacity_types))
    return InstanceType(
        t.name,
        capacity,
        allocatable,
        offerings,
        {**DEFAULT_LABELS, **t.labels},
        tuple(t.node_classes),
        display_path(Path(path)) if path else "",
    )


def _kwok(entry: Mapping[str, Any], where: str, path: str) -> InstanceType:
    """An entry of Karpenter's KWOK instance-types file, as kwok/cloudprovider/helpers.go
    reads it: the offerings' requirements name zones and capacity types (every offering is
    made available), resources are the capacity (pods 110 unless given), allocatable is the
    capacity less the provider's kube-reserved (100m CPU, 10Mi memory)."""
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise InputError(f"{where}.name: an instance type needs a name", path=path)
    resources = entry.get("resources")
    if not isinstance(resources, dict) or not resources:
        raise InputError(f"{where}.resources: {name} needs its resources", path=path)
    capacity = quantities(resources, f"{where}.resources", path)
    capacity.setdefault("pods", DEFAULT_PODS)
    allocatable = {
        k: max(Fraction(0), v - _KWOK_RESERVED.get(k, Fraction(0))) for k, v in capacity.items()
    }
    offerings: set[Offering] = set()
    for j, offering in enumerate(_list(entry.get("offerings"), f"{where}.offerings", path)):
        reqs = _list(offering.get("Requirements"), f"{where}.offerings[{j}].Requirements", path)
        zones = _values(reqs, _ZONE)
        types = _values(reqs, CAPACITY_TYPE_LABEL)
        offerings.update(Offering(z, c) for z in zones for c in types or [""])
    arch = entry.get("architecture") or "amd64"
    systems = entry.get("operatingSystems") or ["linux"]
    labels = {ARCH_LABEL: str(arch), OS_LABEL: str(sorted(systems)[0])}
    return InstanceType(
        name, capacity, allocatable, tuple(sorted(offerings)), labels, (), display_path(Path(path))
    )


def _list(value: Any, what: str, path: str) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise InputError(f"{what} must be a list of mappings", path=path)
    return value


def _values(requirements: Iterable[Mapping[str, Any]], key: str) -> list[str]:
    return sorted(
        {str(v) for r in requirements if r.get("key") == key for v in r.get("values") or ()}
    )


def declared_node_groups(
    groups: Sequence[NodeGroupConfig],
    nodes: Sequence[Node],
    zone_label: str,
    what: str,
    path: str,
) -> list[NodePool]:
    """clusters[].autoscaling.nodeGroups as pools: a group's nodes are those carrying every
    one of its labels."""
    out = []
    for i, g in enumerate(groups):
        where = f"{what}.nodeGroups[{i}]"
        allocatable = quantities(g.allocatable, f"{where}.allocatable", path)
        labels = dict(g.labels)
        size = sum(1 for n in nodes if all(n.labels.get(k) == v for k, v in labels.items()))
        taints = tuple(Taint(t.key, t.value, t.effect) for t in g.taints)
        out.append(
            node_group(g.name, labels, taints, allocatable, g.max_size, size, zone_label, where)
        )
    return out


def node_group(
    name: str,
    labels: Mapping[str, str],
    taints: tuple[Taint, ...],
    allocatable: Mapping[str, Fraction],
    max_size: int,
    size: int,
    zone_label: str,
    source: str,
) -> NodePool:
    """A Cluster Autoscaler node group as a pool: one instance type (its template node,
    allocatable as capacity, as the autoscaler's template node has it), offered in the zone
    its labels name (none: it adds no capacity to any zone), at most max_size nodes."""
    capacity = dict(allocatable)
    capacity.setdefault("pods", DEFAULT_PODS)
    zone = labels.get(zone_label, "")
    offerings = (Offering(zone),) if zone and not zone.startswith(NO_ZONE_PREFIX) else ()
    shape = InstanceType(name, capacity, capacity, offerings, {}, (), source)
    return NodePool(
        NODE_GROUP,
        name,
        dict(labels),
        taints,
        (shape,),
        limits={NODES: Fraction(max_size)},
        in_use={NODES: Fraction(size)},
        source=source,
    )
