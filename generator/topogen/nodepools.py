"""Shared vocabulary: what an autoscaler can add to a cluster. A Karpenter NodePool
(karpenter.sh/v1) and a Cluster Autoscaler node group are both a NodePool here: node
labels and taints, the instance types it may launch with their offerings (zone,
capacity type), and limits counted against the nodes it has already. Sources read them
(sources/nodepools.py); analysis/provisioning.py turns them into the nodes a scale-up
would add.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from topogen.model import NodeSelectorRequirement, Taint, quantity

__all__ = [
    "ARCH_LABEL",
    "CAPACITY_TYPE_LABEL",
    "INSTANCE_TYPE_LABEL",
    "KARPENTER",
    "NODEPOOL_LABEL",
    "NODES",
    "NODE_GROUP",
    "OS_LABEL",
    "UNLIMITED_GPUS",
    "InstanceType",
    "NodePool",
    "Offering",
    "gpus_text",
]

KARPENTER = "NodePool"  # NodePool.kind of a Karpenter NodePool
NODE_GROUP = "node group"  # NodePool.kind of a Cluster Autoscaler node group
NODES = "nodes"  # the limit on the number of nodes (Karpenter's `nodes`, a group's max size)
NODEPOOL_LABEL = "karpenter.sh/nodepool"  # Karpenter labels its nodes with their NodePool
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ARCH_LABEL = "kubernetes.io/arch"
OS_LABEL = "kubernetes.io/os"
# the GPUs a pool without a limit that stops it can add: more than any packing needs
UNLIMITED_GPUS = Fraction(10**12)


def gpus_text(gpus: Fraction) -> str:
    """A count of GPUs as messages say it: `unlimited` where a pool without limits adds them."""
    return "unlimited" if gpus >= UNLIMITED_GPUS / 2 else quantity(gpus)


@dataclass(frozen=True, order=True)
class Offering:
    """Where an instance type can be launched: a zone and a capacity type ("" for a node
    group, which has none)."""

    zone: str
    capacity_type: str = ""


@dataclass(frozen=True)
class InstanceType:
    """A machine an autoscaler may launch: what it counts against limits (capacity), what
    pods get (allocatable), where it is offered and the node labels it brings."""

    name: str
    capacity: Mapping[str, Fraction]
    allocatable: Mapping[str, Fraction]
    offerings: tuple[Offering, ...]
    labels: Mapping[str, str] = field(default_factory=dict)
    node_classes: tuple[str, ...] = ()  # the NodeClasses that offer it (empty: every one)
    source: str = ""  # where it was declared

    def offered_to(self, node_class: str) -> bool:
        return not self.node_classes or node_class in self.node_classes


@dataclass(frozen=True)
class NodePool:
    """A Karpenter NodePool or a Cluster Autoscaler node group, as it shapes new nodes.

    requirements: the NodePool's template requirements (a node group: none); labels and
    taints: what its new nodes carry (startup taints are removed once the node is ready,
    so they never keep a pod off it); limits: per resource, `nodes` included, the most
    its nodes may count in all (Karpenter: their capacity; a node group: its max size);
    in_use: what its existing nodes count already; weight: Karpenter tries NodePools of
    a higher weight first.
    """

    kind: str  # KARPENTER | NODE_GROUP
    name: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    instance_types: tuple[InstanceType, ...]
    requirements: tuple[NodeSelectorRequirement, ...] = ()
    startup_taints: tuple[Taint, ...] = ()
    limits: Mapping[str, Fraction] = field(default_factory=dict)
    in_use: Mapping[str, Fraction] = field(default_factory=dict)
    weight: int = 0
    node_class: str = ""
    source: str = ""

    @property
    def title(self) -> str:
        """How messages name it: `NodePool gpu`, `node group gpu-1a`."""
        return f"{self.kind} {self.name}"
