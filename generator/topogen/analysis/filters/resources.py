"""Resources: the template's requests must fit the node's allocatable."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from fractions import Fraction

from topogen.analysis.filters.base import NodeFilter
from topogen.model import Node, PodTemplate, Toleration, quantity

__all__ = ["Resources", "allocatable_key"]


def allocatable_key(allocatable: Mapping[str, Fraction]) -> tuple[tuple[str, object, int], ...]:
    """A node's allocatable as sorted (resource, numerator, denominator): equal for equal
    amounts, and hashed without Fraction.__hash__ (Python code, and most of building the
    node index of a 5,000-node fleet)."""
    return tuple(
        sorted(
            (k, v.numerator, v.denominator) if type(v) is Fraction else (k, v, 1)
            for k, v in allocatable.items()
        )
    )


class Resources(NodeFilter):
    name = "resources"

    def exclusion(
        self, template: PodTemplate, node: Node, tolerations: Sequence[Toleration]
    ) -> str | None:
        for resource, want in sorted(template.requests.items()):
            if want <= 0:
                continue
            have = node.allocatable.get(resource)
            if (
                have is None
                and resource in ("cpu", "memory", "ephemeral-storage")
                and not node.allocatable
            ):
                continue  # a node listed without allocatable: do not guess
            if (have or Fraction(0)) < want:
                return (
                    f"insufficient {resource} (needs {quantity(want)}, has {quantity(have or 0)})"
                )
        return None

    def node_key(self, node: Node) -> Hashable:
        return allocatable_key(node.allocatable)

    def template_key(self, template: PodTemplate) -> Hashable:
        return tuple(template.requests.items())
