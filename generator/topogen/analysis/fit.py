"""Whether the scheduler's filters let a pod template onto a node, and why not.

The filters are the plugins of analysis/filters/ (cordon, nodeSelector, required node
affinity, taints, resources), asked in their registry's order. Judge answers for a node
class in a zone, once per what the template reads of the zone label.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from topogen.analysis import filters
from topogen.analysis.filters import exclusion
from topogen.analysis.nodeindex import NodeClass, NodeIndex
from topogen.model import Node, PodTemplate, Toleration

__all__ = ["Judge", "exclusion"]

_UNJUDGED: Any = object()  # plain(): not judged yet


class Judge:
    """exclusion() for one template and set of tolerations, per node class and zone.

    Within a class nodes differ only in their zone; what the template reads of the zone
    label (each filter's zone reader) reduces a zone to a short signature, so each class
    is judged once per signature, on one of its nodes.
    """

    def __init__(
        self, template: PodTemplate, tolerations: Sequence[Toleration], idx: NodeIndex
    ) -> None:
        self.template = template
        self.tolerations = tolerations
        self.nodes = idx.nodes
        self.zone_label = idx.zone_label
        self.readers = filters.zone_readers(template, idx.zone_label)
        self.reads_zone = bool(self.readers)
        self._signatures: dict[str, Hashable] = {}
        self._plain: dict[tuple[int, Hashable], str | None] = {}
        self._pinned: dict[tuple[int, Hashable], tuple[str | None, str]] = {}

    def signature(self, zone: str, node: Node) -> Hashable:
        """What the template reads of the zone label of this node (in that zone)."""
        if not self.reads_zone:
            return None
        hit = self._signatures.get(zone)
        if hit is None:
            value = node.labels.get(self.zone_label)
            hit = self._signatures[zone] = tuple(read(value) for read in self.readers)
        return hit

    def plain(self, c: int, cls: NodeClass, zone: str) -> str | None:
        """exclusion() on the class's nodes in that zone (asked per class and zone of every
        template placed: a known answer is read without building its key's node)."""
        sig = self._signatures.get(zone) if self.reads_zone else None
        if sig is None and self.reads_zone:
            sig = self.signature(zone, self.nodes[cls.by_zone[zone][0]])
        key = (c, sig)
        hit: str | None = self._plain.get(key, _UNJUDGED)
        if hit is _UNJUDGED:
            node = self.nodes[cls.by_zone[zone][0]]
            hit = self._plain[key] = exclusion(self.template, node, self.tolerations)
        return hit

    def pinned(self, c: int, cls: NodeClass, zone: str) -> tuple[str | None, str]:
        """For the template members.pin makes: (on the class's nodes in that zone when it
        is in the domain, when it is not)."""
        node = self.nodes[cls.by_zone[zone][0]]
        key = (c, self.signature(zone, node))
        hit = self._pinned.get(key)
        if hit is None:
            hit = self._pinned[key] = (
                filters.in_domain(self.template, node, self.tolerations),
                filters.outside_domain(self.template, node, self.tolerations),
            )
        return hit
