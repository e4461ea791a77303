"""What every part of the fleet generator (bench/fleet.py) shares: the labels, regions,
node pools and profiles, the spec of a fleet, the teams (one training namespace and config
group each), and the metadata the API server adds to every object."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

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
MODELS = (
    "llama", "mistral", "bert", "resnet", "vit", "whisper", "t5", "gpt", "clip", "sdxl",
    "dlrm", "gemma", "qwen", "mamba", "unet", "wav2vec",
)  # fmt: skip
SERVICES = ("web", "api", "db", "cache", "worker", "gateway")


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
GPU_POOLS = tuple(p for p in POOLS if p.gpus)


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


# --- helpers -----------------------------------------------------------------------------


def region_of(zone: str) -> str:
    return zone[:-1]


def zone_names(n: int) -> list[str]:
    return [f"{_REGIONS[i // 3]}{'abc'[i % 3]}" for i in range(n)]


def hex_digits(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def uid(rng: random.Random) -> str:
    h = hex_digits(rng, 32)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def stamp(rng: random.Random) -> str:
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


def add_noise(rng: random.Random, body: dict[str, Any], manager: str) -> None:
    """metadata the API server adds: uid, resourceVersion, managedFields ..."""
    meta = body["metadata"]
    meta["uid"] = uid(rng)
    meta["resourceVersion"] = str(rng.randint(10**6, 10**9))
    meta["creationTimestamp"] = stamp(rng)
    fields = {k: v for k, v in body.items() if k in ("metadata", "spec")}
    meta["managedFields"] = [
        {
            "apiVersion": body["apiVersion"],
            "fieldsType": "FieldsV1",
            "fieldsV1": _fields(fields),
            "manager": manager,
            "operation": "Update",
            "time": stamp(rng),
        },
        {
            "apiVersion": body["apiVersion"],
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:status": _fields(body.get("status", {}))},
            "manager": manager,
            "operation": "Update",
            "subresource": "status",
            "time": stamp(rng),
        },
    ]


# --- namespaces and config groups ----------------------------------------------------------


@dataclass(frozen=True)
class Team:
    namespace: str
    profile: str
    isolated: bool  # zone-keyed network isolation (and identity label) for its pods
    group: dict[str, Any]
    near: tuple[str, ...]  # zones of the region its data lives in (() anywhere)
    pool: Pool  # the GPUs it mostly trains on


def make_teams(rng: random.Random, spec: FleetSpec, zones: list[str]) -> list[Team]:
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
            region = region_of(zones[(i * 7) % len(zones)])
            near = tuple(z for z in zones if region_of(z) == region)
        out.append(Team(ns, profile, isolated, group, near, GPU_POOLS[i % len(GPU_POOLS)]))
    return out


def namespace_object(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"labels": {"kubernetes.io/metadata.name": name, **labels}, "name": name},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }
