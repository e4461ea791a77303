"""One label selector reader for every source (sources/label_selectors.py): a
NetworkPolicy, a CiliumNetworkPolicy, a pod's required pod affinity and its required node
affinity refuse the same malformed selectors, with the API server's rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from helpers import objects
from topogen.errors import InputError
from topogen.sources.podspec import parse_pod_template
from topogen.sources.policies import read_policies


def _netpol(expr: dict[str, Any]) -> None:
    doc = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "p", "namespace": "ml"},
        "spec": {"podSelector": {"matchExpressions": [expr]}, "policyTypes": ["Ingress"]},
    }
    read_policies(objects(yaml.safe_dump(doc)))


def _cnp(expr: dict[str, Any]) -> None:
    doc = {
        "apiVersion": "cilium.io/v2",
        "kind": "CiliumNetworkPolicy",
        "metadata": {"name": "p", "namespace": "ml"},
        "spec": {"endpointSelector": {"matchExpressions": [expr]}, "ingress": [{}]},
    }
    read_policies(objects(yaml.safe_dump(doc)))


def _pod(affinity: dict[str, Any]) -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ml", "labels": {"app": "a"}},
        "spec": {"affinity": affinity, "containers": [{"name": "c", "image": "x"}]},
    }
    (obj,) = objects(yaml.safe_dump(doc))
    parse_pod_template(obj.body, "", obj)


def _pod_affinity(expr: dict[str, Any]) -> None:
    term = {"labelSelector": {"matchExpressions": [expr]}, "topologyKey": "zone"}
    _pod({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}})


def _node_affinity(expr: dict[str, Any]) -> None:
    terms = {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}
    _pod({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": terms}})


SOURCES = {
    "networkpolicy": _netpol,
    "cilium": _cnp,
    "pod-affinity": _pod_affinity,
    "node-affinity": _node_affinity,
}
BAD = {
    "values-on-exists": ({"key": "k", "operator": "Exists", "values": ["v"]}, "takes no values"),
    "empty-key": ({"key": "", "operator": "Exists"}, "needs a key and an operator"),
    "no-values-on-in": ({"key": "k", "operator": "In"}, "(In) needs values"),
    "unknown-operator": ({"key": "k", "operator": "Equals", "values": ["v"]}, "got 'Equals'"),
    "number-value": ({"key": "k", "operator": "In", "values": [1]}, "values must be strings"),
    "unknown-field": ({"key": "k", "operator": "Exists", "valuse": ["v"]}, "unknown field"),
}


@pytest.mark.parametrize("source", sorted(SOURCES))
@pytest.mark.parametrize("case", sorted(BAD))
def test_every_source_refuses_the_same_selectors(source: str, case: str) -> None:
    expr, says = BAD[case]
    with pytest.raises(InputError, match=says.replace("(", r"\(").replace(")", r"\)")):
        SOURCES[source](expr)


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_every_source_reads_a_good_selector(source: str) -> None:
    SOURCES[source]({"key": "k", "operator": "In", "values": ["b", "a"]})
    SOURCES[source]({"key": "k", "operator": "DoesNotExist"})


@pytest.mark.parametrize("values", [[], ["1", "2"]])
def test_gt_and_lt_take_one_value(values: list[str]) -> None:
    with pytest.raises(InputError, match=r"\(Gt\) takes one value"):
        _node_affinity({"key": "k", "operator": "Gt", "values": values})
    _node_affinity({"key": "k", "operator": "Gt", "values": ["3"]})


def test_backends_write_selectors_through_the_one_writer() -> None:
    """Turning a model selector into a Kubernetes dict is render/requirements.py's alone."""
    render = Path(__file__).resolve().parents[2] / "generator" / "topogen" / "render"
    for path in sorted(render.glob("*.py")):
        if path.name == "requirements.py":
            continue
        text = path.read_text(encoding="utf-8")
        for spelling in ('"operator": r.operator', "match_expressions\n        ]", "r.values)}"):
            assert spelling not in text, f"{path.name} writes a selector itself"
