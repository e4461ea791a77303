"""connectivity.matrix gives, pair for pair, what PolicyIndex.verdict gives.

`topogen connectivity` computes every pair side by side (bitmasks over endpoints); the
reference is the plain loop over ordered pairs asking verdict() for each. Inputs: the
hand-reviewed apps (Cilium and Kubernetes policies, deny rules, entities, named and
ranged ports), seeded race clusters (bench/netpolgen.py), and inline edge cases.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conn_kit import docs, namespace, pod

from topogen.analysis.ports import PortSet
from topogen.analysis.reachability import PolicyIndex
from topogen.connectivity import InputSpec, build_endpoints, compute_connectivity, load_inputs
from topogen.connectivity.inputs import ConnectivityInputs

ROOT = Path(__file__).resolve().parents[2]
APPS = Path(__file__).parent / "apps"
sys.path.insert(0, str(ROOT / "bench"))
import netpolgen  # noqa: E402

Answer = tuple[PortSet, tuple[str, ...]]


def pairwise(inputs: ConnectivityInputs) -> list[tuple[str, str, Answer]]:
    """The reference: one verdict() per ordered pair (allowed ports and notes)."""
    endpoints, _ = build_endpoints(inputs.workloads, inputs.namespaces)
    index = PolicyIndex(inputs.policies, inputs.namespaces)
    out = []
    for src in endpoints:
        for dst in endpoints:
            if src is dst and not src.self_pair:
                continue
            # a hostNetwork workload's second pod is on another node (its own endpoint)
            peer = dst.peer_of_itself() if src is dst else dst.endpoint
            v = index.verdict(src.endpoint, peer)
            out.append((src.id, dst.id, (v.allowed, v.notes)))
    return out


def check_same(inputs: ConnectivityInputs) -> int:
    report = compute_connectivity(inputs)
    every = pairwise(inputs)
    want = {(s, d): a for s, d, a in every if not a[0].empty}
    got = {(p.src.id, p.dst.id): (p.allowed, p.notes) for p in report.connected}
    assert sorted(got) == sorted(want)
    assert {k: v for k, v in got.items() if v != want[k]} == {}
    # the order is (src, dst) in endpoint order, as the pair loop gives it
    assert list(got) == list(want)
    fast = [(s.id, d.id, ports) for s, d, ports in report.connected_ports()]
    assert fast == [(s, d, a[0]) for (s, d), a in want.items()]
    assert report.connected_count == len(want)
    # every pair, connected or not, with its notes
    assert [(p.src.id, p.dst.id, (p.allowed, p.notes)) for p in report.pairs] == every
    assert len(every) == report.pair_count
    return len(want)


def _paths(d: Path, *names: str) -> InputSpec:
    return InputSpec(
        policies=(str(d / names[0]),),
        workloads=(str(d / names[1]),),
        namespaces=(str(d / names[2]),),
    )


@pytest.mark.parametrize("name", sorted(p.name for p in APPS.iterdir() if p.is_dir()))
def test_apps(name: str) -> None:
    d = APPS / name
    inputs = load_inputs(_paths(d, "policies.yaml", "workloads.yaml", "namespaces.yaml"))
    assert check_same(inputs) > 10


@pytest.mark.parametrize("seed", [1, 2])
def test_race_clusters(tmp_path: Path, seed: int) -> None:
    netpolgen.write_cluster(netpolgen.RaceSpec(150, seed), tmp_path)
    inputs = load_inputs(_paths(tmp_path, "policies", "workloads", "namespaces.yaml"))
    assert check_same(inputs) > 1000


def _netpol(ns: str, name: str, spec: str) -> str:
    return (
        f'{{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", '
        f'"metadata": {{"name": "{name}", "namespace": "{ns}"}}, "spec": {spec}}}'
    )


def _cilium(kind: str, ns: str | None, name: str, spec: str) -> str:
    meta = f'"name": "{name}"' + (f', "namespace": "{ns}"' if ns else "")
    return f'{{"apiVersion": "cilium.io/v2", "kind": "{kind}", "metadata": {{{meta}}}, "spec": {spec}}}'


def test_deny_without_isolation_and_named_egress(tmp_path: Path) -> None:
    """Senders not isolated but with egress deny rules, named egress ports resolved per
    receiver, entities peers (self pairs: the race clusters have multi-replica workloads)."""
    (tmp_path / "ns.yaml").write_text(
        docs(namespace("a", {"team": "x"}), namespace("b", {"team": "y"})), encoding="utf-8"
    )
    web = (("http", 8080, "TCP"), ("metrics", 9090, "TCP"))
    api = (("http", 8000, "TCP"), ("dns", 53, "UDP"))
    (tmp_path / "w.yaml").write_text(
        docs(
            pod("a", "web", {"app": "web"}, web),
            pod("a", "api", {"app": "api"}, api),
            pod("b", "web", {"app": "web"}, web),
            pod("b", "db", {"app": "db"}, (("sql", 5432, "TCP"),)),
            pod("b", "job", {"app": "job"}),
        ),
        encoding="utf-8",
    )
    (tmp_path / "p.yaml").write_text(
        docs(
            _cilium("CiliumClusterwideNetworkPolicy", None, "no-metrics",
                    '{"endpointSelector": {}, "enableDefaultDeny": {"egress": false}, '
                    '"egressDeny": [{"toEndpoints": [{}], '
                    '"toPorts": [{"ports": [{"port": "metrics"}]}]}]}'),
            _cilium("CiliumNetworkPolicy", "a", "web-out",
                    '{"endpointSelector": {"matchLabels": {"app": "web"}}, "egress": [{"toEndpoints": '
                    '[{"matchLabels": {"k8s:io.kubernetes.pod.namespace": "b"}}], "toPorts": '
                    '[{"ports": [{"port": "http"}, {"port": "sql"}]}]}, {"toEntities": ["cluster"], '
                    '"toPorts": [{"ports": [{"port": "53", "protocol": "UDP"}]}]}]}'),
            _netpol("b", "db", '{"podSelector": {"matchLabels": {"app": "db"}}, "policyTypes": '
                    '["Ingress"], "ingress": [{"from": [{"namespaceSelector": {"matchLabels": '
                    '{"team": "x"}}}], "ports": [{"port": "sql"}]}]}'),
            _netpol("b", "deny-in", '{"podSelector": {"matchLabels": {"app": "web"}}, '
                    '"policyTypes": ["Ingress"]}'),
        ),
        encoding="utf-8",
    )  # fmt: skip
    inputs = load_inputs(_paths(tmp_path, "p.yaml", "w.yaml", "ns.yaml"))
    assert check_same(inputs) > 5


def test_notes_of_connected_and_unconnected_pairs(tmp_path: Path) -> None:
    """L7 and FQDN rules leave notes on the pairs they allow; a sender whose egress has an
    FQDN rule carries that note to receivers it cannot reach too (what verdict() says)."""
    (tmp_path / "ns.yaml").write_text(
        docs(namespace("a", {}), namespace("b", {})), encoding="utf-8"
    )
    web = (("http", 8080, "TCP"),)
    (tmp_path / "w.yaml").write_text(
        docs(pod("a", "web", {"app": "web"}, web), pod("a", "cli", {"app": "cli"}),
             pod("b", "web", {"app": "web"}, web), pod("b", "cli", {"app": "cli"})),
        encoding="utf-8",
    )  # fmt: skip
    (tmp_path / "p.yaml").write_text(
        docs(
            _cilium("CiliumNetworkPolicy", "a", "web-l7",
                    '{"endpointSelector": {"matchLabels": {"app": "web"}}, "ingress": [{'
                    '"fromEndpoints": [{"matchLabels": {"app": "cli"}}], "toPorts": [{"ports": '
                    '[{"port": "8080", "protocol": "TCP"}], "rules": {"http": [{"method": "GET"}]}}]}]}'),
            _cilium("CiliumNetworkPolicy", "b", "cli-out",
                    '{"endpointSelector": {"matchLabels": {"app": "cli"}}, "egress": ['
                    '{"toFQDNs": [{"matchName": "example.com"}]}, '
                    '{"toEndpoints": [{"matchLabels": {"app": "web"}}]}]}'),
        ),
        encoding="utf-8",
    )  # fmt: skip
    inputs = load_inputs(_paths(tmp_path, "p.yaml", "w.yaml", "ns.yaml"))
    assert check_same(inputs) > 3
    report = compute_connectivity(inputs)
    noted = {(p.src.id, p.dst.id): p.notes for p in report.pairs if p.notes}
    assert any("L7" in n for ns in noted.values() for n in ns), noted
    assert any(not p.connected and p.notes for p in report.pairs), noted
