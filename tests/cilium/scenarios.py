"""Seeded random clusters for the differential against Cilium's own engine.

A Scenario is plain data: agent options, 2-4 namespaces with labels, 3-8
workloads (labels, service account, named ports), 1-6 CiliumNetworkPolicy /
CiliumClusterwideNetworkPolicy objects (plus, now and then, a NetworkPolicy
and a Service), and the probe ports that tell the verdicts apart. It renders
to the oracle's JSON (`oracle_scenario`) and to a topogen.yaml with its input
files (`write_topogen_inputs`), so both sides read the same objects.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Scenario", "Workload", "generate", "oracle_scenario", "write_topogen_inputs"]

# identity-relevant or not under Cilium's default label filter: both kinds on purpose
POD_LABELS: dict[str, tuple[str, ...]] = {
    "app": ("web", "api", "db", "cache"),
    "tier": ("front", "back"),
    "zone": ("a", "b"),
    "topology.kubernetes.io/zone": ("z1", "z2"),
    "app.kubernetes.io/name": ("shop", "bank"),
    "example.com/team": ("red", "blue"),
    "pod-template-hash": ("h1", "h2"),
    "kubernetes.io/arch": ("amd64",),
    "batch.kubernetes.io/job-completion-index": ("0", "1"),
    "k8s.io/role": ("x",),
    "annotation-note": ("y",),
}
NS_LABELS: dict[str, tuple[str, ...]] = {
    "team": ("red", "blue"),
    "env": ("prod", "dev"),
    "beta.kubernetes.io/os": ("linux",),
}
NODE_LABELS: dict[str, tuple[str, ...]] = {
    "node-pool": ("gpu", "cpu"),
    "topology.kubernetes.io/zone": ("z1", "z2"),
    "rack": ("r1", "r2"),
}
NAMESPACES = ("alpha", "beta", "gamma", "delta")
SERVICE_ACCOUNTS = ("default", "sa-one", "sa-two")
NAMED_PORTS = (
    ("http", 8080, "TCP"),
    ("http", 8081, "TCP"),
    ("grpc", 9090, "TCP"),
    ("dns", 53, "UDP"),
    ("metrics", 9100, "TCP"),
    ("sctp-x", 7000, "SCTP"),
)
ENTITIES_POD = ("all", "cluster", "cluster-mesh")
ENTITIES_OTHER = (
    "world",
    "host",
    "remote-node",
    "kube-apiserver",
    "none",
    "health",
    "ingress",
    "init",
    "unmanaged",
)
LABEL_FILTERS: tuple[tuple[str, ...], ...] = (
    (),
    ("k8s:topology.kubernetes.io/zone",),
    ("k8s:app", "k8s:tier", "k8s:zone"),
    ("k8s:!tier",),
    ("k8s:app", "k8s:topology.kubernetes.io/zone", "!k8s:app.kubernetes.io"),
    ("topology.kubernetes.io/zone", "app", "zone", "example.com"),
    ("k8s:app$", "k8s:.*zone"),
    ("!app", "!k8s:zone$"),
)
BASE_PORTS = (1, 53, 80, 443, 5000, 7000, 8080, 8081, 9090, 9100, 65535)


@dataclass
class Workload:
    namespace: str
    name: str
    labels: dict[str, str]
    service_account: str  # "" : none set (the API server's "default")
    ports: list[tuple[str, int, str]]
    replicas: int  # 1: a Pod (no pair with itself); 2: a Deployment

    @property
    def id(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass
class Scenario:
    name: str
    seed: int
    labels: tuple[str, ...]
    enforcement: str
    namespaces: dict[str, dict[str, str]]
    workloads: list[Workload]
    policies: list[dict[str, Any]]
    services: list[dict[str, Any]] = field(default_factory=list)
    ports: set[int] = field(default_factory=set)  # mentioned by policies
    # host endpoints: node name -> labels (the pods run on another node, "pods")
    nodes: dict[str, dict[str, str]] = field(default_factory=dict)
    host_firewall: bool = False
    node_selector_labels: bool = False

    def probes(self) -> list[tuple[str, int]]:
        numbers: set[int] = set(BASE_PORTS)
        for p in self.ports:
            numbers.update(q for q in (p - 1, p, p + 1) if 1 <= q <= 65535)
        for w in self.workloads:
            numbers.update(n for _, n, _ in w.ports)
        return [(proto, n) for proto in ("TCP", "UDP", "SCTP") for n in sorted(numbers)]


class _Gen:
    def __init__(self, rng: random.Random, sc: Scenario) -> None:
        self.r = rng
        self.sc = sc

    def key(self, key: str) -> str:
        return f"k8s:{key}" if self.r.random() < 0.3 else key

    def pod_pair(self) -> tuple[str, str]:
        k = self.r.choice(list(POD_LABELS))
        return k, self.r.choice(POD_LABELS[k])

    def selector(self, *, peer: bool, namespaced: bool) -> dict[str, Any]:
        r = self.r
        if r.random() < 0.15:
            return {}
        labels: dict[str, str] = {}
        exprs: list[dict[str, Any]] = []
        for _ in range(r.choice((0, 1, 1, 2))):
            k, v = self.pod_pair()
            labels[self.key(k)] = v
        for _ in range(r.choice((0, 0, 1, 2))):
            k = r.choice(list(POD_LABELS))
            op = r.choice(("In", "NotIn", "Exists", "DoesNotExist"))
            e: dict[str, Any] = {"key": self.key(k), "operator": op}
            if op in ("In", "NotIn"):
                e["values"] = sorted({*r.sample(POD_LABELS[k], k=1), r.choice(POD_LABELS[k])})
            exprs.append(e)
        special = r.random()
        ns_names = list(self.sc.namespaces)
        if peer or not namespaced:
            if special < 0.22:
                labels[self.key("io.kubernetes.pod.namespace")] = r.choice(ns_names)
            elif special < 0.34:
                k = r.choice(list(NS_LABELS))
                labels[self.key(f"io.cilium.k8s.namespace.labels.{k}")] = r.choice(NS_LABELS[k])
            elif special < 0.40:
                exprs.append(
                    {
                        "key": "io.cilium.k8s.namespace.labels.kubernetes.io/metadata.name",
                        "operator": "In",
                        "values": sorted(r.sample(ns_names, k=2)),
                    }
                )
            elif special < 0.52:
                labels[self.key("io.cilium.k8s.policy.serviceaccount")] = r.choice(SERVICE_ACCOUNTS)
            elif special < 0.56:
                labels[self.key("io.cilium.k8s.policy.cluster")] = r.choice(("default", "other"))
        elif special < 0.12:
            # a CNP endpointSelector naming a namespace (maybe not its own)
            labels[self.key("io.kubernetes.pod.namespace")] = r.choice(ns_names)
        elif special < 0.2:
            labels[self.key("io.cilium.k8s.policy.serviceaccount")] = r.choice(SERVICE_ACCOUNTS)
        out: dict[str, Any] = {}
        if labels:
            out["matchLabels"] = labels
        if exprs:
            out["matchExpressions"] = exprs
        return out

    def port_entry(self, *, deny: bool, l7_ok: bool) -> dict[str, Any]:
        r = self.r
        if r.random() < 0.12:
            return {}  # a toPorts entry without ports: Cilium adds nothing for it
        ports = []
        for _ in range(r.choice((1, 1, 2, 3))):
            proto = r.choice(("TCP", "TCP", "UDP", "SCTP", "ANY", None))
            kind = r.random()
            p: dict[str, Any]
            if kind < 0.5:
                n = r.choice((53, 80, 443, 5000, 7000, 8080, 9090, r.randint(1000, 60000)))
                p = {"port": str(n)}
                self.sc.ports.add(n)
            elif kind < 0.7:
                lo = r.choice((5000, 8000, r.randint(1000, 60000)))
                hi = lo + r.choice((1, 10, 100))
                p = {"port": str(lo), "endPort": hi}
                self.sc.ports.update((lo, hi))
            elif kind < 0.9:
                p = {"port": r.choice(("http", "grpc", "dns", "metrics", "sctp-x", "HTTP"))}
            else:
                p = {"port": "0"}
            if proto:
                p["protocol"] = proto
            ports.append(p)
        entry: dict[str, Any] = {"ports": ports}
        tcp_numbers = all(
            p.get("protocol") == "TCP" and p["port"] not in ("0",) and "endPort" not in p
            for p in ports
        )
        if l7_ok and not deny and tcp_numbers and r.random() < 0.15:
            entry["rules"] = {"http": [{"method": "GET", "path": "/"}]}
        return entry

    def item(self, section: str, namespaced: bool) -> dict[str, Any]:
        r = self.r
        deny = section.endswith("Deny")
        side = "from" if section.startswith("ingress") else "to"
        item: dict[str, Any] = {}
        kind = r.random()
        if kind < 0.55:
            item[f"{side}Endpoints"] = [
                self.selector(peer=True, namespaced=namespaced) for _ in range(r.choice((1, 1, 2)))
            ]
        elif kind < 0.75:
            pool = ENTITIES_POD + ENTITIES_OTHER
            item[f"{side}Entities"] = sorted(set(r.sample(pool, k=r.choice((1, 2)))))
        elif kind < 0.8:
            item[f"{side}CIDR"] = ["10.0.0.0/8"]
        elif kind < 0.88 and side == "to" and not deny and self.sc.services:
            svc = r.choice(self.sc.services)
            way = r.random()
            if way < 0.45:
                ns = svc["namespace"] if r.random() < 0.8 else r.choice([*self.sc.namespaces, ""])
                item["toServices"] = [{"k8sService": {"serviceName": svc["name"], "namespace": ns}}]
            elif way < 0.9:
                item["toServices"] = [
                    {
                        "k8sServiceSelector": {
                            "selector": {"matchLabels": dict(svc["labels"])},
                            "namespace": svc["namespace"] if r.random() < 0.8 else "",
                        }
                    }
                ]
            else:  # a Service that does not exist
                item["toServices"] = [{"k8sService": {"serviceName": "missing"}}]
        elif kind < 0.86 and side == "from" and not deny:
            item["fromEndpoints"] = []  # an empty list selects nobody
        # else: L4 only (every peer), or nothing at all
        if r.random() < 0.5 or not item:
            if r.random() < 0.08 and not item:
                item["icmps"] = [{"fields": [{"type": 8, "family": "IPv4"}]}]
            else:
                entries = [
                    self.port_entry(deny=deny, l7_ok=not deny) for _ in range(r.choice((1, 1, 2)))
                ]
                if any(e.get("rules") for e in entries):
                    entries = [e for e in entries if e.get("rules")][:1]
                item["toPorts"] = entries
        if not deny and r.random() < 0.05:
            item["authentication"] = {"mode": "required"}
        return item

    def cilium_rule(self, namespaced: bool) -> dict[str, Any]:
        r = self.r
        rule: dict[str, Any] = {
            "endpointSelector": self.selector(peer=False, namespaced=namespaced)
        }
        sections = r.sample(
            ("ingress", "egress", "ingressDeny", "egressDeny"), k=r.choice((1, 1, 2, 3))
        )
        for s in sorted(sections):
            rule[s] = [self.item(s, namespaced) for _ in range(r.choice((1, 1, 2, 3)))]
        if r.random() < 0.15:
            rule["enableDefaultDeny"] = {
                d: r.random() < 0.3 for d in r.sample(("ingress", "egress"), k=r.choice((1, 2)))
            }
        return rule

    def node_selector(self) -> dict[str, Any]:
        r = self.r
        if r.random() < 0.2:
            return {}
        keys = [*NODE_LABELS, "kubernetes.io/hostname"]
        out: dict[str, Any] = {}
        for k in r.sample(keys, k=r.choice((1, 1, 2))):
            vals = NODE_LABELS.get(k) or tuple(self.sc.nodes)
            if r.random() < 0.75:
                out.setdefault("matchLabels", {})[k] = r.choice(vals)
            else:
                out.setdefault("matchExpressions", []).append(
                    {"key": k, "operator": r.choice(("In", "NotIn")), "values": [r.choice(vals)]}
                )
        return out

    def host_rule(self) -> dict[str, Any]:
        """A CCNP rule on nodes (applies only with the host firewall)."""
        r = self.r
        rule: dict[str, Any] = {"nodeSelector": self.node_selector()}
        for s in sorted(
            r.sample(("ingress", "egress", "ingressDeny", "egressDeny"), k=r.choice((1, 2)))
        ):
            side = "from" if s.startswith("ingress") else "to"
            items = []
            for _ in range(r.choice((1, 2))):
                k = r.random()
                item: dict[str, Any] = {}
                if k < 0.35 and self.sc.node_selector_labels:
                    item[f"{side}Nodes"] = [self.node_selector()]
                elif k < 0.65:
                    item[f"{side}Entities"] = sorted(
                        set(
                            r.sample(
                                ("host", "remote-node", "cluster", "all", "world", "health"),
                                k=r.choice((1, 2)),
                            )
                        )
                    )
                elif k < 0.85:
                    item[f"{side}Endpoints"] = [self.selector(peer=True, namespaced=False)]
                if r.random() < 0.5 or not item:
                    item["toPorts"] = [self.port_entry(deny=s.endswith("Deny"), l7_ok=False)]
                items.append(item)
            rule[s] = items
        return rule

    def netpol(self, name: str) -> dict[str, Any]:
        r = self.r
        ns = r.choice(list(self.sc.namespaces))
        spec: dict[str, Any] = {"podSelector": self.np_selector(POD_LABELS)}
        types = r.choice((["Ingress"], ["Egress"], ["Ingress", "Egress"], None))
        if types:
            spec["policyTypes"] = types
        for direction in ("ingress", "egress"):
            if r.random() < 0.6:
                side = "from" if direction == "ingress" else "to"
                rules = []
                for _ in range(r.choice((1, 2))):
                    rule: dict[str, Any] = {}
                    if r.random() < 0.75:
                        peers = []
                        for _ in range(r.choice((1, 2))):
                            k = r.random()
                            if k < 0.4:
                                peers.append({"podSelector": self.np_selector(POD_LABELS)})
                            elif k < 0.7:
                                peers.append({"namespaceSelector": self.np_selector(NS_LABELS)})
                            elif k < 0.9:
                                peers.append(
                                    {
                                        "namespaceSelector": self.np_selector(NS_LABELS),
                                        "podSelector": self.np_selector(POD_LABELS),
                                    }
                                )
                            else:
                                peers.append({"ipBlock": {"cidr": "10.0.0.0/8"}})
                        rule[side] = peers
                    if r.random() < 0.5:
                        ports = []
                        for _ in range(r.choice((1, 2))):
                            p: dict[str, Any] = {}
                            if r.random() < 0.8:
                                p["protocol"] = r.choice(("TCP", "UDP", "SCTP"))
                            k = r.random()
                            if k < 0.5:
                                n = r.choice((53, 80, 443, 8080, 9090))
                                p["port"] = n
                                self.sc.ports.add(n)
                            elif k < 0.7:
                                p["port"] = 5000
                                p["endPort"] = 5010
                                self.sc.ports.update((5000, 5010))
                            elif k < 0.9:
                                p["port"] = r.choice(("http", "grpc", "dns"))
                            ports.append(p)
                        rule["ports"] = ports
                    rules.append(rule)
                spec[direction] = rules
        return {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": name, "namespace": ns},
            "spec": spec,
        }

    def np_selector(self, pool: dict[str, tuple[str, ...]]) -> dict[str, Any]:
        r = self.r
        out: dict[str, Any] = {}
        if r.random() < 0.3:
            return out
        k = r.choice(list(pool))
        if r.random() < 0.7:
            out["matchLabels"] = {k: r.choice(pool[k])}
        else:
            out["matchExpressions"] = [{"key": k, "operator": r.choice(("Exists", "DoesNotExist"))}]
        return out


# shapes the API server or the agent refuses; one, now and then, goes into a rule item
BREAKAGES: tuple[tuple[str, Any], ...] = (
    ("fromEntities", ["world-ipv4"]),  # the agent knows it, the CRD's enum does not
    ("toPorts", [{"ports": [{"port": 80}]}]),  # a number, not a string
    ("toPorts", [{"ports": [{"protocol": "TCP"}]}]),  # no port
    ("toPorts", [{"ports": [{"port": "70000"}]}]),
    ("toPorts", [{"ports": [{"port": "53", "protocol": "UDP"}], "rules": {"http": [{}]}}]),
    ("icmps", [{"fields": [{"type": 8}]}]),  # together with toPorts below
    ("fromNodes", [{"matchLabels": {"a": "b"}}]),  # needs enable-node-selector-labels
    ("colour", "blue"),  # an unknown field
)


def _break(rule: dict[str, Any], r: random.Random) -> None:
    key, value = r.choice(BREAKAGES)
    section = next(s for s in ("ingress", "ingressDeny", "egress", "egressDeny") if s in rule)
    item = rule[section][0]
    if key == "fromEntities" and section.startswith("egress"):
        key = "toEntities"
    if key == "fromNodes" and section.startswith("egress"):
        key = "toNodes"
    item[key] = value
    if key == "icmps":
        item.setdefault("toPorts", [{"ports": [{"port": "80"}]}])


def generate(seed: int) -> Scenario:
    """One random cluster; the same seed gives the same scenario."""
    r = random.Random(seed)
    ns_names = r.sample(NAMESPACES, k=r.randint(2, 4))
    namespaces = {}
    for n in ns_names:
        labels = {}
        for k, vals in NS_LABELS.items():
            if r.random() < 0.6:
                labels[k] = r.choice(vals)
        namespaces[n] = labels
    sc = Scenario(
        name=f"s{seed}",
        seed=seed,
        labels=r.choice(LABEL_FILTERS) if r.random() < 0.45 else (),
        enforcement=r.choices(("default", "always", "never"), weights=(8, 1, 1))[0],
        namespaces=namespaces,
        workloads=[],
        policies=[],
    )
    for i in range(r.randint(3, 8)):
        labels = {"app": r.choice(POD_LABELS["app"])}
        for k in r.sample(list(POD_LABELS), k=r.randint(1, 4)):
            labels[k] = r.choice(POD_LABELS[k])
        ports = []
        for name, num, proto in r.sample(NAMED_PORTS, k=r.choice((0, 1, 2))):
            if name not in {p[0] for p in ports}:
                ports.append((name, num, proto))
        sc.workloads.append(
            Workload(
                namespace=r.choice(ns_names),
                name=f"w{i}",
                labels=labels,
                service_account=r.choice(("", *SERVICE_ACCOUNTS)),
                ports=ports,
                replicas=r.choice((1, 2, 2)),
            )
        )
    for i in range(r.choice((0, 0, 1, 2))):
        target = r.choice(sc.workloads)
        svc_labels = {"svc": f"s{i % 2}"}
        selector = {"app": target.labels["app"]} if r.random() < 0.75 else {}
        if selector and r.random() < 0.3:
            selector["tier"] = r.choice(POD_LABELS["tier"])
        sc.services.append(
            {
                "namespace": target.namespace,
                "name": f"svc{i}",
                "labels": svc_labels,
                "selector": selector,
            }
        )
    if r.random() < 0.3:
        for n in ("n1", "n2", "n3")[: r.randint(2, 3)]:
            sc.nodes[n] = {k: r.choice(v) for k, v in NODE_LABELS.items()}
            sc.nodes[n]["kubernetes.io/hostname"] = n
        sc.host_firewall = r.random() < 0.6
        sc.node_selector_labels = r.random() < 0.5
    g = _Gen(r, sc)
    for i in range(r.randint(1, 2) if sc.nodes else 0):
        body = {"specs": [g.host_rule()]} if r.random() < 0.3 else {"spec": g.host_rule()}
        sc.policies.append(
            {
                "apiVersion": "cilium.io/v2",
                "kind": "CiliumClusterwideNetworkPolicy",
                "metadata": {"name": f"host{i}"},
                **body,
            }
        )
    for i in range(r.randint(1, 6)):
        kind = r.random()
        if kind < 0.15:
            sc.policies.append(g.netpol(f"np{i}"))
            continue
        namespaced = kind < 0.7
        body: dict[str, Any] = {}
        if r.random() < 0.2:
            body["specs"] = [g.cilium_rule(namespaced) for _ in range(r.choice((1, 2)))]
        else:
            body["spec"] = g.cilium_rule(namespaced)
        if r.random() < 0.03:
            _break((body.get("specs") or [body.get("spec")])[0], r)
        meta: dict[str, Any] = {"name": f"p{i}"}
        if namespaced:
            meta["namespace"] = r.choice(ns_names)
        sc.policies.append(
            {
                "apiVersion": "cilium.io/v2",
                "kind": "CiliumNetworkPolicy" if namespaced else "CiliumClusterwideNetworkPolicy",
                "metadata": meta,
                **body,
            }
        )
    return sc


def oracle_scenario(sc: Scenario) -> dict[str, Any]:
    return {
        "name": sc.name,
        "agent": {
            "labels": list(sc.labels),
            "policyEnforcement": sc.enforcement,
            "hostFirewall": sc.host_firewall,
            "nodeSelectorLabels": sc.node_selector_labels,
        },
        "nodes": [{"name": n, "labels": labels} for n, labels in sc.nodes.items()],
        "namespaces": [{"name": n, "labels": labels} for n, labels in sc.namespaces.items()],
        "services": [
            {
                "namespace": s["namespace"],
                "name": s["name"],
                "labels": s["labels"],
                "selector": s["selector"],
                "backends": [] if s["selector"] else ["10.1.2.3"],
            }
            for s in sc.services
        ],
        "policies": sc.policies,
        "endpoints": [
            {
                "name": w.id,
                "namespace": w.namespace,
                "labels": w.labels,
                "serviceAccount": w.service_account,
                "node": "pods",
                "ports": [{"name": n, "containerPort": p, "protocol": pr} for n, p, pr in w.ports],
            }
            for w in sc.workloads
        ]
        + [{"name": f"host/{n}", "host": True, "node": n} for n in sc.nodes],
        "probes": [{"protocol": p, "port": n} for p, n in sc.probes()],
    }


def _workload_object(w: Workload) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "x"}
    if w.ports:
        container["ports"] = [
            {"name": n, "containerPort": p, "protocol": pr} for n, p, pr in w.ports
        ]
    spec: dict[str, Any] = {"containers": [container]}
    if w.service_account:
        spec["serviceAccountName"] = w.service_account
    meta = {"name": w.name, "namespace": w.namespace}
    if w.replicas == 1:
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {**meta, "labels": w.labels},
            "spec": spec,
        }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {
            "replicas": w.replicas,
            "selector": {"matchLabels": w.labels},
            "template": {"metadata": {"labels": w.labels}, "spec": spec},
        },
    }


def write_topogen_inputs(sc: Scenario, folder: Path) -> Path:
    """topogen.yaml and its inputs (JSON documents, which are YAML) under `folder`."""
    folder.mkdir(parents=True, exist_ok=True)

    def dump(name: str, objs: list[dict[str, Any]]) -> None:
        (folder / name).write_text("\n---\n".join(json.dumps(o) for o in objs) + "\n")

    dump(
        "nodes.yaml",
        [
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "z1"}},
            }
        ],
    )
    dump(
        "namespaces.yaml",
        [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n, "labels": labels}}
            for n, labels in sc.namespaces.items()
        ],
    )
    services = [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": s["name"], "namespace": s["namespace"], "labels": s["labels"]},
            "spec": {"selector": s["selector"], "ports": [{"port": 80}]}
            if s["selector"]
            else {"ports": [{"port": 80}]},
        }
        for s in sc.services
    ]
    dump("policies.yaml", sc.policies + services)
    dump("workloads.yaml", [_workload_object(w) for w in sc.workloads])
    cilium: dict[str, Any] = {
        "policyEnforcement": sc.enforcement,
        "hostFirewall": sc.host_firewall,
        "nodeSelectorLabels": sc.node_selector_labels,
    }
    if sc.labels:
        cilium["identityLabels"] = list(sc.labels)
    config = {
        "apiVersion": "topogen.io/v1alpha1",
        "kind": "TopogenConfig",
        "clusters": [
            {
                "name": "c",
                "nodes": ["nodes.yaml"],
                "networkPolicies": ["policies.yaml"],
                "namespaces": ["namespaces.yaml"],
                "cilium": cilium,
            }
        ],
        "workloads": ["workloads.yaml"],
        "groups": [
            {
                "name": "g",
                "profile": "custom",
                "namespaces": list(sc.namespaces),
                "groupLabel": "app",
                "roleLabel": "tier",
                "coordinatorRoles": ["front"],
                "workerRoles": ["back"],
            }
        ],
    }
    path = folder / "topogen.yaml"
    path.write_text(json.dumps(config, indent=1) + "\n")
    return path
