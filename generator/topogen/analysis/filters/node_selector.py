"""nodeSelector: every pair must be a label of the node."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence

from topogen.analysis.filters.base import NodeFilter, ZoneReader
from topogen.model import Node, PodTemplate, Toleration

__all__ = ["NodeSelector"]


class NodeSelector(NodeFilter):
    name = "nodeSelector"

    def exclusion(
        self, template: PodTemplate, node: Node, tolerations: Sequence[Toleration]
    ) -> str | None:
        for key, value in template.node_selector.items():
            if node.labels.get(key) != value:
                return f"nodeSelector {key}={value} not matched"
        return None

    def label_keys(self, template: PodTemplate) -> Iterable[str]:
        return template.node_selector

    def template_key(self, template: PodTemplate) -> Hashable:
        return tuple(template.node_selector.items())

    def zone_reader(self, template: PodTemplate, zone_label: str) -> ZoneReader | None:
        if zone_label not in template.node_selector:
            return None
        want = template.node_selector[zone_label]
        return lambda value: want == value
