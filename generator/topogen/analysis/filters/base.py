"""The interface every node filter implements (the kube-scheduler framework's Filter
plugins, as topogen models them): why a node is excluded, and what the filter reads.

What it reads is its cache key: node classes (analysis/nodeindex.py) tell nodes apart by
the label keys and node fields the filters read, and the placement caches
(analysis/placement.py) key on the template fields they read. A filter that read something
it did not declare would make two different templates or nodes look alike: a wrong cache
hit, silently. So each filter declares it next to the check itself.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable, Sequence

from topogen.model import Node, PodTemplate, Toleration

__all__ = ["NAME_KEY", "SCALE_UP", "NodeFilter", "ZoneReader"]

NAME_KEY = "metadata.name"  # matchFields: the node's name, read as a pseudo label
# a reason that concerns nodes an autoscaler would add starts so (placed.why_not says it
# without a node count: such nodes do not exist yet)
SCALE_UP = "new nodes of "

# what a filter reads of a node's zone label, from its value (None: the node has none)
ZoneReader = Callable[[str | None], Hashable]


class NodeFilter(ABC):
    """One scheduler filter. `exclusion` is required (abstract); the rest say what it reads (nothing
    by default) and how it judges the template members.pin makes (as `exclusion` by
    default)."""

    name = ""

    @abstractmethod
    def exclusion(
        self, template: PodTemplate, node: Node, tolerations: Sequence[Toleration]
    ) -> str | None:
        """Why the scheduler would not place the template on the node, or None."""

    def in_domain(
        self, template: PodTemplate, node: Node, tolerations: Sequence[Toleration]
    ) -> str | None:
        """exclusion() for the template as members.pin leaves it (every required node
        affinity term gained the domain's zone requirement), on a node inside the domain."""
        return self.exclusion(template, node, tolerations)

    def outside_domain(
        self, template: PodTemplate, node: Node, tolerations: Sequence[Toleration]
    ) -> str | None:
        """exclusion() for that template on a node outside the domain."""
        return self.exclusion(template, node, tolerations)

    def label_keys(self, template: PodTemplate) -> Iterable[str]:
        """The node label keys it reads for this template (NAME_KEY: the node's name)."""
        return ()

    def node_key(self, node: Node) -> Hashable:
        """What else of a node it reads (its labels aside)."""
        return None

    def template_key(self, template: PodTemplate) -> Hashable:
        """What of the template it reads (its tolerations aside: every cache keys on them)."""
        return None

    def zone_reader(self, template: PodTemplate, zone_label: str) -> ZoneReader | None:
        """What it reads of the zone label for this template, or None when nothing."""
        return None
