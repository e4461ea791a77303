"""Whether the scheduler's filters let a pod template onto a node, and why not.

nodeSelector, required node affinity (terms ORed, requirements ANDed, metadata.name as a
field), cordon, NoSchedule/NoExecute taints without a toleration, resources against
allocatable. Judge answers for a node class in a zone, once per what the template reads
of the zone label.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction

from topogen.analysis.nodeindex import NAME_KEY, NodeClass, NodeIndex
from topogen.model import Node, PodTemplate, Taint, Toleration

__all__ = ["Judge", "exclusion", "quantity", "untolerated"]

_BLOCKING = ("NoSchedule", "NoExecute")
_UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


def untolerated(taints: Iterable[Taint], tolerations: Sequence[Toleration]) -> list[Taint]:
    return [
        t
        for t in taints
        if t.effect in _BLOCKING and not any(tol.tolerates(t) for tol in tolerations)
    ]


def _node_labels(node: Node) -> Mapping[str, str]:
    # matchFields supports metadata.name only; expose it as a pseudo label
    return {**node.labels, NAME_KEY: node.name}


def exclusion(template: PodTemplate, node: Node, tolerations: Sequence[Toleration]) -> str | None:
    """Why the scheduler would not place this template on this node, or None."""
    reason = _selected_out(template, node, tolerations)
    if reason is not None:
        return reason
    if template.node_affinity is not None:
        labels = _node_labels(node)
        if not any(term.matches(labels) for term in template.node_affinity):
            return "required node affinity not matched"
    return _does_not_fit(template, node, tolerations)


def _selected_out(
    template: PodTemplate, node: Node, tolerations: Sequence[Toleration]
) -> str | None:
    """The checks before node affinity: cordon, nodeSelector."""
    if node.unschedulable and not any(t.tolerates(_UNSCHEDULABLE_TAINT) for t in tolerations):
        return "cordoned (unschedulable)"
    for key, value in template.node_selector.items():
        if node.labels.get(key) != value:
            return f"nodeSelector {key}={value} not matched"
    return None


def _does_not_fit(
    template: PodTemplate, node: Node, tolerations: Sequence[Toleration]
) -> str | None:
    """The checks after node affinity: taints, resources."""
    bad = untolerated(node.taints, tolerations)
    if bad:
        return f"taint {bad[0]} not tolerated"
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
            return f"insufficient {resource} (needs {quantity(want)}, has {quantity(have or 0)})"
    return None


def _pinned_exclusion(
    template: PodTemplate, node: Node, tolerations: Sequence[Toleration]
) -> str | None:
    """exclusion() for the template as members.pin leaves it, on a node inside the domain:
    every required term gained the domain's zone requirement (so an empty term matches
    there, and no affinity at all means just that requirement)."""
    reason = _selected_out(template, node, tolerations)
    if reason is not None:
        return reason
    if template.node_affinity:
        labels = _node_labels(node)
        if not any(
            all(r.matches(labels) for r in term.match_expressions)
            for term in template.node_affinity
        ):
            return "required node affinity not matched"
    return _does_not_fit(template, node, tolerations)


class Judge:
    """exclusion() for one template and set of tolerations, per node class and zone.

    Within a class nodes differ only in their zone; what the template reads of the zone
    label (a nodeSelector on it, node affinity requirements on it) reduces a zone to a
    short signature, so each class is judged once per signature, on one of its nodes.
    """

    def __init__(
        self, template: PodTemplate, tolerations: Sequence[Toleration], idx: NodeIndex
    ) -> None:
        self.template = template
        self.tolerations = tolerations
        self.nodes = idx.nodes
        zl = self.zone_label = idx.zone_label
        self.on_zone = tuple(
            tuple(r for r in term.match_expressions if r.key == zl)
            for term in template.node_affinity or ()
        )
        self.selects_zone = zl in template.node_selector
        self.reads_zone = self.selects_zone or any(self.on_zone)
        self._signatures: dict[str, object] = {}
        self._plain: dict[tuple[int, object], str | None] = {}
        self._pinned: dict[tuple[int, object], tuple[str | None, str]] = {}

    def _signature(self, zone: str, node: Node) -> object:
        if not self.reads_zone:
            return None
        hit = self._signatures.get(zone)
        if hit is None:
            value = node.labels.get(self.zone_label)
            labels = {} if value is None else {self.zone_label: value}
            hit = self._signatures[zone] = (
                self.selects_zone and self.template.node_selector[self.zone_label] == value,
                tuple(all(r.matches(labels) for r in rs) for rs in self.on_zone),
            )
        return hit

    def plain(self, c: int, cls: NodeClass, zone: str) -> str | None:
        """exclusion() on the class's nodes in that zone."""
        node = self.nodes[cls.by_zone[zone][0]]
        key = (c, self._signature(zone, node))
        if key in self._plain:
            return self._plain[key]
        hit = self._plain[key] = exclusion(self.template, node, self.tolerations)
        return hit

    def pinned(self, c: int, cls: NodeClass, zone: str) -> tuple[str | None, str]:
        """For the template members.pin makes: (on the class's nodes in that zone when it
        is in the domain, when it is not)."""
        node = self.nodes[cls.by_zone[zone][0]]
        key = (c, self._signature(zone, node))
        hit = self._pinned.get(key)
        if hit is None:
            hit = self._pinned[key] = (
                _pinned_exclusion(self.template, node, self.tolerations),
                _selected_out(self.template, node, self.tolerations)
                or "required node affinity not matched",
            )
        return hit


def quantity(q: Fraction | int) -> str:
    q = Fraction(q)
    return str(q.numerator) if q.denominator == 1 else f"{float(q):g}"
