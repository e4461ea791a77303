"""bench/netpolgen.py: seeded NetworkPolicy clusters for the race with Cyclonus.

Same seed, same bytes; every feature the race is meant to exercise is there, in valid
shapes; the probe file Cyclonus reads holds the same workloads as the manifests.
"""

from __future__ import annotations

import ipaddress
import json
import re
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from topogen.connectivity import InputSpec, load_inputs

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import netpolgen  # noqa: E402

PORT_NAME = re.compile(r"^(?=.*[a-z])[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def test_same_seed_same_bytes(tmp_path: Path) -> None:
    first = netpolgen.write_cluster(netpolgen.RaceSpec(100), tmp_path / "one")
    second = netpolgen.write_cluster(netpolgen.RaceSpec(100), tmp_path / "two")
    assert first == second
    for rel in first:
        assert (tmp_path / "one" / rel).read_bytes() == (tmp_path / "two" / rel).read_bytes()
    netpolgen.write_cluster(netpolgen.RaceSpec(100, seed=2), tmp_path / "x")
    differs = [r for r in first if (tmp_path / "x" / r).exists()
               and (tmp_path / "x" / r).read_bytes() != (tmp_path / "one" / r).read_bytes()]  # fmt: skip
    assert differs


@pytest.fixture(scope="module")
def cluster() -> netpolgen.Cluster:
    return netpolgen.generate(netpolgen.RaceSpec(1000))


def _policies(c: netpolgen.Cluster) -> list[dict[str, Any]]:
    return [p for items in c.policies.values() for p in items]


def _peers(p: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for section, side in (("ingress", "from"), ("egress", "to")):
        for rule in p["spec"].get(section) or []:
            yield from rule.get(side) or []


def _ports(p: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for section in ("ingress", "egress"):
        for rule in p["spec"].get(section) or []:
            yield from rule.get("ports") or []


def _selectors(p: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield p["spec"]["podSelector"]
    for peer in _peers(p):
        for key in ("podSelector", "namespaceSelector"):
            if key in peer:
                yield peer[key]


def test_sizes_and_proportions(cluster: netpolgen.Cluster) -> None:
    workloads = [w for items in cluster.workloads.values() for w in items]
    assert len(workloads) == 1000
    assert len(cluster.namespaces) == len(cluster.workloads)
    assert 40 < len(cluster.namespaces) <= 52  # about 20 workloads each, kube-system, monitoring
    per_workload = len(_policies(cluster)) / len(workloads)
    assert 0.5 < per_workload < 0.9
    small = netpolgen.generate(netpolgen.RaceSpec(100))
    assert sum(len(w) for w in small.workloads.values()) == 100
    assert 0.5 < len(_policies(small)) / 100 < 1.0


def test_every_feature_is_there(cluster: netpolgen.Cluster) -> None:
    policies = _policies(cluster)
    types = Counter(tuple(p["spec"]["policyTypes"]) for p in policies)
    assert {("Ingress",), ("Egress",), ("Ingress", "Egress")} <= set(types)
    assert min(types.values()) >= 10
    written = Counter(
        s for p in policies for s in ("ingress", "egress")
        if s in p["spec"] and s.capitalize() not in p["spec"]["policyTypes"]
    )  # fmt: skip
    assert written["ingress"] and written["egress"]  # sections policyTypes leaves out
    peers = [peer for p in policies for peer in _peers(p)]
    kinds = Counter(tuple(sorted(peer)) for peer in peers)
    assert kinds[("ipBlock",)] and kinds[("podSelector",)] and kinds[("namespaceSelector",)]
    assert kinds[("namespaceSelector", "podSelector")]
    assert any("except" in peer.get("ipBlock", {}) for peer in peers)
    assert {"namespaceSelector": {}} in peers
    ops = Counter(e["operator"] for p in policies for s in _selectors(p)
                  for e in s.get("matchExpressions", []))  # fmt: skip
    assert set(ops) == {"In", "NotIn", "Exists", "DoesNotExist"}
    ports = [port for p in policies for port in _ports(p)]
    assert any(isinstance(p.get("port"), str) for p in ports)  # named
    assert any(isinstance(p.get("port"), int) and "endPort" not in p for p in ports)
    assert any("endPort" in p for p in ports)  # ranges
    assert any("port" not in p for p in ports)  # a protocol's every port
    assert {p.get("protocol", "TCP") for p in ports} == {"TCP", "UDP", "SCTP"}
    assert any(not (rule.get("from") or rule.get("to")) for p in policies
               for s in ("ingress", "egress") for rule in p["spec"].get(s) or [])  # fmt: skip
    workloads = [w for items in cluster.workloads.values() for w in items]
    assert {w["kind"] for w in workloads} == {"Deployment", "StatefulSet", "DaemonSet"}
    assert {w["spec"].get("replicas", 0) > 1 for w in workloads} == {True, False}
    protocols = {p["protocol"] for w in workloads
                 for c in w["spec"]["template"]["spec"]["containers"] for p in c["ports"]}  # fmt: skip
    assert protocols == {"TCP", "UDP", "SCTP"}
    assert {"env" in n["metadata"]["labels"] for n in cluster.namespaces} == {True, False}


def test_shapes_are_valid(cluster: netpolgen.Cluster) -> None:
    pods = ipaddress.ip_network("10.0.0.0/8")
    for p in _policies(cluster):
        spec = p["spec"]
        assert spec["policyTypes"] and set(spec["policyTypes"]) <= {"Ingress", "Egress"}
        for port in _ports(p):
            if "endPort" in port:
                assert isinstance(port["port"], int) and port["endPort"] >= port["port"]
            if isinstance(port.get("port"), str):
                assert PORT_NAME.match(port["port"]) and len(port["port"]) <= 15
        for peer in _peers(p):
            if "ipBlock" in peer:
                assert len(peer) == 1
                block = ipaddress.ip_network(peer["ipBlock"]["cidr"])
                excepted = [ipaddress.ip_network(e) for e in peer["ipBlock"].get("except", [])]
                # never a pod IP: outside the pod network, or the pod network excepted
                assert not block.overlaps(pods) or any(pods.subnet_of(e) for e in excepted)
    for items in cluster.workloads.values():
        assert len({w["metadata"]["name"] for w in items}) == len(items)
        for w in items:
            ports = [(p["containerPort"], p["protocol"]) for c in
                     w["spec"]["template"]["spec"]["containers"] for p in c["ports"]]  # fmt: skip
            assert len(set(ports)) == len(ports)
            names = [p["name"] for c in w["spec"]["template"]["spec"]["containers"]
                     for p in c["ports"] if "name" in p]  # fmt: skip
            assert len(set(names)) == len(names)
            assert all(PORT_NAME.match(n) and len(n) <= 15 for n in names)


def test_the_probe_file_holds_the_manifests(tmp_path: Path) -> None:
    netpolgen.write_cluster(netpolgen.RaceSpec(200, seed=3), tmp_path)
    probe = json.loads((tmp_path / "probe.json").read_text(encoding="utf-8"))
    pods = {f"{p['Namespace']}/{p['Name']}": p for p in probe["Resources"]["Pods"]}
    served = set()
    for path in sorted((tmp_path / "workloads").glob("*.yaml")):
        for w in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            pod = pods.pop(f"{w['metadata']['namespace']}/{w['metadata']['name']}")
            tmpl = w["spec"]["template"]
            assert pod["Labels"] == tmpl["metadata"]["labels"]
            want = [(p["containerPort"], p["protocol"], p.get("name", ""))
                    for c in tmpl["spec"]["containers"] for p in c["ports"]]  # fmt: skip
            assert [(c["Port"], c["Protocol"], c["PortName"]) for c in pod["Containers"]] == want
            served |= {(port, proto) for port, proto, _ in want}
    assert pods == {}
    ips = [p["IP"] for p in probe["Resources"]["Pods"]]
    assert len(set(ips)) == len(ips)
    assert all(ipaddress.ip_address(ip) in ipaddress.ip_network("10.0.0.0/8") for ip in ips)
    assert {(p["Port"], p["Protocol"]) for p in probe["Probes"]} == served
    ns = yaml.safe_load((tmp_path / "namespaces.yaml").read_text(encoding="utf-8"))["items"]
    assert probe["Resources"]["Namespaces"] == {n["metadata"]["name"]: n["metadata"]["labels"]
                                                for n in ns}  # fmt: skip


def test_topogen_reads_it(tmp_path: Path) -> None:
    netpolgen.write_cluster(netpolgen.RaceSpec(100), tmp_path)
    inputs = load_inputs(
        InputSpec(
            policies=(str(tmp_path / "policies"),),
            workloads=(str(tmp_path / "workloads"),),
            namespaces=(str(tmp_path / "namespaces.yaml"),),
        )
    )
    assert len(inputs.workloads) == 100
    assert len(inputs.policies.policies) == sum(
        len(yaml.safe_load(p.read_text(encoding="utf-8"))["items"])
        for p in (tmp_path / "policies").glob("*.yaml")
    )
    assert inputs.skipped == ()
