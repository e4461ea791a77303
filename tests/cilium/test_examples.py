"""The bundled examples mean on Cilium what their comments say: topogen's verdicts for
their pods in every zone (and their nodes, for hostNetwork pods) are Cilium's own, under
the agent options each example's cluster has (its cilium-config, read with the nodes).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import oracle
import pytest

from topogen.analysis.ports import PortSet
from topogen.analysis.reachability import PolicyIndex, host_endpoint, pod_endpoint
from topogen.config import load_config
from topogen.model import Endpoint
from topogen.sources.loader import load_cluster_inputs, load_workload_inputs, read_objects
from topogen.sources.policies import POLICY_KINDS
from topogen.sources.scope import namespace_of

pytestmark = pytest.mark.tools

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PROBES = [("TCP", 29500), ("TCP", 53), ("UDP", 53), ("TCP", 8080), ("TCP", 22)]


def _setup(name: str) -> tuple[dict[str, Any], dict[str, Endpoint], PolicyIndex]:
    cfg = load_config(EXAMPLES / name / "topogen.yaml")
    cluster = cfg.clusters[0]
    loaded = load_workload_inputs(cfg)
    inputs = load_cluster_inputs(cfg, cluster, loaded.services)
    namespaces = {**loaded.namespaces, **inputs.namespaces}
    index = PolicyIndex(inputs.policies, namespaces)
    identity = next((g.identity_label for g in cfg.groups if g.identity_label), None)
    objs = read_objects(cluster.network_policies, cfg.base_dir, "policies")
    policies = []
    for o in objs:
        if (o.group, o.kind) in POLICY_KINDS:
            body = json.loads(json.dumps(o.body))
            if o.kind != "CiliumClusterwideNetworkPolicy":
                body["metadata"]["namespace"] = namespace_of(o)
            policies.append(body)
    ours: dict[str, Endpoint] = {}
    theirs: list[dict[str, Any]] = []
    for w in loaded.workloads:
        t = w.template
        if t.host_network:
            continue
        for zone in inputs.topology.zones:
            labels = dict(t.labels)
            if identity and identity not in labels:
                labels[identity] = zone  # stamped at binding
            name = f"{w.namespace}/{w.name}[{w.replica_name}]@{zone}"
            ours[name] = pod_endpoint(labels, w.namespace, namespaces, t.ports, t.service_account)
            theirs.append({"name": name, "namespace": w.namespace, "labels": labels,
                           "serviceAccount": t.service_account, "node": "pods",
                           "ports": [{"name": n, "containerPort": p, "protocol": pr}
                                     for n, p, pr in t.ports]})  # fmt: skip
    if any(w.template.host_network for w in loaded.workloads):
        for node in inputs.topology.nodes:
            ours[f"host/{node.name}"] = host_endpoint(node.name, node.labels)
            theirs.append({"name": f"host/{node.name}", "host": True, "node": node.name})
    c = inputs.policies.cilium  # the agent's: its cilium-config, topogen.yaml's keys over it
    scenario = {
        "name": name,
        "agent": {
            "labels": list(c.identity_labels),
            "policyEnforcement": c.policy_enforcement,
            "hostFirewall": c.host_firewall,
            "nodeSelectorLabels": c.node_selector_labels,
            "clusterName": c.cluster_name,
        },
        "namespaces": [{"name": n.name, "labels": dict(n.labels)} for n in namespaces.values()],
        "nodes": [{"name": n.name, "labels": dict(n.labels)} for n in inputs.topology.nodes],
        "policies": policies,
        "endpoints": theirs,
        "probes": [{"protocol": p, "port": n} for p, n in PROBES],
    }
    return scenario, ours, index


@pytest.mark.parametrize("name", sorted(p.parent.name for p in EXAMPLES.glob("*/topogen.yaml")))
def test_example_verdicts_are_cilium_s(name: str) -> None:
    scenario, ours, index = _setup(name)
    answer = oracle.run([scenario])[0]
    assert not answer.rejected()
    mismatches = []
    denied = allowed = 0
    for (a, b), (egress, ingress) in answer.verdicts.items():
        if a == b and a.startswith("host/"):
            continue  # loopback on one node: no Cilium program sees it
        v = index.verdict(ours[a], ours[b])
        for i, (proto, port) in enumerate(PROBES):
            probe = {proto: [(port, port)]}
            mine_e = "A" if v.egress.allowed.covers(PortSet.of(probe)) else "D"
            mine_i = "A" if v.ingress.allowed.covers(PortSet.of(probe)) else "D"
            if (mine_e, mine_i) != (egress[i], ingress[i]):
                mismatches.append(f"{a} -> {b} {proto}/{port}: topogen {mine_e}{mine_i}, "
                                  f"cilium {egress[i]}{ingress[i]}")  # fmt: skip
            if proto == "TCP" and port == 29500:
                denied += "D" in (egress[i], ingress[i])
                allowed += egress[i] == ingress[i] == "A"
    assert not mismatches, "\n".join(mismatches[:30])
    # each example's policy both allows and denies its training traffic somewhere
    assert denied and allowed


def test_pytorch_three_zone_is_inert_on_a_default_agent() -> None:
    """Without the agent's labels option the zone policy selects nothing (the issue's
    finding): the same scenario through Cilium with the default filter allows it all."""
    scenario, _, _ = _setup("pytorch-three-zone")
    scenario["agent"]["labels"] = []
    answer = oracle.run([scenario])[0]
    training = [v for (a, b), v in answer.verdicts.items() if "resnet" in a and "resnet" in b]
    assert training and all(e[0] == i[0] == "A" for e, i in training)
