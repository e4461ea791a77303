"""Taints: a NoSchedule or NoExecute taint blocks a pod that does not tolerate it."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence

from topogen.analysis.filters.base import NodeFilter
from topogen.model import Node, PodTemplate, Taint, Toleration

__all__ = ["Taints", "untolerated"]

_BLOCKING = ("NoSchedule", "NoExecute")


def untolerated(taints: Iterable[Taint], tolerations: Sequence[Toleration]) -> list[Taint]:
    return [
        t
        for t in taints
        if t.effect in _BLOCKING and not any(tol.tolerates(t) for tol in tolerations)
    ]


class Taints(NodeFilter):
    name = "taints"

    def exclusion(
        self, template: PodTemplate, node: Node, tolerations: Sequence[Toleration]
    ) -> str | None:
        bad = untolerated(node.taints, tolerations)
        return f"taint {bad[0]} not tolerated" if bad else None

    def node_key(self, node: Node) -> Hashable:
        return node.taints
