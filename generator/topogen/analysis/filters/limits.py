"""Limits: a node an autoscaler would add only while its pool's limits leave room for it
(Karpenter drops an instance type whose capacity exceeds what a NodePool's limits leave:
"all available instance types exceed limits for nodepool"; a node group stops at its
max size). Existing nodes pass; analysis/provisioning.py marks a new node that the limits
leave no room for."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from topogen.analysis.filters.base import NodeFilter
from topogen.model import Node, PodTemplate, Toleration

__all__ = ["Limits"]


class Limits(NodeFilter):
    name = "limits"

    def exclusion(
        self, template: PodTemplate, node: Node, tolerations: Sequence[Toleration]
    ) -> str | None:
        if node.scale_up is not None and node.scale_up.over_limit:
            return f"its limits are reached ({node.scale_up.over_limit})"
        return None

    def node_key(self, node: Node) -> Hashable:
        # which pool a new node comes from: it is told apart from existing nodes and from
        # another pool's, whose reasons it may not share
        return None if node.scale_up is None else (node.scale_up.pool, node.scale_up.over_limit)
