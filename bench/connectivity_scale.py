"""Time `topogen connectivity` on 500 workloads and 500 policies (issue 10).

    .venv/bin/python bench/connectivity_scale.py [--workloads 500] [--policies 500]

Writes a synthetic cluster to a temporary folder: 50 namespaces of 10 workloads
(three tiers per app, named container ports), and per namespace a default deny
NetworkPolicy, CiliumNetworkPolicies allowing tier to tier on numbered, ranged
and named ports, NetworkPolicies admitting other namespaces by namespaceSelector,
an ingressDeny rule, and a few CiliumClusterwideNetworkPolicies. Prints the time
to read the inputs, to compute every ordered pair, and to render each format.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from topogen.connectivity import (
    InputSpec,
    compute_connectivity,
    connectivity_csv,
    connectivity_json,
    connectivity_table,
    load_inputs,
)

TIERS = ("web", "api", "db")


def _workload(ns: str, i: int) -> dict[str, Any]:
    tier = TIERS[i % 3]
    app = f"app{i // 3}"
    ports = [{"name": "http", "containerPort": 8080}, {"name": "metrics", "containerPort": 9090}]
    if tier == "db":
        ports = [{"name": "sql", "containerPort": 5432}, {"name": "metrics", "containerPort": 9090}]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": f"{app}-{tier}-{i}", "namespace": ns},
        "spec": {
            "replicas": 1 + i % 3,
            "selector": {"matchLabels": {"app": app, "tier": tier}},
            "template": {
                "metadata": {"labels": {"app": app, "tier": tier, "team": f"t{i % 4}"}},
                "spec": {"containers": [{"name": "c", "image": "x", "ports": ports}]},
            },
        },
    }


def _policies(ns: str, k: int, budget: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "default-deny", "namespace": ns},
            "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
        },
        {
            "apiVersion": "cilium.io/v2",
            "kind": "CiliumNetworkPolicy",
            "metadata": {"name": "web-to-api", "namespace": ns},
            "spec": {
                "endpointSelector": {"matchLabels": {"tier": "api"}},
                "ingress": [
                    {
                        "fromEndpoints": [{"matchLabels": {"tier": "web"}}],
                        "toPorts": [{"ports": [{"port": "http", "protocol": "TCP"}]}],
                    }
                ],
            },
        },
        {
            "apiVersion": "cilium.io/v2",
            "kind": "CiliumNetworkPolicy",
            "metadata": {"name": "egress", "namespace": ns},
            "spec": {
                "endpointSelector": {},
                "egress": [
                    {
                        "toEndpoints": [{}],
                        "toPorts": [
                            {"ports": [{"port": "8000", "endPort": 9999, "protocol": "ANY"}]}
                        ],
                    },
                    {
                        "toEndpoints": [
                            {
                                "matchLabels": {
                                    "k8s:io.kubernetes.pod.namespace": f"ns{(k + 1) % 50}"
                                }
                            }
                        ]
                    },
                ],
            },
        },
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "api-to-db", "namespace": ns},
            "spec": {
                "podSelector": {"matchLabels": {"tier": "db"}},
                "ingress": [
                    {
                        "from": [{"podSelector": {"matchLabels": {"tier": "api"}}}],
                        "ports": [{"port": "sql"}],
                    },
                    {
                        "from": [
                            {
                                "namespaceSelector": {"matchLabels": {"ring": str((k - 1) % 5)}},
                                "podSelector": {"matchLabels": {"tier": "api"}},
                            }
                        ],
                        "ports": [{"port": 5432}],
                    },
                ],
            },
        },
        {
            "apiVersion": "cilium.io/v2",
            "kind": "CiliumNetworkPolicy",
            "metadata": {"name": "no-metrics-from-web", "namespace": ns},
            "spec": {
                "endpointSelector": {},
                "ingress": [{"fromEndpoints": [{}]}],
                "ingressDeny": [
                    {
                        "fromEndpoints": [{"matchLabels": {"tier": "web"}}],
                        "toPorts": [{"ports": [{"port": "metrics"}]}],
                    }
                ],
            },
        },
    ]
    for j in range(max(0, budget - len(out))):
        out.append(
            {
                "apiVersion": "cilium.io/v2",
                "kind": "CiliumNetworkPolicy",
                "metadata": {"name": f"app{j}-monitoring", "namespace": ns},
                "spec": {
                    "endpointSelector": {"matchLabels": {"app": f"app{j}"}},
                    "ingress": [
                        {
                            "fromEndpoints": [
                                {"matchLabels": {"k8s:io.kubernetes.pod.namespace": "monitoring"}}
                            ],
                            "toPorts": [{"ports": [{"port": "metrics", "protocol": "TCP"}]}],
                        }
                    ],
                },
            }
        )
    return out[:budget]


def write_cluster(root: Path, n_workloads: int, n_policies: int) -> None:
    n_ns = max(1, n_workloads // 10)
    workloads: list[dict[str, Any]] = []
    policies: list[dict[str, Any]] = []
    namespaces = [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": f"ns{k}", "labels": {"ring": str(k % 5)}},
        }
        for k in range(n_ns)
    ]
    for k in range(n_ns):
        workloads += [_workload(f"ns{k}", i) for i in range(10)]
    per_ns = max(1, -(-(n_policies - 2) // n_ns))
    policies.append(
        {
            "apiVersion": "cilium.io/v2",
            "kind": "CiliumClusterwideNetworkPolicy",
            "metadata": {"name": "dns"},
            "spec": {
                "endpointSelector": {},
                "egress": [
                    {
                        "toEndpoints": [
                            {
                                "matchLabels": {
                                    "k8s:io.kubernetes.pod.namespace": "kube-system",
                                    "k8s-app": "kube-dns",
                                }
                            }
                        ],
                        "toPorts": [{"ports": [{"port": "53", "protocol": "ANY"}]}],
                    }
                ],
            },
        }
    )
    policies.append(
        {
            "apiVersion": "cilium.io/v2",
            "kind": "CiliumClusterwideNetworkPolicy",
            "metadata": {"name": "deny-ssh"},
            "spec": {
                "endpointSelector": {},
                "ingressDeny": [
                    {
                        "fromEntities": ["all"],
                        "toPorts": [{"ports": [{"port": "22", "protocol": "TCP"}]}],
                    }
                ],
            },
        }
    )
    for k in range(n_ns):
        policies += _policies(f"ns{k}", k, per_ns)
    (root / "workloads.yaml").write_text(yaml.safe_dump_all(workloads[:n_workloads]))
    (root / "policies.yaml").write_text(yaml.safe_dump_all(policies[:n_policies]))
    (root / "namespaces.yaml").write_text(yaml.safe_dump_all(namespaces))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", type=int, default=500)
    ap.add_argument("--policies", type=int, default=500)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_cluster(root, args.workloads, args.policies)
        t0, c0 = time.perf_counter(), time.process_time()
        inputs = load_inputs(
            InputSpec(
                policies=(str(root / "policies.yaml"),),
                workloads=(str(root / "workloads.yaml"),),
                namespaces=(str(root / "namespaces.yaml"),),
            )
        )
        t1, c1 = time.perf_counter(), time.process_time()
        report = compute_connectivity(inputs)
        t2, c2 = time.perf_counter(), time.process_time()
        timings: dict[str, tuple[float, float]] = {}
        for name, render in (
            ("table", connectivity_table),
            ("csv", connectivity_csv),
            ("json", connectivity_json),
        ):
            s, c = time.perf_counter(), time.process_time()
            render(report)
            timings[name] = (time.perf_counter() - s, time.process_time() - c)
    print(
        f"{len(inputs.workloads)} workloads, {len(inputs.policies.policies)} policies "
        f"({len(inputs.policies.rules)} rules), {report.pair_count} ordered pairs, "
        f"{report.connected_count} connected"
    )
    print("                   wall      cpu")
    print(f"read inputs      {t1 - t0:6.2f} s {c1 - c0:6.2f} s")
    print(f"compute pairs    {t2 - t1:6.2f} s {c2 - c1:6.2f} s")
    for name, (t, c) in timings.items():
        print(f"render {name:<9} {t:6.2f} s {c:6.2f} s")
    wall, cpu = t2 - t0 + timings["table"][0], c2 - c0 + timings["table"][1]
    print(f"total (table)    {wall:6.2f} s {cpu:6.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
