"""Seeded plain-Kubernetes NetworkPolicy clusters for the race with Cyclonus.

    .venv/bin/python bench/netpolgen.py --workloads 1000 --out DIR [--seed 1]

A cluster is namespaces with labels (team, env, ring; some without env), workloads of
five tiers per app (Deployments, StatefulSets, DaemonSets, one to three replicas) with
labels and named container ports (TCP, UDP, SCTP; one port name may mean different
numbers in different workloads), kube-dns in kube-system and Prometheus in monitoring,
and NetworkPolicies in proportion to the workloads (about seven per ten): default deny
(ingress, or both directions), tier-to-tier allows on numbered, named and ranged ports,
namespaceSelector and podSelector peers with matchLabels and matchExpressions (In,
NotIn, Exists, DoesNotExist), ipBlock peers with except, DNS egress, port-only rules,
allow-all rules, and policyTypes that leave a written section out.

Files, read by both engines (topogen the YAML; Cyclonus the policies and probe.json):

    DIR/namespaces.yaml        a List of Namespace objects
    DIR/workloads/<ns>.yaml    the workloads of one namespace
    DIR/policies/<ns>.yaml     a NetworkPolicyList per namespace, as the API server
                               stores them (policyTypes always present: Cyclonus
                               refuses a policy without it; the API server defaults it)
    DIR/probe.json             Cyclonus's `analyze --probe-path` file, made from the
                               YAML above (probe_model): one pod per workload, one
                               container per container port, pod IPs in 10.0.0.0/8

ipBlock CIDRs lie outside 10.0.0.0/8 or except it: topogen's inputs (manifests) carry
no pod IPs, so an ipBlock that covers a pod is not modelled on both sides.

The same seed gives byte-identical files: one random.Random, sorted keys, no clock.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import ipaddress
import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

__all__ = ["SIZES", "RaceSpec", "generate", "probe_model", "write_cluster"]

SIZES = {"small": 100, "medium": 1000, "large": 5000}
PER_NAMESPACE = 20
TIERS = ("web", "api", "worker", "db", "cache")
NS_NAME = "kubernetes.io/metadata.name"
POD_CIDR = ipaddress.ip_network("10.0.0.0/8")
EXTERNAL = ("203.0.113.0/24", "198.51.100.0/24", "192.0.2.0/24", "100.64.0.0/10")
Obj = dict[str, Any]


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Plain YAML: no anchors or aliases for objects the generator happens to share."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


@dataclass(frozen=True)
class RaceSpec:
    workloads: int
    seed: int = 1

    @property
    def name(self) -> str:
        return f"race-{self.workloads}w-s{self.seed}"


@dataclass
class Cluster:
    namespaces: list[Obj]
    workloads: dict[str, list[Obj]]  # namespace -> workloads
    policies: dict[str, list[Obj]]  # namespace -> NetworkPolicies


def generator_digest() -> str:
    """Changes whenever this module's source changes (the cache key of written clusters)."""
    src = inspect.getsource(sys.modules[__name__])
    return hashlib.sha256(src.encode()).hexdigest()[:10]


# --- namespaces and workloads ----------------------------------------------------------


def _namespace(name: str, labels: dict[str, str]) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {NS_NAME: name, **labels}},
    }


def _ports(rng: random.Random, tier: str) -> list[Obj]:
    """Container ports of one workload; names are reused across tiers with other numbers."""

    def p(name: str, number: int, proto: str = "TCP") -> Obj:
        out: Obj = {"containerPort": number, "protocol": proto}
        if name:
            out["name"] = name
        return out

    metrics = p("metrics", rng.choice((9090, 9100, 9187)))
    if tier == "web":
        return [p("http", rng.choice((8080, 80))), metrics]
    if tier == "api":
        main = p("grpc", 9000) if rng.random() < 0.4 else p("http", rng.choice((8000, 8080)))
        return [main, metrics]
    if tier == "worker":
        extra = [p("", 7000)] if rng.random() < 0.5 else [p("jobs", 7070, "UDP")]
        return [*extra, metrics]
    if tier == "db":
        sql = p("sql", rng.choice((5432, 3306)))
        return [sql, metrics] + ([p("diameter", 3868, "SCTP")] if rng.random() < 0.1 else [])
    return [p("redis", 6379), p("mc-udp", 11211, "UDP"), metrics]  # cache


