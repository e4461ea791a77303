"""Differential check: topogen's placement analysis against the real kube-scheduler.

Seeded random scenarios (zones, nodes without a zone, taints of every effect, cordoned
nodes, node selectors, required node affinity with every operator, tolerations, GPU
counts, required pod affinity to an earlier pod). Pods are created one at a time and
each is either bound or marked Unschedulable by the scheduler before the next. For
every pod, topogen's analysis.placement.place over the nodes' remaining allocatable
(and members.possible_zone_pairs for pod affinity) must contain the node and zone the
scheduler chose, and say "no eligible node" (UNSCHEDULABLE) exactly when the
scheduler leaves the pod Pending.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import pytest
from live_harness import BIND_TIMEOUT, ControlPlane, wait_until

from topogen.analysis.members import Member, possible_zone_pairs
from topogen.analysis.nodeindex import NodeIndex
from topogen.analysis.placed import Placement
from topogen.analysis.placement import place
from topogen.manifest import KubeObject
from topogen.model import Node, Topology, Workload
from topogen.sources.nodes import read_nodes
from topogen.sources.workloads import read_workloads

ZONE = "topology.kubernetes.io/zone"
GPU = "nvidia.com/gpu"
SCENARIOS_PER_TEST = 50
CHUNKS = 2  # 100 scenarios in all

TAINTS = [
    {"key": GPU, "value": "present", "effect": "NoSchedule"},
    {"key": "spot", "value": "true", "effect": "NoSchedule"},
    {"key": "maintenance", "effect": "NoExecute"},
    {"key": "soft", "value": "x", "effect": "PreferNoSchedule"},
]
TOLERATIONS = [
    {"key": GPU, "operator": "Exists", "effect": "NoSchedule"},
    {"key": "spot", "operator": "Equal", "value": "true"},
    {"key": "spot", "operator": "Equal", "value": "false", "effect": "NoSchedule"},
    {"operator": "Exists"},
    {"key": "maintenance", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
]


def _requirement(rng: random.Random, zones: list[str]) -> dict[str, Any]:
    kind = rng.randrange(7)
    if kind == 0:
        return {"key": ZONE, "operator": "In", "values": rng.sample(zones, rng.randint(1, 2))}
    if kind == 1:
        return {"key": ZONE, "operator": "NotIn", "values": [rng.choice(zones)]}
    if kind == 2:
        return {"key": "tier", "operator": rng.choice(["Exists", "DoesNotExist"])}
    if kind == 3:
        return {"key": "gpu-mem", "operator": "Gt", "values": [rng.choice(["20", "50"])]}
    if kind == 4:
        return {"key": "gpu-mem", "operator": "Lt", "values": [rng.choice(["20", "50"])]}
    if kind == 5:
        return {"key": "pool", "operator": "In", "values": rng.sample(["gpu", "cpu", "mem"], 2)}
    return {"key": ZONE, "operator": "Exists"}


def scenario(seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rng = random.Random(seed)
    zones = ["zone-a", "zone-b", "zone-c"][: rng.randint(2, 3)]
    nodes = []
    for i in range(rng.randint(3, 6)):
        name = f"s{seed}-n{i}"
        pool = rng.choice(["gpu", "gpu", "cpu", "mem"])
        labels = {"kubernetes.io/hostname": name, "pool": pool}
        if rng.random() > 0.1:
            labels[ZONE] = rng.choice(zones)
        if rng.random() < 0.5:
            labels["tier"] = rng.choice(["spot", "ondemand"])
        alloc = {
            "cpu": rng.choice(["2", "4", "8"]),
            "memory": rng.choice(["8Gi", "16Gi"]),
            "pods": "110",
        }
        if pool == "gpu":
            labels["gpu-mem"] = rng.choice(["16", "40", "80"])
            alloc[GPU] = rng.choice(["1", "2", "4"])
        spec: dict[str, Any] = {}
        taints = rng.sample(TAINTS, rng.choice([0, 0, 0, 1, 2]))
        if pool == "gpu" and rng.random() < 0.7 and TAINTS[0] not in taints:
            taints.append(TAINTS[0])
        if taints:
            spec["taints"] = taints
        if rng.random() < 0.1:
            spec["unschedulable"] = True
        nodes.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": labels},
                "spec": spec,
                "status": {"allocatable": alloc},
            }
        )
    pods = []
    for i in range(rng.randint(3, 6)):
        name = f"p{i}"
        cpu = rng.choice(["250m", "500m", "1", "2", "3"])
        resources: dict[str, Any] = {
            "requests": {"cpu": cpu, "memory": rng.choice(["512Mi", "1Gi", "4Gi"])}
        }
        gpus = rng.choice([0, 0, 0, 1, 1, 2])
        if gpus:
            resources["limits"] = {GPU: str(gpus)}
            if rng.random() < 0.5:
                resources["requests"][GPU] = str(gpus)
        spec: dict[str, Any] = {
            "containers": [{"name": "c", "image": "registry.example/x:1", "resources": resources}]
        }
        if rng.random() < 0.25:
            spec["nodeSelector"] = (
                {"pool": rng.choice(["gpu", "cpu"])}
                if rng.random() < 0.5
                else {ZONE: rng.choice(zones)}
            )
        if rng.random() < 0.35:
            terms = [
                {"matchExpressions": [_requirement(rng, zones) for _ in range(rng.randint(1, 2))]}
                for _ in range(rng.randint(1, 2))
            ]
            spec["affinity"] = {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
                }
            }
        if rng.random() < 0.6:
            spec["tolerations"] = rng.sample(TOLERATIONS, rng.randint(1, 2))
        if gpus and rng.random() < 0.7 and TOLERATIONS[0] not in spec.get("tolerations", []):
            spec.setdefault("tolerations", []).append(TOLERATIONS[0])
        if i > 0 and rng.random() < 0.2:
            target = f"p{rng.randrange(i)}"
            spec.setdefault("affinity", {})["podAffinity"] = {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"diff-pod": target}}, "topologyKey": ZONE}
                ]
            }
        pods.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "labels": {"diff-pod": name}},
                "spec": spec,
            }
        )
    return nodes, pods


@dataclass
class Tally:
    bound: int = 0
    pending: int = 0
    affinity: int = 0
    scenarios: int = 0
    choice: int = 0  # bound pods topogen allowed in more than one zone
    full: int = 0  # Pending for lack of free capacity, not of an eligible node


def _model_nodes(nodes: list[dict[str, Any]]) -> list[Node]:
    objs = [KubeObject("v1", "Node", "", n["metadata"]["name"], n, "scenario") for n in nodes]
    return read_nodes(objs, ZONE)


def _workload(pod: dict[str, Any]) -> Workload:
    meta = pod["metadata"]
    (w,) = read_workloads(
        [KubeObject("v1", "Pod", meta["namespace"], meta["name"], pod, "scenario")], []
    )
    return w


def _sync_scheduler(cluster: ControlPlane, ns: str, last_node: str) -> None:
    """Bind a probe to the newest node: the scheduler then has seen every node event."""
    probe = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "probe", "namespace": ns},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": last_node},
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "c", "image": "registry.example/x:1"}],
        },
    }
    cluster.create_pod(probe)
    # Under load the scheduler may try the probe before it has seen the node and mark it
    # Unschedulable; the node's arrival requeues it, so wait for the binding itself.
    wait_until(
        f"the probe pod bound to the newest node {last_node}",
        lambda: cluster.pod(ns, "probe")["spec"].get("nodeName") == last_node,
        BIND_TIMEOUT,
        cluster.scheduler,
        interval=0.02,
    )
    cluster.kube().delete(f"/api/v1/namespaces/{ns}/pods/probe", gracePeriodSeconds=0)


def run_scenario(cluster: ControlPlane, seed: int, tally: Tally) -> None:
    nodes, pods = scenario(seed)
    ns = f"diff-{seed}"
    cluster.reset()
    cluster.ensure_namespace(ns)
    cluster.create_nodes(nodes)
    _sync_scheduler(cluster, ns, nodes[-1]["metadata"]["name"])
    model = {n.name: n for n in _model_nodes(nodes)}
    free = {name: dict(n.allocatable) for name, n in model.items()}
    where: dict[str, Node | None] = {}
    members: dict[str, Member] = {}
    for pod in pods:
        pod["metadata"]["namespace"] = ns
        name = pod["metadata"]["name"]
        cluster.create_pod(pod)
        got = cluster.wait_scheduled(ns, [name])[name]
        w = _workload(pod)
        now = Topology(
            tuple(replace(n, allocatable=free[n.name]) for n in model.values()), ZONE, (GPU,)
        )
        eligible = place(w.template, NodeIndex(now))
        expected = {n.name for n in eligible.nodes}
        context = (
            f"seed {seed} pod {name}: scheduler -> {got or 'Pending'}; topogen eligible "
            f"{sorted(expected)} ({eligible.why_not()})"
        )
        for term in w.template.pod_affinity:
            tally.affinity += 1
            target = term.selector.match_labels[0][1]
            target_node = where.get(target)
            if target_node is None:
                expected = set()  # nothing matching is scheduled: the pod cannot go anywhere
                continue
            me = Member("worker", w, w.template, eligible)
            pairs = possible_zone_pairs([members[target], me], now)[(1, 0)]
            zones = {za for za, _ in pairs}
            expected = {n for n in expected if model[n].zone in zones}
        if got:
            assert got in expected, context
            assert model[got].zone in eligible.zones, context
            tally.bound += 1
            tally.choice += len({model[n].zone for n in expected}) > 1
            for res, want in w.template.requests.items():
                if res in free[got]:
                    free[got][res] -= want
            where[name] = model[got]
            members[name] = Member("worker", w, w.template, Placement((model[got],), {}))
        else:
            assert not expected, context  # topogen must call it UNSCHEDULABLE
            tally.pending += 1
            empty = Topology(tuple(model.values()), ZONE, (GPU,))
            tally.full += (
                bool(place(w.template, NodeIndex(empty)).nodes) and not w.template.pod_affinity
            )
            where[name] = None
    tally.scenarios += 1
    assert all(isinstance(v, Fraction) for f in free.values() for v in f.values())


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_placement_analysis_agrees_with_the_scheduler(cluster: ControlPlane, chunk: int) -> None:
    tally = Tally()
    first = chunk * SCENARIOS_PER_TEST
    for seed in range(first, first + SCENARIOS_PER_TEST):
        run_scenario(cluster, seed, tally)
    # the generator must exercise both outcomes and pod affinity
    assert tally.scenarios == SCENARIOS_PER_TEST
    assert tally.bound >= 60 and tally.pending >= 30 and tally.affinity >= 10, tally
    assert tally.choice >= 15 and tally.full >= 5, tally


def test_scenarios_are_reproducible() -> None:
    assert scenario(7) == scenario(7)
    kinds = Counter(p["metadata"]["name"] for s in range(100) for p in scenario(s)[1])
    assert sum(kinds.values()) >= 100 * 3
