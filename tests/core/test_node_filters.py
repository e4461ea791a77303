"""A node filter is one module and one registry line (analysis/filters/): a toy filter,
defined here and registered, is used by placement, by pinned placement and by the
reference, and its cache keys (what it reads of nodes and templates) keep the node classes
and the placement caches from mixing up what it tells apart."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Sequence
from dataclasses import replace

import pytest

from core import reference_impl as ref
from helpers import node, template, topology
from topogen.analysis import filters
from topogen.analysis.filters import NodeFilter
from topogen.analysis.nodeindex import NodeIndex
from topogen.analysis.placement import place, place_in_domains
from topogen.model import Node, PodTemplate, Toleration


class Toy(NodeFilter):
    """Nodes labelled maintenance=true take no pod; pods labelled net=v6 need a node with
    an IPv6 pod CIDR. Reads a node label, a node field and a template field."""

    name = "toy"

    def exclusion(
        self, template: PodTemplate, node: Node, tolerations: Sequence[Toleration]
    ) -> str | None:
        if node.labels.get("maintenance") == "true":
            return "under maintenance"
        if template.labels.get("net") == "v6" and not any(":" in c for c in node.pod_cidrs):
            return "no IPv6 pod CIDR"
        return None

    def label_keys(self, template: PodTemplate) -> Iterable[str]:
        return ("maintenance",)

    def node_key(self, node: Node) -> Hashable:
        return node.pod_cidrs

    def template_key(self, template: PodTemplate) -> Hashable:
        return template.labels.get("net")


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(filters, "FILTERS", [*filters.FILTERS, Toy()])  # the registry line
    yield


def _nodes() -> tuple[Node, ...]:
    """Three nodes alike but for what only the toy filter reads."""
    return (
        node("down", labels={"maintenance": "true"}),
        replace(node("v4"), pod_cidrs=("10.0.1.0/24",)),
        replace(node("v6"), pod_cidrs=("10.0.2.0/24", "fd00::/64")),
    )


def test_placement_uses_a_registered_filter(toy: None) -> None:
    idx = NodeIndex(topology(*_nodes()))
    got = place(template({"net": "v6"}), idx)
    assert [n.name for n in got.nodes] == ["v6"]
    assert got.excluded == {"under maintenance": 1, "no IPv6 pod CIDR": 1}


def test_the_placement_cache_keys_on_what_the_filter_reads_of_templates(toy: None) -> None:
    idx = NodeIndex(topology(*_nodes()))
    assert [n.name for n in place(template({"net": "v6"}), idx).nodes] == ["v6"]
    # the same nodeSelector, affinity, requests and tolerations: only the toy's key differs
    assert [n.name for n in place(template(), idx).nodes] == ["v4", "v6"]


def test_node_classes_tell_apart_what_the_filter_reads_of_nodes(toy: None) -> None:
    idx = NodeIndex(topology(*_nodes()))
    keys = frozenset(filters.label_keys(template()))
    assert "maintenance" in keys
    assert len(idx.classes(keys)) == 3  # one node each: a label and a field apart


def test_pinned_placement_and_the_reference_use_it_too(toy: None) -> None:
    nodes = _nodes()
    idx = NodeIndex(topology(*nodes))
    pod = template({"net": "v6"})
    pinned = place_in_domains(pod, idx, [("zone-a",)], [()])
    assert [n.name for n in pinned[0].nodes] == ["v6"]
    assert pinned.why_not(0) == "1 node: no IPv6 pod CIDR; 1 node: under maintenance"
    naive = ref.place(pod, topology(*nodes))
    assert naive.nodes == place(pod, idx).nodes
    assert dict(naive.excluded) == dict(place(pod, idx).excluded)


def test_without_the_registry_line_the_filter_is_not_asked() -> None:
    idx = NodeIndex(topology(*_nodes()))
    assert [n.name for n in place(template({"net": "v6"}), idx).nodes] == ["down", "v4", "v6"]
