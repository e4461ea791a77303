"""The scale-from-zero scenario of the Karpenter tests as data: three zones with CPU nodes
only, GPU NodePools, the instance types Karpenter's KWOK provider offers
(karpenter/instance-types.json) and a PyTorchJob's pods as the training operator creates
them (karpenter/pods.yaml)."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from karpenter_harness import NODECLASS_REF, ZONE

HERE = Path(__file__).resolve().parent / "karpenter"
INSTANCE_TYPES = HERE / "instance-types.json"
PYTORCHJOB = HERE / "pytorchjob.yaml"
ZONE_POLICY = HERE / "zone-policy.yaml"  # the job may run in us-east-1a or us-east-1b only
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
NAMESPACE = "research"
GPU = "nvidia.com/gpu"
GPU_TAINT = {"key": GPU, "value": "present", "effect": "NoSchedule"}
INSTANCE_TYPE = "node.kubernetes.io/instance-type"


def job_pods() -> list[dict[str, Any]]:
    """resnet's master and three workers, in the order the operator creates them."""
    pods: list[dict[str, Any]] = yaml.safe_load((HERE / "pods.yaml").read_text())["items"]
    return pods


def with_zone_affinity(pod: Mapping[str, Any], zones: Sequence[str]) -> dict[str, Any]:
    """The pod with a required node affinity to these zones, the term topogen's mutation
    adds (the pods carry no affinity of their own)."""
    out = copy.deepcopy(dict(pod))
    assert "affinity" not in out["spec"]
    term = {"matchExpressions": [{"key": ZONE, "operator": "In", "values": list(zones)}]}
    out["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }
    return out


def with_master_affinity(pod: Mapping[str, Any]) -> dict[str, Any]:
    """A worker with the required pod affinity topogen's mutation gives workers (the
    coordinator term of its MutatingPolicy, render/cel.py): in the zone of a pod of its own
    job with job-role=master. Other pods unchanged."""
    out = copy.deepcopy(dict(pod))
    labels = out["metadata"]["labels"]
    if labels.get("training.kubeflow.org/replica-type") != "worker":
        return out
    job = labels["training.kubeflow.org/job-name"]
    term = {
        "labelSelector": {
            "matchLabels": {
                "training.kubeflow.org/job-name": job,
                "training.kubeflow.org/job-role": "master",
            }
        },
        "topologyKey": ZONE,
    }
    affinity = out["spec"].setdefault("affinity", {})
    affinity["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
    return out


def cpu_nodes() -> list[dict[str, Any]]:
    """One CPU node per zone (no GPUs): what is left of the fleet when it scaled to zero."""
    return [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": f"cpu-{zone}",
                "labels": {ZONE: zone, "kubernetes.io/hostname": f"cpu-{zone}"},
            },
            "spec": {"podCIDRs": [f"10.244.{i}.0/24"]},
            "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}},
        }
        for i, zone in enumerate(ZONES)
    ]


def gpu_nodepool(
    name: str, zones: Sequence[str], limits: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """A GPU NodePool: spot capacity in these zones, GPU-tainted nodes; no consolidation
    or expiry (nothing is replaced while a test watches)."""
    spec: dict[str, Any] = {
        "template": {
            "spec": {
                "nodeClassRef": NODECLASS_REF,
                "requirements": [
                    {"key": ZONE, "operator": "In", "values": list(zones)},
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
                ],
                "taints": [GPU_TAINT],
                "expireAfter": "Never",
            }
        },
        "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "Never"},
    }
    if limits:
        spec["limits"] = dict(limits)
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": spec,
    }


def instance_types() -> dict[str, dict[str, Any]]:
    types = json.loads(INSTANCE_TYPES.read_text())
    return {t["name"]: t for t in types}


def cheapest_zone(instance_type: str, zones: Sequence[str]) -> str:
    """The zone of the cheapest offering of an instance type among these zones: where
    Karpenter's KWOK provider launches a NodeClaim of that type (toNode: the cheapest
    available offering compatible with the NodeClaim's requirements)."""
    prices: dict[str, float] = {}
    for offering in instance_types()[instance_type]["offerings"]:
        (zone,) = next(r["values"] for r in offering["Requirements"] if r["key"] == ZONE)
        if zone in zones:
            prices[zone] = offering["Price"]
    assert len(set(prices.values())) == len(prices), f"{instance_type}: a tie is drawn at random"
    return min(prices, key=lambda z: prices[z])


def fitting_type(pod: Mapping[str, Any]) -> str:
    """The one instance type of the file that can hold the pod (the scenario has one per
    role)."""
    requests = pod["spec"]["containers"][0]["resources"]["requests"]
    fits = [
        name
        for name, t in instance_types().items()
        if all(_quantity(t["resources"][k]) >= _quantity(v) for k, v in requests.items())
    ]
    assert len(fits) == 1, (pod["metadata"]["name"], fits)
    return fits[0]


def _quantity(text: str) -> float:
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
    for suffix, factor in units.items():
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * factor
    return float(text)


def topogen_tree(root: Path, pools: Sequence[Mapping[str, Any]]) -> Path:
    """The scenario as a GitOps folder topogen reads: the CPU nodes and these NodePools
    (`kubectl get nodes,nodepools -o yaml`), the zone policy, the PyTorchJob, and the
    instance types Karpenter's KWOK provider offers (the very file Karpenter reads) as the
    declared instance types; the topogen.yaml of its one group. Returns that file."""
    (root / "cluster").mkdir(parents=True)
    (root / "cluster" / "nodes.yaml").write_text(yaml.safe_dump_all([*cpu_nodes(), *pools]))
    for folder, src in (
        ("cilium", ZONE_POLICY),
        ("workloads", PYTORCHJOB),
        ("karpenter", INSTANCE_TYPES),
    ):
        (root / folder).mkdir()
        (root / folder / src.name).write_text(src.read_text())
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    (root / "workloads" / "namespace.yaml").write_text(yaml.safe_dump(namespace))
    config = {
        "apiVersion": "topogen.io/v1alpha1",
        "kind": "TopogenConfig",
        "clusters": [
            {
                "name": "live",
                "nodes": ["cluster/"],
                "networkPolicies": ["cilium/"],
                "cilium": {"identityLabels": [f"k8s:{ZONE}", "k8s:training.kubeflow.org"]},
                "autoscaling": {"instanceTypeFiles": [f"karpenter/{INSTANCE_TYPES.name}"]},
            }
        ],
        "workloads": ["workloads/"],
        "groups": [
            {
                "name": "pytorch",
                "profile": "kubeflow-training-operator",
                "namespaces": [NAMESPACE],
                "identityLabel": ZONE,
            }
        ],
    }
    (root / "topogen.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return root / "topogen.yaml"
