"""The oracle itself: facts Cilium's own tests and docs state, so a broken build fails here.

Each case is a scenario whose verdicts Cilium's test suite (or its documentation)
spells out; the oracle must give exactly those.
"""

from __future__ import annotations

from typing import Any

import oracle
import pytest

pytestmark = pytest.mark.tools


def _pod(name: str, ns: str, labels: dict[str, str], **extra: Any) -> dict[str, Any]:
    return {"name": name, "namespace": ns, "labels": labels, **extra}


def _cnp(ns: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "cilium.io/v2",
        "kind": "CiliumNetworkPolicy",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }


def _one(scenario: dict[str, Any]) -> oracle.OracleResult:
    scenario.setdefault("name", "t")
    return oracle.run([scenario])[0]


def test_networkpolicy_port_range() -> None:
    # pkg/k8s/network_policy_test.go TestParseNetworkPolicyEgressL4PortRangeAllowAll
    np = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "np", "namespace": "default"},
        "spec": {
            "podSelector": {"matchLabels": {"id": "a"}},
            "egress": [{"ports": [{"port": 8080, "endPort": 8090}], "to": []}],
        },
    }
    res = _one(
        {
            "policies": [np],
            "endpoints": [_pod("a", "default", {"id": "a"}), _pod("c", "default", {"id": "c"})],
            "queries": [
                {
                    "from": "a",
                    "to": "c",
                    "probes": [{"protocol": "TCP", "port": p} for p in (8080, 8085, 8090, 8091)],
                }
            ],
        }
    )
    assert res.verdicts[("a", "c")] == ("AAAD", "AAAA")


def test_l3_l4_rule_and_empty_port_entry() -> None:
    # a toPorts entry without ports adds nothing (pkg/policy/rule.go mergeL4Filter)
    spec = {
        "endpointSelector": {"matchLabels": {"app": "web"}},
        "ingress": [
            {
                "fromEndpoints": [{"matchLabels": {"app": "cli"}}],
                "toPorts": [{"ports": [{"port": "80", "protocol": "TCP"}]}, {}],
            }
        ],
    }
    res = _one(
        {
            "policies": [_cnp("a", "web", spec)],
            "endpoints": [
                _pod("web", "a", {"app": "web"}),
                _pod("cli", "a", {"app": "cli"}),
                _pod("other", "b", {"app": "cli"}),
            ],
            "probes": [
                {"protocol": "TCP", "port": 80},
                {"protocol": "TCP", "port": 81},
                {"protocol": "UDP", "port": 80},
            ],
        }
    )
    assert res.verdicts[("cli", "web")] == ("AAA", "ADD")
    assert res.verdicts[("other", "web")] == ("AAA", "DDD")  # another namespace
    assert res.verdicts[("web", "cli")] == ("AAA", "AAA")  # cli is not isolated


def test_default_label_filter_drops_topology_labels() -> None:
    zone = {"topology.kubernetes.io/zone": "z1", "app": "x"}
    res = _one({"endpoints": [_pod("p", "a", zone)], "probes": []})
    labels = res.identities["p"]
    assert "k8s:app=x" in labels
    assert not any("topology.kubernetes.io" in lbl for lbl in labels)
    assert "k8s:io.kubernetes.pod.namespace=a" in labels
    assert "k8s:io.cilium.k8s.policy.serviceaccount=default" in labels
    assert "k8s:io.cilium.k8s.policy.cluster=default" in labels


def test_labels_option_is_an_allow_list() -> None:
    zone = {"topology.kubernetes.io/zone": "z1", "app": "x", "app.kubernetes.io/name": "n"}
    res = _one(
        {
            "agent": {"labels": ["k8s:topology.kubernetes.io/zone"]},
            "endpoints": [_pod("p", "a", zone)],
            "probes": [],
        }
    )
    labels = res.identities["p"]
    assert "k8s:topology.kubernetes.io/zone=z1" in labels
    assert "k8s:app.kubernetes.io/name=n" in labels  # one of Cilium's default inclusions
    assert "k8s:app=x" not in labels


def test_rejections_and_enforcement_modes() -> None:
    nodes = _cnp("a", "nodes", {"endpointSelector": {}, "ingress": [{"fromNodes": [{}]}]})
    deny = _cnp("a", "deny", {"endpointSelector": {}, "ingressDeny": [{"fromEntities": ["all"]}]})
    pods = [_pod("x", "a", {"app": "x"}), _pod("y", "a", {"app": "y"})]
    probe = [{"protocol": "TCP", "port": 80}]
    default, always, never = oracle.run(
        [
            {
                "name": m,
                "agent": {"policyEnforcement": m},
                "policies": [nodes, deny],
                "endpoints": pods,
                "probes": probe,
            }
            for m in ("default", "always", "never")
        ]
    )
    assert (
        "enable-node-selector-labels" in default.rejected()[("CiliumNetworkPolicy", "a", "nodes")]
    )
    assert default.verdicts[("x", "y")] == ("A", "D")  # the deny applies
    assert always.verdicts[("x", "y")] == ("D", "D")  # no egress rule: default deny
    assert never.verdicts[("x", "y")] == ("A", "A")
