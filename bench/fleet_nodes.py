"""The fleet's nodes (bench/fleet.py): pools per zone, with the labels, taints and
allocatable a real EKS + NVIDIA GPU operator node carries, a few cordoned or degraded."""

from __future__ import annotations

import json
import random
from typing import Any

from fleet_base import (
    GPU,
    MODELS,
    POOLS,
    PRODUCT,
    REGION,
    ZONE,
    FleetSpec,
    Pool,
    add_noise,
    hex_digits,
    region_of,
    stamp,
    uid,
)

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
    region = region_of(zone)
    ip = f"10.{zone_index % 250}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
    name = f"ip-{ip.replace('.', '-')}-{i:05d}.{region}.compute.internal"
    ng = f"{pool.name}-{zone}"
    labels = {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/instance-type": pool.instance,
        "beta.kubernetes.io/os": "linux",
        "eks.amazonaws.com/capacityType": "SPOT" if pool.spot else "ON_DEMAND",
        "eks.amazonaws.com/nodegroup": ng,
        "eks.amazonaws.com/nodegroup-image": f"ami-0{hex_digits(rng, 16)}",
        "failure-domain.beta.kubernetes.io/region": region,
        "failure-domain.beta.kubernetes.io/zone": zone,
        "k8s.io/cloud-provider-aws": hex_digits(rng, 32),
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
                "topology.k8s.aws/network-node-layer-1": f"nn-{hex_digits(rng, 17)}",
                "topology.k8s.aws/network-node-layer-2": f"nn-{hex_digits(rng, 17)}",
                "feature.node.kubernetes.io/pci-10de.present": "true",
                "feature.node.kubernetes.io/rdma.available": "true" if pool.efa else "false",
            }
        )
    taints = [{"key": k, "value": v, "effect": e} for k, v, e in pool.taints]
    unschedulable = rng.random() < 0.01
    if unschedulable:
        taints.append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule",
                       "timeAdded": stamp(rng)})  # fmt: skip
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
        "providerID": f"aws:///{zone}/i-0{hex_digits(rng, 16)}",
    }
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    images = [
        {"names": [f"registry.example/{m}@sha256:{hex_digits(rng, 64)}", f"registry.example/{m}:v1"],
         "sizeBytes": rng.randint(10**7, 10**10)}
        for m in rng.sample(MODELS, 4)
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
            {"lastHeartbeatTime": stamp(rng), "lastTransitionTime": stamp(rng),
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
            "bootID": uid(rng),
            "containerRuntimeVersion": "containerd://1.7.22",
            "kernelVersion": "6.1.112-124.190.amzn2023.x86_64",
            "kubeProxyVersion": "v1.31.2-eks-94953ac",
            "kubeletVersion": "v1.31.2-eks-94953ac",
            "machineID": hex_digits(rng, 32),
            "operatingSystem": "linux",
            "osImage": "Amazon Linux 2023.6.20241111",
            "systemUUID": uid(rng),
        },
    }  # fmt: skip
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "annotations": {
                "alpha.kubernetes.io/provided-node-ip": ip,
                "csi.volume.kubernetes.io/nodeid": json.dumps(
                    {"ebs.csi.aws.com": f"i-0{hex_digits(rng, 16)}"}, sort_keys=True
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
    add_noise(rng, body, "kubelet")
    return body


def make_nodes(rng: random.Random, spec: FleetSpec, zones: list[str]) -> list[dict[str, Any]]:
    out = []
    i = 0
    for zi, zone in enumerate(zones):
        count = spec.nodes // spec.zones + (1 if zi < spec.nodes % spec.zones else 0)
        for pool in _pool_plan(rng, count):
            out.append(_node(rng, zone, zi, pool, i))
            i += 1
    return out