def _workload(rng: random.Random, ns: str, app: str, tier: str, team: str) -> Obj:
    kind = "Deployment"
    if tier in ("db", "cache"):
        kind = "StatefulSet"
    elif tier == "worker" and rng.random() < 0.2:
        kind = "DaemonSet"
    labels = {"app": app, "tier": tier, "team": team}
    if rng.random() < 0.3:
        labels["version"] = rng.choice(("v1", "v2"))
    if rng.random() < 0.15:
        labels["track"] = "canary"
    if rng.random() < 0.2:
        labels["expose"] = "true"
    spec: Obj = {
        "selector": {"matchLabels": {"app": app, "tier": tier}},
        "template": {
            "metadata": {"labels": labels},
            "spec": {
                "containers": [
                    {"name": tier, "image": "registry.example/app:1", "ports": _ports(rng, tier)}
                ]
            },
        },
    }
    if kind != "DaemonSet":
        spec["replicas"] = rng.choice((1, 1, 2, 3))
    if kind == "StatefulSet":
        spec["serviceName"] = f"{app}-{tier}"
    api = "apps/v1"
    return {
        "apiVersion": api,
        "kind": kind,
        "metadata": {"name": f"{app}-{tier}", "namespace": ns},
        "spec": spec,
    }


def _infra() -> tuple[list[Obj], dict[str, list[Obj]]]:
    dns = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "coredns", "namespace": "kube-system"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"k8s-app": "kube-dns"}},
            "template": {
                "metadata": {"labels": {"k8s-app": "kube-dns"}},
                "spec": {
                    "containers": [
                        {
                            "name": "coredns",
                            "image": "registry.k8s.io/coredns/coredns:v1.12.0",
                            "ports": [
                                {"name": "dns", "containerPort": 53, "protocol": "UDP"},
                                {"name": "dns-tcp", "containerPort": 53, "protocol": "TCP"},
                                {"name": "metrics", "containerPort": 9153, "protocol": "TCP"},
                            ],
                        }
                    ]
                },
            },
        },
    }
    prom = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "prometheus", "namespace": "monitoring"},
        "spec": {
            "replicas": 1,
            "serviceName": "prometheus",
            "selector": {"matchLabels": {"app": "prometheus"}},
            "template": {
                "metadata": {"labels": {"app": "prometheus", "team": "platform"}},
                "spec": {
                    "containers": [
                        {
                            "name": "prometheus",
                            "image": "quay.io/prometheus/prometheus:v3.5.0",
                            "ports": [{"name": "web", "containerPort": 9090, "protocol": "TCP"}],
                        }
                    ]
                },
            },
        },
    }
    namespaces = [
        _namespace("kube-system", {"team": "platform"}),
        _namespace("monitoring", {"team": "platform", "purpose": "monitoring"}),
    ]
    return namespaces, {"kube-system": [dns], "monitoring": [prom]}


# --- policies --------------------------------------------------------------------------


def _np(ns: str, name: str, selector: Obj, types: list[str], **sections: list[Obj]) -> Obj:
    spec: Obj = {"podSelector": selector, "policyTypes": types}
    spec.update({k: v for k, v in sections.items()})
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }


def _sel(**labels: str) -> Obj:
    return {"matchLabels": dict(labels)} if labels else {}


def _expr(key: str, op: str, *values: str) -> Obj:
    out: Obj = {"key": key, "operator": op}
    if values:
        out["values"] = list(values)
    return out


def _port(rng: random.Random, named: str, number: int) -> Obj:
    """A policy port: by name, by number, or a range around the number."""
    roll = rng.random()
    if roll < 0.4:
        return {"port": named, "protocol": "TCP"} if rng.random() < 0.5 else {"port": named}
    if roll < 0.75:
        return {"port": number, "protocol": "TCP"}
    lo = number - number % 1000
    return {"port": lo, "endPort": lo + rng.choice((99, 999)), "protocol": "TCP"}


def _external(rng: random.Random) -> Obj:
    if rng.random() < 0.5:
        return {"ipBlock": {"cidr": rng.choice(EXTERNAL)}}
    return {"ipBlock": {"cidr": "0.0.0.0/0", "except": [str(POD_CIDR), "192.168.0.0/16"]}}


