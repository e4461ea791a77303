"""Required node affinity: terms ORed, requirements ANDed, metadata.name as a field."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence

from topogen.analysis.filters.base import NAME_KEY, NodeFilter, ZoneReader
from topogen.model import Node, PodTemplate, Toleration

__all__ = ["NodeAffinity"]

_NOT_MATCHED = "required node affinity not matched"


def _node_labels(node: Node) -> Mapping[str, str]:
    # matchFields supports metadata.name only; expose it as a pseudo label
    return {**node.labels, NAME_KEY: node.name}


class NodeAffinity(NodeFilter):
    name = "nodeAffinity"

    def exclusion(
        self, template: PodTemplate, node: Node, tolerations: Sequence[Toleration]
    ) -> str | None:
        if template.node_affinity is not None:
            labels = _node_labels(node)
            if not any(term.matches(labels) for term in template.node_affinity):
                return _NOT_MATCHED
        return None

    def in_domain(
        self, template: PodTemplate, node: Node, tolerations: Sequence[Toleration]
    ) -> str | None:
        """Inside the domain the added zone requirement holds, so an empty term matches
        there, and no affinity at all means just that requirement."""
        if template.node_affinity:
            labels = _node_labels(node)
            if not any(
                all(r.matches(labels) for r in term.match_expressions)
                for term in template.node_affinity
            ):
                return _NOT_MATCHED
        return None

    def outside_domain(
        self, template: PodTemplate, node: Node, tolerations: Sequence[Toleration]
    ) -> str | None:
        return _NOT_MATCHED  # every term requires the domain's zones

    def label_keys(self, template: PodTemplate) -> Iterable[str]:
        return (r.key for term in template.node_affinity or () for r in term.match_expressions)

    def template_key(self, template: PodTemplate) -> Hashable:
        return template.node_affinity

    def zone_reader(self, template: PodTemplate, zone_label: str) -> ZoneReader | None:
        on_zone = tuple(
            tuple(r for r in term.match_expressions if r.key == zone_label)
            for term in template.node_affinity or ()
        )
        if not any(on_zone):
            return None

        def read(value: str | None) -> Hashable:
            labels = {} if value is None else {zone_label: value}
            return tuple(all(r.matches(labels) for r in rs) for rs in on_zone)

        return read
