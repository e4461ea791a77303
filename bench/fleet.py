"""Deterministic synthetic GPU fleets for the benchmark (issue 9).

    .venv/bin/python bench/fleet.py --size large --out bench/.fleets/large [--seed 1]
    .venv/bin/python bench/fleet.py --nodes 2500 --zones 60 --policies 2000 --jobs 1000 --out DIR

A fleet is one cluster: nodes in node pools across zones (grouped in regions of three),
with the labels a real EKS + NVIDIA GPU operator node carries, GPU taints, a few cordoned
or degraded nodes; Cilium and Kubernetes network policies mixing endpoint, entity, CIDR,
FQDN, deny and host (nodeSelector) rules, including zone-keyed training isolation; and
training jobs of every profile (custom Jobs, PyTorchJob, MPIJob, JobSet, Volcano Job,
TrainJob), one config group per training namespace.

Every input is written twice, so both source paths are measured:

    DIR/snapshot/  topogen.yaml, cluster.yaml (a TopogenSnapshot: minimal Nodes, Namespaces
                   and policies, as `topogen snapshot` writes), workloads.yaml (manifests
                   as a GitOps repository holds them)
    DIR/kubectl/   topogen.yaml, nodes.yaml, namespaces.yaml, ciliumnetworkpolicies.yaml,
                   ciliumclusterwidenetworkpolicies.yaml, networkpolicies.yaml,
                   workloads.yaml (`kubectl get -o yaml` lists: managedFields, status,
                   last-applied annotations and the rest of the noise)

The same seed gives byte-identical files: one random.Random, sorted keys, no clock.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import random
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from topogen.sources.live import json_yaml

__all__ = ["SIZES", "FleetSpec", "generate", "main", "write_fleet"]


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Plain YAML: no anchors or aliases for objects the generator happens to share."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
GPU = "nvidia.com/gpu"
PRODUCT = "nvidia.com/gpu.product"
KF_JOB = "training.kubeflow.org/job-name"
JS_NAME = "jobset.sigs.k8s.io/jobset-name"
VC_JOB = "volcano.sh/job-name"
CUSTOM_JOB = "ml.example.com/job"
CUSTOM_ROLE = "ml.example.com/role"
KUEUE_REQUIRED = "kueue.x-k8s.io/podset-required-topology"

PROFILES = (
    "custom",
    "kubeflow-training-operator",
    "mpi-operator",
    "jobset",
    "volcano",
    "kubeflow-trainer",
)
JOB_LABEL = {
    "custom": CUSTOM_JOB,
    "kubeflow-training-operator": KF_JOB,
    "mpi-operator": KF_JOB,
    "jobset": JS_NAME,
    "volcano": VC_JOB,
    "kubeflow-trainer": JS_NAME,
}

_REGIONS = (
    "us-east-1", "us-east-2", "us-west-1", "us-west-2", "eu-west-1", "eu-west-2", "eu-west-3",
    "eu-central-1", "eu-central-2", "eu-north-1", "eu-south-1", "eu-south-2", "ap-south-1",
    "ap-south-2", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-southeast-1",
    "ap-southeast-2", "ap-southeast-3", "ap-southeast-4", "ca-central-1", "ca-west-1",
    "sa-east-1", "me-south-1", "me-central-1", "af-south-1", "il-central-1", "mx-central-1",
    "ap-east-1",
)  # fmt: skip
_TEAMS = (
    "vision", "speech", "nlp", "recsys", "search", "ads", "robotics", "genai", "safety",
    "infra", "maps", "health", "fraud", "pricing", "ranking", "video",
)  # fmt: skip
_MODELS = (
    "llama", "mistral", "bert", "resnet", "vit", "whisper", "t5", "gpt", "clip", "sdxl",
    "dlrm", "gemma", "qwen", "mamba", "unet", "wav2vec",
)  # fmt: skip
_SERVICES = ("web", "api", "db", "cache", "worker", "gateway")


@dataclass(frozen=True)
class Pool:
    name: str
    instance: str
    share: int  # nodes per 20 in a zone
    cpu: str
    memory: str
    pods: str
    gpus: int = 0
    product: str = ""
    gpu_memory: str = ""
    efa: int = 0
    taints: tuple[tuple[str, str, str], ...] = ()
    spot: bool = False


POOLS = (
    Pool("system", "m6i.2xlarge", 1, "7910m", "28842684Ki", "58",
         taints=(("CriticalAddonsOnly", "true", "NoSchedule"),)),
    Pool("cpu", "m6i.8xlarge", 4, "31850m", "124013620Ki", "110"),
    Pool("cpu-spot", "m6i.8xlarge", 1, "31850m", "124013620Ki", "110", spot=True,
         taints=(("karpenter.sh/capacity-type", "spot", "NoSchedule"),)),
    Pool("highmem", "r6i.8xlarge", 2, "31850m", "253008088Ki", "110"),
    Pool("gpu-a100", "p4d.24xlarge", 5, "95690m", "1056276284Ki", "250", 8,
         "NVIDIA-A100-SXM4-40GB", "40960", 4, ((GPU, "present", "NoSchedule"),)),
    Pool("gpu-h100", "p5.48xlarge", 5, "191450m", "2034611496Ki", "100", 8,
         "NVIDIA-H100-80GB-HBM3", "81559", 32, ((GPU, "present", "NoSchedule"),)),
    Pool("gpu-l4", "g6.12xlarge", 2, "47810m", "186523192Ki", "234", 4,
         "NVIDIA-L4", "23034", 0, ((GPU, "present", "NoSchedule"),)),
)  # fmt: skip
_GPU_POOLS = tuple(p for p in POOLS if p.gpus)


@dataclass(frozen=True)
class FleetSpec:
    name: str
    nodes: int
    zones: int
    policies: int
    jobs: int
    seed: int = 1

    def __post_init__(self) -> None:
        if not 1 <= self.zones <= 3 * len(_REGIONS):
            raise ValueError(f"zones must be 1-{3 * len(_REGIONS)}")
        if self.nodes < self.zones:
            raise ValueError("at least one node per zone")


SIZES = {
    "small": FleetSpec("small", 100, 3, 100, 10),
    "medium": FleetSpec("medium", 1000, 12, 500, 100),
    "large": FleetSpec("large", 5000, 60, 2000, 1000),
}


@dataclass
class Fleet:
    """Everything generated, as plain Kubernetes objects (full, kubectl-like bodies)."""

    spec: FleetSpec
    zones: list[str]
    nodes: list[dict[str, Any]] = field(default_factory=list)
    namespaces: list[dict[str, Any]] = field(default_factory=list)
    policies: list[dict[str, Any]] = field(default_factory=list)
    workloads: list[dict[str, Any]] = field(default_factory=list)
    groups: list[dict[str, Any]] = field(default_factory=list)


# --- helpers -----------------------------------------------------------------------------


def _region(zone: str) -> str:
    return zone[:-1]


def _zones(n: int) -> list[str]:
    return [f"{_REGIONS[i // 3]}{'abc'[i % 3]}" for i in range(n)]


def _hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def _uid(rng: random.Random) -> str:
    h = _hex(rng, 32)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _stamp(rng: random.Random) -> str:
    return (
        f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T"
        f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z"
    )


def _fields(obj: Any) -> Any:
    """A managedFields fieldsV1 tree for the keys of an object (as the API server writes)."""
    if isinstance(obj, dict):
        return {f"f:{k}": _fields(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return {f'k:{{"name":"{i}"}}': {".": {}} for i in range(len(obj))}
    return {}


def _noise(rng: random.Random, body: dict[str, Any], manager: str) -> None:
    """metadata the API server adds: uid, resourceVersion, managedFields ..."""
    meta = body["metadata"]
    meta["uid"] = _uid(rng)
    meta["resourceVersion"] = str(rng.randint(10**6, 10**9))
    meta["creationTimestamp"] = _stamp(rng)
    fields = {k: v for k, v in body.items() if k in ("metadata", "spec")}
    meta["managedFields"] = [
        {
            "apiVersion": body["apiVersion"],
            "fieldsType": "FieldsV1",
            "fieldsV1": _fields(fields),
            "manager": manager,
            "operation": "Update",
            "time": _stamp(rng),
        },
        {
            "apiVersion": body["apiVersion"],
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:status": _fields(body.get("status", {}))},
            "manager": manager,
            "operation": "Update",
            "subresource": "status",
            "time": _stamp(rng),
        },
    ]


# --- nodes -----------------------------------------------------------------------------


def _pool_plan(rng: random.Random, count: int) -> list[Pool]:
    """Pools of `count` nodes of one zone, in proportion to Pool.share (every pool once
    the zone is big enough, GPU pools first when it is not)."""
    total = sum(p.share for p in POOLS)
    plan: list[Pool] = []
    for p in POOLS:
        plan += [p] * (count * p.share // total)
    order = sorted(POOLS, key=lambda p: (-p.gpus, -p.share, p.name))
    i = 0
    while len(plan) < count:
        plan.append(order[i % len(order)])
        i += 1
    rng.shuffle(plan)
    return plan


def _node(rng: random.Random, zone: str, zone_index: int, pool: Pool, i: int) -> dict[str, Any]:
    region = _region(zone)
    ip = f"10.{zone_index % 250}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
    name = f"ip-{ip.replace('.', '-')}-{i:05d}.{region}.compute.internal"
    ng = f"{pool.name}-{zone}"
    labels = {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/instance-type": pool.instance,
        "beta.kubernetes.io/os": "linux",
        "eks.amazonaws.com/capacityType": "SPOT" if pool.spot else "ON_DEMAND",
        "eks.amazonaws.com/nodegroup": ng,
        "eks.amazonaws.com/nodegroup-image": f"ami-0{_hex(rng, 16)}",
        "failure-domain.beta.kubernetes.io/region": region,
        "failure-domain.beta.kubernetes.io/zone": zone,
        "k8s.io/cloud-provider-aws": _hex(rng, 32),
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "node-pool": "gpu" if pool.gpus else pool.name,
        "node.kubernetes.io/instance-type": pool.instance,
        REGION: region,
        ZONE: zone,
        "topology.k8s.aws/zone-id": f"{region[:2]}{region.split('-')[-1]}-az{zone_index % 6 + 1}",
    }
    if pool.name == "system":
        labels["node-role.kubernetes.io/system"] = ""
    if pool.gpus:
        labels.update(
            {
                "gpu": "true",
                "nvidia.com/cuda.driver.major": "550",
                "nvidia.com/cuda.runtime.major": "12",
                "nvidia.com/gpu.count": str(pool.gpus),
                "nvidia.com/gpu.deploy.device-plugin": "true",
                "nvidia.com/gpu.memory": pool.gpu_memory,
                "nvidia.com/gpu.present": "true",
                PRODUCT: pool.product,
                "nvidia.com/mig.capable": "true" if "A100" in pool.product else "false",
                "topology.k8s.aws/network-node-layer-1": f"nn-{_hex(rng, 17)}",
                "topology.k8s.aws/network-node-layer-2": f"nn-{_hex(rng, 17)}",
                "feature.node.kubernetes.io/pci-10de.present": "true",
                "feature.node.kubernetes.io/rdma.available": "true" if pool.efa else "false",
            }
        )
    taints = [{"key": k, "value": v, "effect": e} for k, v, e in pool.taints]
    unschedulable = rng.random() < 0.01
    if unschedulable:
        taints.append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule",
                       "timeAdded": _stamp(rng)})  # fmt: skip
    if pool.gpus and rng.random() < 0.005:
        taints.append({"key": "nvidia.com/gpu-health", "value": "degraded", "effect": "NoExecute"})
    allocatable = {
        "cpu": pool.cpu,
        "ephemeral-storage": "95491281146",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": pool.memory,
        "pods": pool.pods,
    }
    if pool.gpus:
        allocatable[GPU] = str(pool.gpus)
    if pool.efa:
        allocatable["vpc.amazonaws.com/efa"] = str(pool.efa)
    capacity = {**allocatable, "ephemeral-storage": "104845292Ki"}
    cidr = f"100.{64 + zone_index % 60}.{i % 256}.0/24"
    spec: dict[str, Any] = {
        "podCIDR": cidr,
        "podCIDRs": [cidr],
        "providerID": f"aws:///{zone}/i-0{_hex(rng, 16)}",
    }
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    images = [
        {"names": [f"registry.example/{m}@sha256:{_hex(rng, 64)}", f"registry.example/{m}:v1"],
         "sizeBytes": rng.randint(10**7, 10**10)}
        for m in rng.sample(_MODELS, 4)
    ]  # fmt: skip
    status = {
        "addresses": [
            {"address": ip, "type": "InternalIP"},
            {"address": name, "type": "InternalDNS"},
            {"address": name, "type": "Hostname"},
        ],
        "allocatable": allocatable,
        "capacity": capacity,
        "conditions": [
            {"lastHeartbeatTime": _stamp(rng), "lastTransitionTime": _stamp(rng),
             "message": m, "reason": r, "status": s, "type": t}
            for t, s, r, m in (
                ("MemoryPressure", "False", "KubeletHasSufficientMemory",
                 "kubelet has sufficient memory available"),
                ("DiskPressure", "False", "KubeletHasNoDiskPressure",
                 "kubelet has no disk pressure"),
                ("PIDPressure", "False", "KubeletHasSufficientPID",
                 "kubelet has sufficient PID available"),
                ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
            )
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "images": images,
        "nodeInfo": {
            "architecture": "amd64",
            "bootID": _uid(rng),
            "containerRuntimeVersion": "containerd://1.7.22",
            "kernelVersion": "6.1.112-124.190.amzn2023.x86_64",
            "kubeProxyVersion": "v1.31.2-eks-94953ac",
            "kubeletVersion": "v1.31.2-eks-94953ac",
            "machineID": _hex(rng, 32),
            "operatingSystem": "linux",
            "osImage": "Amazon Linux 2023.6.20241111",
            "systemUUID": _uid(rng),
        },
    }  # fmt: skip
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "annotations": {
                "alpha.kubernetes.io/provided-node-ip": ip,
                "csi.volume.kubernetes.io/nodeid": json.dumps(
                    {"ebs.csi.aws.com": f"i-0{_hex(rng, 16)}"}, sort_keys=True
                ),
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
            "labels": labels,
            "name": name,
        },
        "spec": spec,
        "status": status,
    }
    _noise(rng, body, "kubelet")
    return body


def _nodes(rng: random.Random, spec: FleetSpec, zones: list[str]) -> list[dict[str, Any]]:
    out = []
    i = 0
    for zi, zone in enumerate(zones):
        count = spec.nodes // spec.zones + (1 if zi < spec.nodes % spec.zones else 0)
        for pool in _pool_plan(rng, count):
            out.append(_node(rng, zone, zi, pool, i))
            i += 1
    return out


# --- namespaces and config groups ----------------------------------------------------------


@dataclass(frozen=True)
class Team:
    namespace: str
    profile: str
    isolated: bool  # zone-keyed network isolation (and identity label) for its pods
    group: dict[str, Any]
    near: tuple[str, ...]  # zones of the region its data lives in (() anywhere)
    pool: Pool  # the GPUs it mostly trains on


def _teams(rng: random.Random, spec: FleetSpec, zones: list[str]) -> list[Team]:
    count = max(len(PROFILES), -(-spec.jobs // 10))
    out = []
    for i in range(count):
        profile = PROFILES[i % len(PROFILES)]
        ns = f"ml-{_TEAMS[i % len(_TEAMS)]}-{i // len(_TEAMS) + 1}"
        isolated = i % 2 == 0
        group: dict[str, Any] = {"name": f"train-{ns.removeprefix('ml-')}", "profile": profile,
                                 "namespaces": [ns]}  # fmt: skip
        if profile == "custom":
            group.update(
                {
                    "groupLabel": CUSTOM_JOB,
                    "roleLabel": CUSTOM_ROLE,
                    "coordinatorRoles": ["coordinator"],
                    "workerRoles": ["worker"],
                }
            )
        if isolated:
            group["identityLabel"] = ZONE
        if i % 3 == 1:
            group["ports"] = [29500, "29400-29410"]
        elif i % 3 == 2:
            group["ports"] = ["29500/TCP", "5353/UDP"]
        if i % 7 == 3 and len(zones) >= 3:
            group["colocate"] = "domain"
        if i % 5 == 4:
            group["preferZones"] = sorted(rng.sample(zones, min(2, len(zones))))
        near: tuple[str, ...] = ()
        if i % 5 == 2 and len(zones) > 3:
            region = _region(zones[(i * 7) % len(zones)])
            near = tuple(z for z in zones if _region(z) == region)
        out.append(Team(ns, profile, isolated, group, near, _GPU_POOLS[i % len(_GPU_POOLS)]))
    return out


def _namespace(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"labels": {"kubernetes.io/metadata.name": name, **labels}, "name": name},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


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
    for region in sorted({_region(z) for z in zones}):
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
            if _region(z) == region
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


def _policies(
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
        ns = f"svc-{_SERVICES[k % len(_SERVICES)]}-{k:03d}"
        apps.append(ns)
        for p in _app_policies(ns, k):
            if len(out) < spec.policies:
                out.append(p)
        k += 1
    return out, apps


# --- workloads -----------------------------------------------------------------------------


def _resources(cpu: str, memory: str, gpus: int = 0) -> dict[str, Any]:
    req: dict[str, Any] = {"cpu": cpu, "memory": memory}
    if not gpus:
        return {"requests": req}
    return {"requests": {**req, GPU: str(gpus)}, "limits": {GPU: str(gpus)}}


@dataclass(frozen=True)
class Shape:
    """How one job wants to be scheduled."""

    gpus: int  # per worker
    workers: int
    product: str  # nodeSelector on the GPU product ("" none)
    instance_affinity: tuple[str, ...]  # required node affinity on instance type
    zones: tuple[str, ...]  # required node affinity on zones (data locality)
    gpu_coordinator: bool  # the coordinator requests a GPU (and tolerates the taint)
    host_network: bool
    spread: bool  # required pod anti-affinity on hostname between workers
    kueue: bool
    static_zone: str  # a zone label written into the template ("" none)


def _shape(rng: random.Random, team: Team, spec: FleetSpec, zones: list[str]) -> Shape:
    pool = team.pool if rng.random() < 0.8 else rng.choice(_GPU_POOLS)
    gpus = pool.gpus if rng.random() < 0.6 else rng.choice([1, 2, pool.gpus // 2])
    # at most half the GPUs of this product in one zone, so most jobs fit a domain
    per_zone = spec.nodes // spec.zones * pool.share // sum(p.share for p in POOLS)
    cap = max(1, per_zone * (pool.gpus // gpus) // 2)
    how = rng.random()
    return Shape(
        gpus=gpus,
        workers=min(cap, rng.choice([1, 2, 3, 4, 4, 8, 8, 16])),
        product=pool.product if how < 0.5 else "",
        instance_affinity=(pool.instance,) if 0.5 <= how < 0.75 else (),
        zones=team.near,
        gpu_coordinator=rng.random() < 0.4,
        host_network=team.profile == "mpi-operator" and rng.random() < 0.5,
        spread=rng.random() < 0.1,
        kueue=rng.random() < 0.04,
        static_zone=rng.choice(zones) if rng.random() < 0.04 else "",
    )


def _pod_spec(shape: Shape, role: str, job_selector: dict[str, str]) -> dict[str, Any]:
    worker = role == "worker"
    gpu = worker or shape.gpu_coordinator
    image = "registry.example/trainer:2.5.1"
    container: dict[str, Any] = {
        "name": "trainer",
        "image": image,
        "command": ["torchrun", "--nnodes", str(shape.workers), "train.py"],
        "env": [{"name": "NCCL_DEBUG", "value": "WARN"}, {"name": "NCCL_SOCKET_IFNAME", "value": "eth0"}],
        "ports": [{"containerPort": 29500, "name": "nccl", "protocol": "TCP"},
                  {"containerPort": 9400, "name": "metrics", "protocol": "TCP"}],
        "resources": _resources(f"{4 * (shape.gpus if worker else 1)}" if gpu else "4",
                                f"{16 * (shape.gpus if worker else 1)}Gi" if gpu else "16Gi",
                                shape.gpus if worker else (1 if gpu else 0)),
        "volumeMounts": [{"mountPath": "/dev/shm", "name": "dshm"}],
    }  # fmt: skip
    spec: dict[str, Any] = {
        "containers": [container],
        "volumes": [{"emptyDir": {"medium": "Memory"}, "name": "dshm"}],
        "restartPolicy": "OnFailure",
    }
    if shape.host_network:
        spec["hostNetwork"] = True
        spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    if gpu:
        spec["tolerations"] = [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}]
        if shape.product:
            spec["nodeSelector"] = {PRODUCT: shape.product}
    exprs = []
    if gpu and shape.instance_affinity:
        exprs.append({"key": "node.kubernetes.io/instance-type", "operator": "In",
                      "values": list(shape.instance_affinity)})  # fmt: skip
    if shape.zones:
        exprs.append({"key": ZONE, "operator": "In", "values": list(shape.zones)})
    affinity: dict[str, Any] = {}
    if exprs:
        affinity["nodeAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": exprs}]}}  # fmt: skip
    if worker and shape.spread:
        affinity["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": job_selector},
             "topologyKey": "kubernetes.io/hostname"}]}  # fmt: skip
    if affinity:
        spec["affinity"] = affinity
    return spec


def _template(shape: Shape, role: str, labels: dict[str, str], selector: dict[str, str]) -> Any:
    meta: dict[str, Any] = {"labels": dict(labels)}
    if shape.static_zone and role == "coordinator":
        meta["labels"][ZONE] = shape.static_zone
    if shape.kueue:
        meta["annotations"] = {KUEUE_REQUIRED: ZONE}
    return {"metadata": meta, "spec": _pod_spec(shape, role, selector)}


def _job(profile: str, name: str, ns: str, shape: Shape) -> list[dict[str, Any]]:
    w = shape.workers
    if profile == "custom":
        out = []
        for role, count in (("coordinator", 1), ("worker", w)):
            labels = {CUSTOM_JOB: name, CUSTOM_ROLE: role, "app.kubernetes.io/part-of": name}
            out.append({
                "apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": f"{name}-{role}", "namespace": ns,
                             "labels": {CUSTOM_JOB: name}},
                "spec": {"parallelism": count, "completions": count, "backoffLimit": 3,
                         "template": _template(shape, role, labels,
                                               {CUSTOM_JOB: name, CUSTOM_ROLE: "worker"})},
            })  # fmt: skip
        return out
    if profile in ("kubeflow-training-operator", "mpi-operator"):
        mpi = profile == "mpi-operator"
        lead = "Launcher" if mpi else "Master"
        sel = {KF_JOB: name, "training.kubeflow.org/replica-type": "worker"}
        specs = {
            lead: {"replicas": 1, "restartPolicy": "OnFailure",
                   "template": _template(shape, "coordinator", {}, sel)},
            "Worker": {"replicas": w, "restartPolicy": "OnFailure",
                       "template": _template(shape, "worker", {}, sel)},
        }  # fmt: skip
        if mpi:
            return [{"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
                     "metadata": {"name": name, "namespace": ns},
                     "spec": {"slotsPerWorker": shape.gpus, "mpiReplicaSpecs": specs}}]  # fmt: skip
        return [{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                 "metadata": {"name": name, "namespace": ns},
                 "spec": {"pytorchReplicaSpecs": specs}}]  # fmt: skip
    if profile == "jobset":
        sel = {JS_NAME: name, "jobset.sigs.k8s.io/replicatedjob-name": "workers"}
        rjobs = [
            {"name": "leader", "replicas": 1,
             "template": {"spec": {"parallelism": 1, "completions": 1,
                                   "template": _template(shape, "coordinator", {}, sel)}}},
            {"name": "workers", "replicas": 1,
             "template": {"spec": {"parallelism": w, "completions": w,
                                   "template": _template(shape, "worker", {}, sel)}}},
        ]  # fmt: skip
        return [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                 "metadata": {"name": name, "namespace": ns},
                 "spec": {"replicatedJobs": rjobs}}]  # fmt: skip
    if profile == "volcano":
        sel = {VC_JOB: name, "volcano.sh/task-spec": "worker"}
        tasks = [
            {"name": "master", "replicas": 1, "template": _template(shape, "coordinator", {}, sel)},
            {"name": "worker", "replicas": w, "template": _template(shape, "worker", {}, sel)},
        ]
        return [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                 "metadata": {"name": name, "namespace": ns},
                 "spec": {"minAvailable": w + 1, "schedulerName": "volcano", "tasks": tasks}}]  # fmt: skip
    # kubeflow-trainer: TrainJob, rank 0 of the `node` job coordinates
    pod = _pod_spec(shape, "worker", {JS_NAME: name})
    override = {k: pod[k] for k in ("nodeSelector", "affinity", "tolerations") if k in pod}
    body: dict[str, Any] = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"runtimeRef": {"name": "torch-distributed"},
                 "trainer": {"numNodes": w + 1,
                             "resourcesPerNode": pod["containers"][0]["resources"]}},
    }  # fmt: skip
    if override:
        body["spec"]["podTemplateOverrides"] = [
            {"targetJobs": [{"name": "node"}], "spec": override}
        ]
    return [body]


def _workloads(
    rng: random.Random, spec: FleetSpec, teams: list[Team], zones: list[str]
) -> list[dict[str, Any]]:
    out = []
    for j in range(spec.jobs):
        team = teams[j % len(teams)]
        name = f"{_MODELS[j % len(_MODELS)]}-{team.profile.split('-')[0][:6]}-{j:04d}"
        out += _job(team.profile, name, team.namespace, _shape(rng, team, spec, zones))
    if any(w["kind"] == "TrainJob" for w in out):
        out.append(json.loads(json.dumps(_TORCH_RUNTIME)))  # the runtime the TrainJobs name
    return out


_TORCH_RUNTIME: dict[str, Any] = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "ClusterTrainingRuntime",
    "metadata": {"name": "torch-distributed", "labels": {"trainer.kubeflow.org/framework": "torch"}},
    "spec": {
        "mlPolicy": {"numNodes": 1, "torch": {}},
        "template": {"spec": {"replicatedJobs": [{
            "name": "node",
            "template": {
                "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                "spec": {"template": {"spec": {"containers": [
                    {"name": "node", "image": "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime"}]}}},
            },
        }]}},
    },
}  # fmt: skip


# --- the fleet ---------------------------------------------------------------------------


def generate(spec: FleetSpec) -> Fleet:
    rng = random.Random(spec.seed)
    zones = _zones(spec.zones)
    fleet = Fleet(spec, zones)
    fleet.nodes = _nodes(rng, spec, zones)
    teams = _teams(rng, spec, zones)
    fleet.groups = [t.group for t in teams]
    fleet.policies, apps = _policies(rng, spec, teams, zones)
    fleet.workloads = _workloads(rng, spec, teams, zones)
    nss = [("kube-system", {}), ("monitoring", {}), ("sandbox", {"team": "t0"})]
    nss += [(t.namespace, {"team": f"ml-{i % 5}", "purpose": "training"})
            for i, t in enumerate(teams)]  # fmt: skip
    nss += [(a, {"team": f"t{i % 5}"}) for i, a in enumerate(apps)]
    fleet.namespaces = [_namespace(n, labels) for n, labels in nss]
    for body in fleet.workloads:
        _workload_noise(rng, body)
    for body in fleet.policies + fleet.namespaces:
        _noise(rng, body, "kubectl-client-side-apply")
    return fleet


def _workload_noise(rng: random.Random, body: dict[str, Any]) -> None:
    applied = json.dumps(body, sort_keys=True, separators=(",", ":"))
    body["metadata"]["annotations"] = {
        "kubectl.kubernetes.io/last-applied-configuration": applied + "\n"
    }
    body["metadata"]["generation"] = 1
    body["status"] = {
        "conditions": [
            {"lastTransitionTime": _stamp(rng), "lastUpdateTime": _stamp(rng),
             "message": f"{body['kind']} {body['metadata']['name']} is created.",
             "reason": "Created", "status": "True", "type": "Created"},
        ],
        "startTime": _stamp(rng),
    }  # fmt: skip
    _noise(rng, body, "kubectl-client-side-apply")


# --- writing -------------------------------------------------------------------------------


_POLICY_API = {
    "CiliumNetworkPolicy": "ciliumnetworkpolicies",
    "CiliumClusterwideNetworkPolicy": "ciliumclusterwidenetworkpolicies",
    "NetworkPolicy": "networkpolicies",
}


def _dump(doc: Any) -> str:
    return str(yaml.dump(doc, Dumper=_Dumper, sort_keys=True, default_flow_style=False,
                         allow_unicode=True, width=120))  # fmt: skip


def _dump_all(docs: list[Any]) -> str:
    return "".join("---\n" + _dump(d) for d in docs)


def _list(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "items": items, "kind": "List",
            "metadata": {"resourceVersion": ""}}  # fmt: skip


def _minimal(body: dict[str, Any]) -> dict[str, Any]:
    """What `topogen snapshot` keeps of an object (sources/live.py: minimal)."""
    meta = body["metadata"]
    out_meta: dict[str, Any] = {"name": meta["name"]}
    if "namespace" in meta:
        out_meta["namespace"] = meta["namespace"]
    kind = body["kind"]
    if kind in ("Node", "Namespace") and meta.get("labels"):
        out_meta["labels"] = dict(meta["labels"])
    out: dict[str, Any] = {"apiVersion": body["apiVersion"], "kind": kind, "metadata": out_meta}
    if kind == "Node":
        spec = body.get("spec") or {}
        node_spec: dict[str, Any] = {}
        taints = [{k: t[k] for k in ("key", "value", "effect") if t.get(k)}
                  for t in spec.get("taints") or ()]  # fmt: skip
        if taints:
            node_spec["taints"] = taints
        if spec.get("unschedulable"):
            node_spec["unschedulable"] = True
        if spec.get("podCIDRs"):
            node_spec["podCIDRs"] = list(spec["podCIDRs"])
        if node_spec:
            out["spec"] = node_spec
        out["status"] = {"allocatable": dict(body["status"]["allocatable"])}
    elif kind != "Namespace":
        for key in ("spec", "specs"):
            if key in body:
                out[key] = body[key]
    return out


def _manifest(body: dict[str, Any]) -> dict[str, Any]:
    """A workload as a GitOps repository holds it (no status, no server-side metadata)."""
    meta = {
        k: body["metadata"][k] for k in ("name", "namespace", "labels") if k in body["metadata"]
    }
    return {**{k: v for k, v in body.items() if k not in ("status", "metadata")}, "metadata": meta}


def _config(fleet: Fleet, nodes: list[str], policies: list[str], namespaces: list[str]) -> str:
    cluster: dict[str, Any] = {
        "name": "fleet",
        "nodes": nodes,
        "networkPolicies": policies,
        "namespaces": namespaces,
        "domainLabel": REGION,
        "gpuNodeSelector": {"gpu": "true"},
        # the agent the policies are written for: host firewall (the GPU hosts' CCNPs),
        # fromNodes, and the zone label kept in identities (so `labels` lists every key
        # the policies select on)
        "cilium": {
            "hostFirewall": True,
            "nodeSelectorLabels": True,
            "identityLabels": [
                f"k8s:{ZONE}",
                "k8s:app.kubernetes.io",
                "k8s:jobset.sigs.k8s.io",
                "k8s:k8s-app",
                "k8s:ml.example.com",
                "k8s:node-pool",
                "k8s:team",
                "k8s:tier",
                "k8s:training.kubeflow.org",
                "k8s:volcano.sh",
            ],
        },
    }
    cfg = {
        "apiVersion": "topogen.io/v1alpha1",
        "kind": "TopogenConfig",
        "clusters": [cluster],
        "workloads": ["workloads.yaml"],
        "groups": fleet.groups,
        "engines": ["kyverno"],
        "validationAction": "Audit",
    }
    s = fleet.spec
    head = (
        f"# synthetic fleet {s.name}: {s.nodes} nodes, {s.zones} zones, {s.policies} policies, "
        f"{s.jobs} jobs, seed {s.seed} (bench/fleet.py)\n"
    )
    return head + _dump(cfg)


def fleet_files(fleet: Fleet) -> dict[str, str]:
    """{relative path: text} of both variants."""
    snap = sorted(
        (_minimal(b) for b in fleet.nodes + fleet.namespaces + fleet.policies),
        key=lambda o: (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]),
    )
    snapshot = {"apiVersion": "topogen.io/v1alpha1", "kind": "TopogenSnapshot", "items": snap}
    files = {
        "snapshot/topogen.yaml": _config(fleet, ["cluster.yaml"], [], []),
        # as `topogen snapshot` writes it: JSON, which is YAML
        "snapshot/cluster.yaml": "# topogen snapshot (synthetic)\n" + json_yaml(snapshot),
        "snapshot/workloads.yaml": _dump_all([_manifest(w) for w in fleet.workloads]),
    }
    by_kind: dict[str, list[dict[str, Any]]] = {k: [] for k in _POLICY_API}
    for p in fleet.policies:
        by_kind[p["kind"]].append(p)
    policy_files = [f"{_POLICY_API[k]}.yaml" for k in _POLICY_API]
    files["kubectl/topogen.yaml"] = _config(fleet, ["nodes.yaml"], policy_files,
                                            ["namespaces.yaml"])  # fmt: skip
    files["kubectl/nodes.yaml"] = _dump(_list(fleet.nodes))
    files["kubectl/namespaces.yaml"] = _dump(_list(fleet.namespaces))
    for kind, items in by_kind.items():
        files[f"kubectl/{_POLICY_API[kind]}.yaml"] = _dump(_list(items))
    files["kubectl/workloads.yaml"] = _dump(_list(fleet.workloads))
    return files


def write_fleet(spec: FleetSpec, out: Path) -> dict[str, str]:
    """Write both variants under `out`; returns {relative path: sha256} (also in MANIFEST)."""
    files = fleet_files(generate(spec))
    digests = {}
    for rel, text in sorted(files.items()):
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        data = text.encode("utf-8")
        path.write_bytes(data)
        digests[rel] = hashlib.sha256(data).hexdigest()
    manifest = "".join(f"{d}  {rel}\n" for rel, d in sorted(digests.items()))
    (out / "MANIFEST").write_text(manifest, encoding="utf-8")
    return digests


def generator_digest() -> str:
    """Changes whenever this generator does (the benchmark's fleet cache key)."""
    h = hashlib.sha256(Path(__file__).read_bytes())
    h.update(inspect.getsource(json_yaml).encode())  # the snapshot writer it shares
    return h.hexdigest()[:16]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", choices=sorted(SIZES), help="a preset (default: large)")
    ap.add_argument("--nodes", type=int)
    ap.add_argument("--zones", type=int)
    ap.add_argument("--policies", type=int)
    ap.add_argument("--jobs", type=int)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    base = SIZES[args.size or "large"]
    spec = FleetSpec(
        args.size or "custom",
        args.nodes or base.nodes,
        args.zones or base.zones,
        args.policies or base.policies,
        args.jobs or base.jobs,
        args.seed,
    )
    digests = write_fleet(spec, args.out)
    print(f"wrote {len(digests)} files under {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