def _app_policies(rng: random.Random, ns: str, app: str, tiers: list[str]) -> list[Obj]:
    out: list[Obj] = []
    if "api" in tiers and rng.random() < 0.8:
        peers = [{"podSelector": _sel(app=app, tier="web")}]
        if rng.random() < 0.3:
            peers.append(
                {
                    "podSelector": {
                        "matchExpressions": [_expr("track", "NotIn", "canary")],
                        "matchLabels": {"app": app},
                    }
                }
            )
        out.append(_np(ns, f"{app}-api-from-web", _sel(app=app, tier="api"), ["Ingress"],
                       ingress=[{"from": peers, "ports": [_port(rng, "http", 8000), _port(rng, "grpc", 9000)]}]))  # fmt: skip
    if "db" in tiers and rng.random() < 0.7:
        egress = rng.random() < 0.3  # a lock-down: no egress rule, so no egress at all
        out.append(_np(ns, f"{app}-db", _sel(app=app, tier="db"), ["Ingress", "Egress"] if egress else ["Ingress"],
                       ingress=[{"from": [{"podSelector": _sel(app=app, tier="api")},
                                          {"podSelector": _sel(app=app, tier="worker")}],
                                 "ports": [_port(rng, "sql", 5432)]}]))  # fmt: skip
    if "web" in tiers and rng.random() < 0.5:
        peers = [{"namespaceSelector": {}}] if rng.random() < 0.5 else [_external(rng)]
        out.append(_np(ns, f"{app}-web-public", _sel(app=app, tier="web"), ["Ingress"],
                       ingress=[{"from": peers, "ports": [{"port": "http"}, {"port": 80}]}]))  # fmt: skip
    if "web" in tiers and rng.random() < 0.3:
        out.append(_np(ns, f"{app}-web-egress", _sel(app=app, tier="web"), ["Egress"],
                       egress=[{"to": [{"podSelector": _sel(app=app, tier="api")}],
                                "ports": [{"port": 8000, "endPort": 9100, "protocol": "TCP"}]},
                               {"to": [_external(rng)], "ports": [{"port": 443}]}]))  # fmt: skip
    if "cache" in tiers and rng.random() < 0.5:
        out.append(_np(ns, f"{app}-cache", _sel(app=app, tier="cache"), ["Ingress"],
                       ingress=[{"from": [{"podSelector": {"matchExpressions": [_expr("tier", "In", "api", "worker")]}}],
                                 "ports": [{"port": "redis"}, {"protocol": "UDP"}]}]))  # fmt: skip
    return out


def _namespace_policies(
    rng: random.Random, ns: str, labels: dict[str, str], teams: list[str]
) -> list[Obj]:
    out: list[Obj] = []
    roll = rng.random()
    deny_egress = roll < 0.15
    if roll < 0.85:
        out.append(
            _np(ns, "default-deny", {}, ["Ingress", "Egress"] if deny_egress else ["Ingress"])
        )
    if deny_egress or rng.random() < 0.1:
        dns = {
            "namespaceSelector": _sel(**{NS_NAME: "kube-system"}),
            "podSelector": _sel(**{"k8s-app": "kube-dns"}),
        }
        out.append(_np(ns, "allow-dns-and-local", {}, ["Egress"],
                       egress=[{"to": [dns], "ports": [{"port": 53, "protocol": "UDP"}, {"port": "dns-tcp", "protocol": "TCP"}]},
                               {"to": [{"podSelector": {}}]}]))  # fmt: skip
    if rng.random() < 0.6:
        prom = {
            "namespaceSelector": _sel(purpose="monitoring"),
            "podSelector": _sel(app="prometheus"),
        }
        out.append(
            _np(
                ns,
                "allow-metrics",
                {},
                ["Ingress"],
                ingress=[{"from": [prom], "ports": [{"port": "metrics"}]}],
            )
        )
    if rng.random() < 0.3:
        picked = sorted(rng.sample(teams, 2))
        peer = {"namespaceSelector": {"matchExpressions": [_expr("team", "In", *picked)]},
                "podSelector": {"matchExpressions": [_expr("tier", "In", "web", "api")]}}  # fmt: skip
        out.append(_np(ns, "allow-partner-teams", _sel(tier="api"), ["Ingress"],
                       ingress=[{"from": [peer], "ports": [{"port": 8000, "endPort": 8999}]}]))  # fmt: skip
    if rng.random() < 0.2:
        peer = {"namespaceSelector": {"matchExpressions": [_expr("env", "NotIn", "dev")]}}
        out.append(_np(ns, "allow-not-dev", {"matchExpressions": [_expr("expose", "Exists")]}, ["Ingress"],
                       ingress=[{"from": [peer]}]))  # fmt: skip
    if rng.random() < 0.15:
        sel = {"matchExpressions": [_expr("version", "DoesNotExist")]}
        out.append(_np(ns, "unversioned-same-ring", sel, ["Ingress"],
                       ingress=[{"from": [{"namespaceSelector": _sel(ring=labels.get("ring", "0"))}],
                                 "ports": [{"protocol": "UDP"}, {"protocol": "SCTP"}]}]))  # fmt: skip
    if (
        rng.random() < 0.1
    ):  # written egress policyTypes leaves out: Kubernetes ignores it, Cilium not
        out.append(_np(ns, "ingress-only-written-egress", _sel(tier="worker"), ["Ingress"],
                       ingress=[{}], egress=[{"to": [{"podSelector": _sel(tier="db")}]}]))  # fmt: skip
    if rng.random() < 0.1:  # and the reverse
        out.append(_np(ns, "egress-only-written-ingress", _sel(tier="cache"), ["Egress"],
                       egress=[{"ports": [{"port": 6379}]}], ingress=[{"from": [{"podSelector": {}}]}]))  # fmt: skip
    return out


