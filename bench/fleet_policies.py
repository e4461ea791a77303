"""The fleet's network policies (bench/fleet.py): Cilium and Kubernetes policies mixing
endpoint, entity, CIDR, FQDN, deny and host rules, zone-keyed training isolation."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from fleet_base import JOB_LABEL, SERVICES, ZONE, FleetSpec, Team, region_of

# --- network policies --------------------------------------------------------------------


def _cnp(name: str, ns: str, spec: dict[str, Any] | None = None,
         specs: list[dict[str, Any]] | None = None) -> dict[str, Any]:  # fmt: skip
    body: dict[str, Any] = {
        "apiVersion": "cilium.io/v2",
        "kind": "CiliumNetworkPolicy" if ns else "CiliumClusterwideNetworkPolicy",
        "metadata": {"name": name, **({"namespace": ns} if ns else {})},
    }
    if spec is not None:
        body["spec"] = spec
    if specs is not None:
        body["specs"] = specs
    return body


def _np(name: str, ns: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }


_DNS = {"toEndpoints": [{"matchLabels": {"io.kubernetes.pod.namespace": "kube-system",
                                         "k8s-app": "kube-dns"}}],
        "toPorts": [{"ports": [{"port": "53", "protocol": "ANY"}]}]}  # fmt: skip


def _training_policies(team: Team, rng: random.Random) -> list[dict[str, Any]]:
    ns, job = team.namespace, JOB_LABEL[team.profile]
    out = [
        _np("default-deny", ns, {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}),
        _cnp("allow-egress-basics", ns, {
            "endpointSelector": {},
            "egress": [
                _DNS,
                {"toEntities": ["kube-apiserver"]},
                {"toFQDNs": [{"matchPattern": "*.s3.amazonaws.com"}],
                 "toPorts": [{"ports": [{"port": "443", "protocol": "TCP"}]}]},
                {"toCIDRSet": [{"cidr": "0.0.0.0/0", "except": ["169.254.169.254/32"]}],
                 "toPorts": [{"ports": [{"port": "443", "protocol": "TCP"}]}]},
            ],
        }),
        _cnp("allow-metrics-scrape", ns, {
            "endpointSelector": {"matchExpressions": [{"key": job, "operator": "Exists"}]},
            "ingress": [{
                "fromEndpoints": [{"matchLabels": {
                    "k8s:io.kubernetes.pod.namespace": "monitoring",
                    "app.kubernetes.io/name": "prometheus"}}],
                "toPorts": [{"ports": [{"port": "9400", "protocol": "TCP"},
                                       {"port": "metrics", "protocol": "TCP"}]}],
            }],
        }),
    ]  # fmt: skip
    if not team.isolated:
        out.append(
            _np("allow-same-namespace", ns, {
                "podSelector": {},
                "ingress": [{"from": [{"podSelector": {}}]}],
                "egress": [{"to": [{"podSelector": {}}]}],
                "policyTypes": ["Ingress", "Egress"],
            })
        )  # fmt: skip
    debug = rng.random()
    if debug < 0.3 and (team.group.get("ports") or debug < 0.02):
        # debugger ports nobody should reach (groups that declare no ports need every port,
        # so only those that declare theirs get it); now and then a range that hits the
        # rendezvous ports (29400-29410) of the group itself, which no domain can then hold
        first, last = (29400, 29405) if debug < 0.02 else (5678, 5680)
        out.append(
            _cnp("deny-debug-ports", ns, {
                "enableDefaultDeny": {"egress": False, "ingress": False},
                "endpointSelector": {"matchExpressions": [{"key": job, "operator": "Exists"}]},
                "ingressDeny": [{"fromEntities": ["cluster"],
                                 "toPorts": [{"ports": [{"port": str(first), "endPort": last,
                                                         "protocol": "TCP"}]}]}],
            })
        )  # fmt: skip
    out.append(
        _cnp("deny-from-sandbox", ns, {
            "endpointSelector": {},
            "enableDefaultDeny": {"egress": False, "ingress": False},
            "ingressDeny": [{"fromEndpoints": [{"matchLabels": {
                "k8s:io.kubernetes.pod.namespace": "sandbox"}}]}],
        })
    )  # fmt: skip
    return out


def _zone_isolation(teams: list[Team], zones: list[str]) -> list[dict[str, Any]]:
    """Per job label: one CCNP, one rule per zone: training pods talk within their zone."""
    out = []
    for job in sorted({JOB_LABEL[t.profile] for t in teams if t.isolated}):
        nss = sorted(t.namespace for t in teams if t.isolated and JOB_LABEL[t.profile] == job)
        specs = []
        for z in zones:
            peer = {"matchLabels": {ZONE: z},
                    "matchExpressions": [{"key": "k8s:io.kubernetes.pod.namespace",
                                          "operator": "In", "values": nss}]}  # fmt: skip
            specs.append(
                {
                    "description": f"{z} training pods",
                    "endpointSelector": {
                        "matchLabels": {f"k8s:{ZONE}": z},
                        "matchExpressions": [
                            {"key": f"k8s:{job}", "operator": "Exists"},
                            {"key": "k8s:io.kubernetes.pod.namespace", "operator": "In",
                             "values": nss},
                        ],
                    },
                    "ingress": [{"fromEndpoints": [peer]}],
                    "egress": [{"toEndpoints": [peer]}],
                }
            )  # fmt: skip
        short = job.split("/")[0].split(".")[0]
        out.append(_cnp(f"training-zone-isolation-{short}", "", specs=specs))
    return out


def _host_policies(zones: list[str]) -> list[dict[str, Any]]:
    """Host firewall of the GPU nodes, one CCNP per region: NCCL/EFA only within a zone."""
    out = []
    for region in sorted({region_of(z) for z in zones}):
        specs = [
            {
                "nodeSelector": {"matchLabels": {"node-pool": "gpu", ZONE: z}},
                "ingress": [
                    {"fromNodes": [{"matchLabels": {ZONE: z}}]},
                    {"fromEntities": ["health", "kube-apiserver", "remote-node"],
                     "toPorts": [{"ports": [{"port": "10250", "protocol": "TCP"},
                                            {"port": "4240", "protocol": "TCP"}]}]},
                ],
            }
            for z in zones
            if region_of(z) == region
        ]  # fmt: skip
        out.append(_cnp(f"gpu-host-firewall-{region}", "", specs=specs))
    return out


def _cluster_policies() -> list[dict[str, Any]]:
    return [
        _cnp("allow-dns-everywhere", "", {
            "endpointSelector": {},
            "egress": [_DNS],
            "enableDefaultDeny": {"egress": False, "ingress": False},
        }),
        _cnp("deny-instance-metadata", "", {
            "enableDefaultDeny": {"egress": False, "ingress": False},
            "endpointSelector": {"matchExpressions": [{
                "key": "k8s:io.kubernetes.pod.namespace", "operator": "NotIn",
                "values": ["kube-system"]}]},
            "egressDeny": [{"toCIDR": ["169.254.169.254/32"]}],
        }),
        _cnp("deny-smtp", "", {
            "endpointSelector": {},
            "enableDefaultDeny": {"egress": False, "ingress": False},
            "egressDeny": [{"toEntities": ["world"],
                            "toPorts": [{"ports": [{"port": "25", "protocol": "TCP"}]}]}],
        }),
    ]  # fmt: skip


def _app_policies(ns: str, k: int) -> Iterator[dict[str, Any]]:
    """A microservice namespace: deny by default, tier to tier, ingress from the edge."""
    yield _np("default-deny", ns, {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]})
    yield _np("allow-from-team", ns, {
        "podSelector": {"matchLabels": {"tier": "web"}},
        "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": f"t{k % 5}"}},
                               "podSelector": {"matchLabels": {"app.kubernetes.io/part-of":
                                                               "frontend"}}}],
                     "ports": [{"port": 8080, "protocol": "TCP"}]}],
        "policyTypes": ["Ingress"],
    })  # fmt: skip
    for a, b, port in (("web", "api", "8080"), ("api", "db", "sql"), ("api", "cache", "6379")):
        yield _cnp(f"{a}-to-{b}", ns, {
            "endpointSelector": {"matchLabels": {"tier": b}},
            "ingress": [{"fromEndpoints": [{"matchLabels": {"tier": a}}],
                         "toPorts": [{"ports": [{"port": port, "protocol": "TCP"}]}]}],
        })  # fmt: skip
    yield _cnp("edge-ingress", ns, {
        "endpointSelector": {"matchLabels": {"tier": "web"}},
        "ingress": [{"fromEntities": ["ingress", "world"],
                     "toPorts": [{"ports": [{"port": "8443", "protocol": "TCP"}]}]}],
    })  # fmt: skip
    yield _cnp("egress-partners", ns, {
        "endpointSelector": {"matchLabels": {"tier": "api"}},
        "egress": [
            {"toCIDRSet": [{"cidr": f"203.0.{k % 250}.0/24"}],
             "toPorts": [{"ports": [{"port": "443", "protocol": "TCP"}]}]},
            {"toFQDNs": [{"matchName": f"partner{k}.example.com"}]},
            _DNS,
        ],
    })  # fmt: skip
    yield _cnp("deny-ssh", ns, {
        "endpointSelector": {},
        "enableDefaultDeny": {"egress": False, "ingress": False},
        "ingressDeny": [{"fromEntities": ["world", "cluster"],
                         "toPorts": [{"ports": [{"port": "22", "protocol": "TCP"}]}]}],
    })  # fmt: skip
    yield _cnp("l4-health", ns, {
        "endpointSelector": {"matchExpressions": [{"key": "tier", "operator": "In",
                                                   "values": ["api", "web"]}]},
        "ingress": [{"toPorts": [{"ports": [{"port": "8081", "protocol": "TCP"}]}]}],
    })  # fmt: skip


def make_policies(
    rng: random.Random, spec: FleetSpec, teams: list[Team], zones: list[str]
) -> tuple[list[dict[str, Any]], list[str]]:
    """Exactly spec.policies objects (training and cluster ones first), and the app namespaces."""
    essential = _zone_isolation(teams, zones) + _host_policies(zones) + _cluster_policies()
    for t in teams:
        essential += _training_policies(t, rng)
    out = essential[: spec.policies]
    apps: list[str] = []
    k = 0
    while len(out) < spec.policies:
        ns = f"svc-{SERVICES[k % len(SERVICES)]}-{k:03d}"
        apps.append(ns)
        for p in _app_policies(ns, k):
            if len(out) < spec.policies:
                out.append(p)
        k += 1
    return out, apps
