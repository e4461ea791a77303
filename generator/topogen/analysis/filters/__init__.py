"""The scheduler's filters topogen models, as plugins behind one interface (base.py), in
the order the reasons are given; FILTERS is the registry. Adding a filter is one module
(a NodeFilter: its check, and what it reads) and one line here; node classes, the
placement caches and the judge of pinned templates take it from the registry.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from topogen.analysis.filters.base import NAME_KEY, SCALE_UP, NodeFilter, ZoneReader
from topogen.analysis.filters.cordon import Cordon
from topogen.analysis.filters.limits import Limits
from topogen.analysis.filters.node_affinity import NodeAffinity
from topogen.analysis.filters.node_selector import NodeSelector
from topogen.analysis.filters.resources import Resources
from topogen.analysis.filters.taints import Taints
from topogen.model import Node, PodTemplate, Toleration

__all__ = [
    "FILTERS",
    "NAME_KEY",
    "SCALE_UP",
    "NodeFilter",
    "exclusion",
    "in_domain",
    "label_keys",
    "node_kind",
    "outside_domain",
    "template_key",
    "zone_readers",
]

FILTERS: list[NodeFilter] = [
    Cordon(),
    NodeSelector(),
    NodeAffinity(),
    Taints(),
    Resources(),
    Limits(),
]


def _scale_up(node: Node, reason: str | None) -> str | None:
    if reason is None or node.scale_up is None:
        return reason
    return f"{SCALE_UP}{node.scale_up.pool}: {reason}"


def exclusion(template: PodTemplate, node: Node, tolerations: Sequence[Toleration]) -> str | None:
    """Why the scheduler would not place this template on this node (the first filter
    that says so), or None."""
    for f in FILTERS:
        reason = f.exclusion(template, node, tolerations)
        if reason is not None:
            return _scale_up(node, reason)
    return None


def in_domain(template: PodTemplate, node: Node, tolerations: Sequence[Toleration]) -> str | None:
    """exclusion() for the template members.pin makes, on a node inside its domain."""
    for f in FILTERS:
        reason = f.in_domain(template, node, tolerations)
        if reason is not None:
            return _scale_up(node, reason)
    return None


def outside_domain(template: PodTemplate, node: Node, tolerations: Sequence[Toleration]) -> str:
    """exclusion() for the template members.pin makes, on a node outside its domain (its
    node affinity names the domain's zones: the node affinity filter says so at the latest)."""
    for f in FILTERS:
        reason = f.outside_domain(template, node, tolerations)
        if reason is not None:
            return _scale_up(node, reason) or reason
    return _scale_up(node, "outside the chosen domain") or "outside the chosen domain"


def label_keys(template: PodTemplate) -> frozenset[str]:
    """Node label keys the filters read for this template."""
    return frozenset(k for f in FILTERS for k in f.label_keys(template))


def node_kind(node: Node) -> tuple[Hashable, ...]:
    """What the filters read of a node besides its labels."""
    return tuple(f.node_key(node) for f in FILTERS)


def template_key(template: PodTemplate) -> tuple[Hashable, ...]:
    """What the filters read of a template besides its tolerations."""
    return tuple(f.template_key(template) for f in FILTERS)


def zone_readers(template: PodTemplate, zone_label: str) -> tuple[ZoneReader, ...]:
    """What the filters read of the zone label for this template (empty: nothing)."""
    readers = (f.zone_reader(template, zone_label) for f in FILTERS)
    return tuple(r for r in readers if r is not None)
