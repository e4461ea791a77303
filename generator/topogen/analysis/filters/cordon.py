"""Cordon: an unschedulable node takes only pods that tolerate its taint."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from topogen.analysis.filters.base import NodeFilter
from topogen.model import Node, PodTemplate, Taint, Toleration

__all__ = ["Cordon"]

_UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


class Cordon(NodeFilter):
    name = "cordon"

    def exclusion(
        self, template: PodTemplate, node: Node, tolerations: Sequence[Toleration]
    ) -> str | None:
        if node.unschedulable and not any(t.tolerates(_UNSCHEDULABLE_TAINT) for t in tolerations):
            return "cordoned (unschedulable)"
        return None

    def node_key(self, node: Node) -> Hashable:
        return node.unschedulable
