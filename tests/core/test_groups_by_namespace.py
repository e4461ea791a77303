"""analysis/groups.py's ByNamespace: a group reads its namespaces' workloads in the order
of all of them, as when every workload was scanned."""

from __future__ import annotations

from helpers import template
from topogen.analysis.groups import ByNamespace
from topogen.model import Workload


def _workload(namespace: str, name: str) -> Workload:
    return Workload("Deployment", "apps/v1", namespace, name, "", 1, template(), "in.yaml")


WORKLOADS = [
    _workload("a", "1"),
    _workload("b", "2"),
    _workload("a", "3"),
    _workload("c", "4"),
    _workload("b", "5"),
]


def _scanned(namespaces: list[str]) -> list[Workload]:
    return [w for w in WORKLOADS if w.namespace in namespaces]


def test_one_namespace_in_input_order() -> None:
    assert ByNamespace(WORKLOADS).of(["a"]) == _scanned(["a"])


def test_several_namespaces_interleave_as_in_the_input() -> None:
    index = ByNamespace(WORKLOADS)
    for namespaces in (["b", "a"], ["a", "b", "c"], ["c", "a"], ["a", "a", "b"]):
        assert index.of(namespaces) == _scanned(namespaces), namespaces


def test_a_namespace_without_workloads_gives_none_and_is_not_added() -> None:
    index = ByNamespace(WORKLOADS)
    assert index.of(["z"]) == []
    assert index.of(["z", "c"]) == _scanned(["c"])
    assert index.of([]) == []
