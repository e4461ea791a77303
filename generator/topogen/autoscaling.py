"""Config: `clusters[].autoscaling`, what topogen cannot read from a cluster about the
nodes its autoscaler can add. Karpenter NodePools and Cluster API node groups are read
from the cluster's node sources (sources/nodepools.py); the instance types behind a
NodePool's NodeClass (a cloud's catalogue, not in the cluster) and Cluster Autoscaler node
groups that no Cluster API object describes are declared here."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from topogen.fields import InputPath, LabelKey, LabelValue, Name, Quantity, Strict

__all__ = ["AutoscalingConfig", "InstanceTypeConfig", "NodeGroupConfig", "TaintConfig"]


class InstanceTypeConfig(Strict):
    """A machine Karpenter may launch: its capacity (what it counts against a NodePool's
    limits), what pods get of it (allocatable, default the capacity), where it is offered
    (zones times capacity types), and node labels it brings (kubernetes.io/arch and
    kubernetes.io/os default to amd64 and linux)."""

    name: LabelValue
    zones: list[LabelValue] = Field(min_length=1)
    # karpenter.sh/capacity-type values it is offered as
    capacity_types: list[LabelValue] = Field(
        default_factory=lambda: ["on-demand"], alias="capacityTypes", min_length=1
    )
    resources: dict[LabelKey, Quantity] = Field(min_length=1)  # counted against limits
    allocatable: dict[LabelKey, Quantity] | None = None  # what pods get (default: resources)
    labels: dict[LabelKey, LabelValue] = Field(default_factory=dict)  # e.g. provider labels
    # the NodeClasses that offer it (default: every one)
    node_classes: list[Name] = Field(default_factory=list, alias="nodeClasses")


class TaintConfig(Strict):
    key: LabelKey
    value: LabelValue = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class NodeGroupConfig(Strict):
    """A Cluster Autoscaler node group: its size bounds and the node it adds (labels, the
    zone label among them, taints, allocatable). Its current size is the number of nodes
    that carry every one of its labels."""

    name: Name
    min_size: int = Field(0, alias="minSize", ge=0)
    max_size: int = Field(alias="maxSize", ge=0)
    labels: dict[LabelKey, LabelValue] = Field(default_factory=dict)
    taints: list[TaintConfig] = Field(default_factory=list)
    allocatable: dict[LabelKey, Quantity] = Field(min_length=1)


class AutoscalingConfig(Strict):
    """instanceTypes / instanceTypeFiles: the instance types of the NodePools' NodeClasses
    (a file: Karpenter's KWOK provider's instance-types JSON, or a YAML list of
    instanceTypes entries); nodeGroups: Cluster Autoscaler node groups."""

    instance_types: list[InstanceTypeConfig] = Field(default_factory=list, alias="instanceTypes")
    # a YAML list of instanceTypes entries, or Karpenter's KWOK provider's instance-types JSON
    instance_type_files: list[InputPath] = Field(default_factory=list, alias="instanceTypeFiles")
    node_groups: list[NodeGroupConfig] = Field(default_factory=list, alias="nodeGroups")