# --- the cluster -----------------------------------------------------------------------


def generate(spec: RaceSpec) -> Cluster:
    rng = random.Random(spec.seed)
    namespaces, workloads = _infra()
    policies: dict[str, list[Obj]] = {}
    apps_left = spec.workloads - sum(len(w) for w in workloads.values())
    teams = [f"t{i}" for i in range(7)]
    k = 0
    while apps_left > 0:
        ns = f"ns-{k:04d}"
        labels = {"team": teams[k % len(teams)], "ring": str(k % 4)}
        if rng.random() < 0.85:
            labels["env"] = rng.choice(("prod", "staging", "dev"))
        namespaces.append(_namespace(ns, labels))
        items: list[Obj] = []
        pols = _namespace_policies(rng, ns, labels, teams)
        a = 0
        while len(items) < PER_NAMESPACE and apps_left > 0:
            app = f"app{a}"
            tiers = [t for t in TIERS if t in ("web", "api") or rng.random() < 0.6][:apps_left]
            team = labels["team"] if rng.random() < 0.8 else rng.choice(teams)
            items += [_workload(rng, ns, app, t, team) for t in tiers]
            apps_left -= len(tiers)
            pols += _app_policies(rng, ns, app, tiers)
            a += 1
        workloads[ns] = items
        if pols:
            policies[ns] = pols
        k += 1
    return Cluster(namespaces, workloads, policies)


def _dump_all(docs: list[Obj]) -> str:
    return yaml.dump_all(docs, Dumper=_Dumper, sort_keys=True, default_flow_style=False)


def cluster_files(cluster: Cluster) -> dict[str, str]:
    files = {
        "namespaces.yaml": _dump_all(
            [{"apiVersion": "v1", "kind": "List", "items": cluster.namespaces}]
        )
    }
    for ns, items in sorted(cluster.workloads.items()):
        files[f"workloads/{ns}.yaml"] = _dump_all(items)
    for ns, items in sorted(cluster.policies.items()):
        doc = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicyList", "items": items}
        files[f"policies/{ns}.yaml"] = _dump_all([doc])
    return files


def probe_model(root: Path) -> Obj:
    """Cyclonus's probe file for the cluster written under `root`, read back from its YAML.

    Resources: namespaces with their labels; one pod per workload (the template's labels,
    an IP in 10.0.0.0/8) with one container per container port. Probes: every served
    (port, protocol), for `analyze --mode probe`.
    """
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    ns_list = yaml.load((root / "namespaces.yaml").read_text(encoding="utf-8"), Loader=loader)
    namespaces = {
        n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in ns_list["items"]
    }
    pods: list[Obj] = []
    served: set[tuple[int, str]] = set()
    hosts = POD_CIDR.hosts()
    for path in sorted((root / "workloads").glob("*.yaml")):
        for w in yaml.load_all(path.read_text(encoding="utf-8"), Loader=loader):
            tmpl = w["spec"]["template"]
            containers = []
            for c in tmpl["spec"]["containers"]:
                for p in c.get("ports") or []:
                    proto = p.get("protocol", "TCP")
                    served.add((p["containerPort"], proto))
                    containers.append({"Name": f"{c['name']}-{p['containerPort']}-{proto.lower()}",
                                       "Port": p["containerPort"], "PortName": p.get("name", ""),
                                       "Protocol": proto})  # fmt: skip
            pods.append({"Namespace": w["metadata"]["namespace"], "Name": w["metadata"]["name"],
                         "Labels": tmpl["metadata"].get("labels") or {}, "IP": str(next(hosts)),
                         "Containers": containers})  # fmt: skip
    probes = [{"Port": port, "Protocol": proto} for port, proto in sorted(served)]
    return {"Resources": {"Namespaces": namespaces, "Pods": pods}, "Probes": probes}


def write_cluster(spec: RaceSpec, root: Path) -> list[str]:
    """Write the cluster's files under `root`; the relative paths written, sorted."""
    files = cluster_files(generate(spec))
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    probe = json.dumps(probe_model(root), indent=1, sort_keys=True) + "\n"
    (root / "probe.json").write_text(probe, encoding="utf-8")
    return sorted([*files, "probe.json"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", type=int, default=SIZES["small"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    written = write_cluster(RaceSpec(args.workloads, args.seed), args.out)
    print(f"wrote {len(written)} files under {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
