"""Seeded clusters and training jobs for the fleet measure (bench/schedrun.py).

A scenario is one cluster: 3-12 zones of uneven GPU capacity (GPU nodes tainted
nvidia.com/gpu=present:NoSchedule, CPU nodes in some zones only, a tainted system node),
config groups of several training profiles, each in its own namespace with zone-isolating
Cilium policies (default deny; pods talk only to pods of the same zone, in the zones the
group may use), and N jobs (a coordinator on a CPU or a GPU, 1-16 one-GPU workers) with
an arrival time, a drawn duration, and whether the render knew them.

Identity: a `static` group's policies select the pod label `zone`, which nothing stamps
(topogen's mutation sets it); a `binding` group's select topology.kubernetes.io/zone,
which the API server's PodTopologyLabels plugin copies from the node at binding and the
cluster's Cilium agent is configured to keep (its `labels` option, `cilium.identityLabels`:
the default filter drops topology.kubernetes.io/*, and a policy keyed on a dropped label
selects nothing), so the identity follows placement; an `open` group's policies
let its pods talk within the namespace wherever they are (no identity label: the zone
changes nothing but the latency, and the spread plan lets each coordinator choose).

The pods of a job are those its controller would create, with the labels it stamps
(`pods_of`), independent of topogen's own reading of the manifests.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "BINDING_LABEL",
    "GPU",
    "STATIC_LABEL",
    "ZONE",
    "Group",
    "Job",
    "Scenario",
    "SchedSpec",
    "generate",
    "pods_of",
]

ZONE = "topology.kubernetes.io/zone"
BINDING_LABEL = ZONE  # stamped at binding by PodTopologyLabels (Kubernetes 1.36)
STATIC_LABEL = "zone"
GPU = "nvidia.com/gpu"
GPU_TAINT = {"key": GPU, "value": "present", "effect": "NoSchedule"}
CUSTOM_JOB, CUSTOM_ROLE = "ml.example.com/job", "ml.example.com/role"
KF_JOB = "training.kubeflow.org/job-name"
KF_REPLICA = "training.kubeflow.org/replica-type"
KF_ROLE = "training.kubeflow.org/job-role"
KF_INDEX = "training.kubeflow.org/replica-index"
KF_OPERATOR = "training.kubeflow.org/operator-name"
PROFILES = ("custom", "kubeflow-training-operator", "mpi-operator")
PORT = 29500


@dataclass(frozen=True)
class SchedSpec:
    seed: int
    zones: int  # 3..12
    load: float = 1.2  # the jobs' GPUs over the cluster's GPUs
    known: float = 1.0  # the share of jobs the render knows about
    max_jobs: int = 400

    @property
    def name(self) -> str:
        return f"s{self.seed}-z{self.zones}"


@dataclass(frozen=True)
class Zone:
    name: str
    cpu_nodes: int
    gpu_nodes: tuple[int, ...]  # GPUs per GPU node

    @property
    def gpus(self) -> int:
        return sum(self.gpu_nodes)


@dataclass(frozen=True)
class Group:
    name: str
    namespace: str
    profile: str
    identity: str  # static | binding | open
    allowed: tuple[str, ...]  # zones where the group's pods may talk (to pods of their zone)
    gpu_coordinator: bool

    @property
    def identity_label(self) -> str | None:
        return {"static": STATIC_LABEL, "binding": BINDING_LABEL}.get(self.identity)

    def config(self, placement: str | None) -> dict[str, Any]:
        cfg: dict[str, Any] = {
            "name": self.name,
            "profile": self.profile,
            "namespaces": [self.namespace],
            "ports": [PORT],
        }
        if self.identity_label:
            cfg["identityLabel"] = self.identity_label
        if self.profile == "custom":
            cfg |= {
                "groupLabel": CUSTOM_JOB,
                "roleLabel": CUSTOM_ROLE,
                "coordinatorRoles": ["coordinator"],
                "workerRoles": ["worker"],
            }
        if placement is not None:
            cfg["placement"] = placement
        return cfg


@dataclass(frozen=True)
class Job:
    group: Group
    name: str
    workers: int
    arrival: float  # time units (the measure over time)
    duration: float
    known: bool  # in the manifests topogen rendered from

    @property
    def gpus(self) -> int:
        return self.workers + (1 if self.group.gpu_coordinator else 0)

    @property
    def key(self) -> str:
        return f"{self.group.namespace}/{self.name}"


@dataclass
class Scenario:
    spec: SchedSpec
    zones: list[Zone]
    groups: list[Group]
    jobs: list[Job]
    nodes: list[dict[str, Any]] = field(default_factory=list)
    policies: list[dict[str, Any]] = field(default_factory=list)

    @property
    def gpus(self) -> int:
        return sum(z.gpus for z in self.zones)

    def zone_gpus(self) -> dict[str, int]:
        return {z.name: z.gpus for z in self.zones}

    def namespaces(self) -> list[str]:
        return sorted({g.namespace for g in self.groups})

    def manifests(self, jobs: list[Job]) -> list[dict[str, Any]]:
        return [m for j in jobs for m in _manifests(j)]

    def config(
        self, placement: str | None, nodes: str, policies: str, workloads: str
    ) -> dict[str, Any]:
        """topogen.yaml: native engine for Kubernetes 1.36, every group with `placement`."""
        return {
            "apiVersion": "topogen.io/v1alpha1",
            "kind": "TopogenConfig",
            "clusters": [
                {
                    "name": "fleet",
                    "nodes": [nodes],
                    "networkPolicies": [policies],
                    "kubernetesVersion": "1.36",
                    # the agent keeps the zone labels the policies select on (module doc)
                    "cilium": {"identityLabels": [f"k8s:{BINDING_LABEL}", f"k8s:{STATIC_LABEL}"]},
                }
            ],
            "workloads": [workloads],
            "engines": ["native"],
            "validationAction": "Audit",
            "monitoring": {"enabled": False},
            "groups": [g.config(placement) for g in self.groups],
        }


# --- the cluster ---------------------------------------------------------------------------


def _zones(rng: random.Random, n: int) -> list[Zone]:
    """Uneven capacity: a few large GPU zones, some small or empty; CPU nodes in some."""
    out = []
    for i in range(n):
        size = rng.choice((0, 1, 1, 2, 2, 3, 4, 6))
        per_node = rng.choice((4, 8, 8))
        cpu = rng.choice((0, 0, 1, 1, 2))
        out.append(Zone(f"zone-{chr(ord('a') + i)}", cpu, tuple(per_node for _ in range(size))))
    if sum(1 for z in out if z.gpus) < 2:  # at least two zones with GPUs
        out[0] = Zone(out[0].name, out[0].cpu_nodes, (8, 8))
        out[1] = Zone(out[1].name, out[1].cpu_nodes, (8,))
    if not any(z.cpu_nodes for z in out):
        out[-1] = Zone(out[-1].name, 1, out[-1].gpu_nodes)
    return out


def _node(name: str, zone: str, gpus: int, taints: list[dict[str, str]]) -> dict[str, Any]:
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        ZONE: zone,
        BINDING_LABEL: zone,
        "node-pool": "gpu" if gpus else "cpu",
    }
    alloc = {"cpu": "96" if gpus else "32", "memory": "1000Gi" if gpus else "128Gi", "pods": "110"}
    if gpus:
        labels["gpu"] = "true"
        alloc[GPU] = str(gpus)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": taints} if taints else {},
        "status": {"allocatable": alloc, "capacity": dict(alloc)},
    }


def _nodes(zones: list[Zone]) -> list[dict[str, Any]]:
    out = [_node("system-0", zones[0].name, 0, [{"key": "CriticalAddonsOnly", "value": "true",
                                                  "effect": "NoSchedule"}])]  # fmt: skip
    for z in zones:
        for i in range(z.cpu_nodes):
            out.append(_node(f"{z.name}-cpu-{i}", z.name, 0, []))
        for i, g in enumerate(z.gpu_nodes):
            out.append(_node(f"{z.name}-gpu-{i}", z.name, g, [dict(GPU_TAINT)]))
    return out


def _cnp(name: str, ns: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "cilium.io/v2",
        "kind": "CiliumNetworkPolicy",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }


_DNS = {
    "toEndpoints": [
        {"matchLabels": {"k8s:io.kubernetes.pod.namespace": "kube-system", "k8s-app": "kube-dns"}}
    ],
    "toPorts": [{"ports": [{"port": "53", "protocol": "UDP"}]}],
}


def _policies(g: Group) -> list[dict[str, Any]]:
    """Default deny for the namespace (DNS aside); intra-zone traffic in allowed zones."""
    out = [
        _cnp("default-deny", g.namespace, {
            "endpointSelector": {},
            "ingress": [{}],
            "egress": [_DNS],
        })
    ]  # fmt: skip
    key = g.identity_label
    if key is None:  # open: the namespace's pods talk to each other, wherever they are
        peer = {"matchLabels": {"k8s:io.kubernetes.pod.namespace": g.namespace}}
        out.append(_cnp("allow-namespace", g.namespace, {
            "endpointSelector": {},
            "ingress": [{"fromEndpoints": [peer]}],
            "egress": [{"toEndpoints": [peer]}],
        }))  # fmt: skip
        return out
    for z in g.allowed:
        peer = {"matchLabels": {key: z}}
        out.append(
            _cnp(f"allow-intra-{z}", g.namespace, {
                "endpointSelector": {"matchLabels": {key: z}},
                "ingress": [{"fromEndpoints": [peer]}],
                "egress": [{"toEndpoints": [peer]}],
            })
        )  # fmt: skip
    return out


# --- groups and jobs -------------------------------------------------------------------------


def _groups(rng: random.Random, zones: list[Zone]) -> list[Group]:
    gpu_zones = [z.name for z in zones if z.gpus]
    out = []
    for i in range(rng.choice((3, 4, 5))):
        profile = PROFILES[i % len(PROFILES)]
        identity = ("static", "binding", "static", "open", "binding")[i]
        # most groups may use every zone; some are fenced off a few
        allowed = [z.name for z in zones if z.name in gpu_zones or rng.random() < 0.5]
        if identity == "open":
            allowed = [z.name for z in zones]
        elif rng.random() < 0.4 and len(gpu_zones) > 2:
            drop = set(rng.sample(gpu_zones, rng.randint(1, len(gpu_zones) - 2)))
            allowed = [z for z in allowed if z not in drop]
        out.append(
            Group(
                name=f"team-{i}",
                namespace=f"train-{i}",
                profile=profile,
                identity=identity,
                allowed=tuple(allowed),
                gpu_coordinator=profile == "kubeflow-training-operator" and rng.random() < 0.7,
            )
        )
    return out


def _workers(rng: random.Random, most: int) -> int:
    n = rng.choice((1, 2, 2, 3, 4, 4, 6, 8, 8, 12, 16))
    return max(1, min(n, most - 1))


def _jobs(rng: random.Random, spec: SchedSpec, zones: list[Zone], groups: list[Group]) -> list[Job]:
    gpus = {z.name: z.gpus for z in zones}
    want = spec.load * sum(gpus.values())
    out: list[Job] = []
    total = 0
    clock = 0.0
    while total < want and len(out) < spec.max_jobs:
        g = groups[len(out) % len(groups)]
        most = max(gpus[z] for z in g.allowed)  # every job fits one allowed zone alone
        workers = _workers(rng, most + (0 if g.gpu_coordinator else 1))
        clock += rng.expovariate(1.0)
        job = Job(
            group=g,
            name=f"{g.name}-job-{len(out):03d}",
            workers=workers,
            arrival=round(clock, 3),
            duration=round(rng.uniform(2.0, 10.0), 3),
            known=rng.random() < spec.known,
        )
        out.append(job)
        total += job.gpus
    return out


def generate(spec: SchedSpec) -> Scenario:
    if not 3 <= spec.zones <= 26:
        raise ValueError("zones: 3..26")
    rng = random.Random(spec.seed * 1000 + spec.zones)
    zones = _zones(rng, spec.zones)
    groups = _groups(rng, zones)
    jobs = _jobs(rng, spec, zones, groups)
    sc = Scenario(spec, zones, groups, jobs)
    sc.nodes = _nodes(zones)
    sc.policies = [p for g in groups for p in _policies(g)]
    return sc


# --- manifests and the pods their controllers create -----------------------------------------


def _container(gpu: bool, cpu: str) -> dict[str, Any]:
    req: dict[str, str] = {"cpu": cpu, "memory": "8Gi"}
    res: dict[str, Any] = {"requests": req}
    if gpu:
        req[GPU] = "1"
        res["limits"] = {GPU: "1"}
    return {
        "name": "trainer",
        "image": "registry.example/trainer:2.5",
        "ports": [{"containerPort": PORT, "name": "rendezvous", "protocol": "TCP"}],
        "resources": res,
    }


def _pod_spec(gpu: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [_container(gpu, "2" if gpu else "1")]}
    if gpu:
        spec["tolerations"] = [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}]
    return spec


def _manifests(job: Job) -> list[dict[str, Any]]:
    g, name, ns = job.group, job.name, job.group.namespace
    coord_gpu = g.gpu_coordinator
    if g.profile == "custom":
        out = []
        for role, n, gpu in (("coordinator", 1, coord_gpu), ("worker", job.workers, True)):
            labels = {CUSTOM_JOB: name, CUSTOM_ROLE: role}
            out.append({
                "apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": f"{name}-{role}", "namespace": ns},
                "spec": {"parallelism": n, "completions": n,
                         "template": {"metadata": {"labels": labels}, "spec": _pod_spec(gpu)}},
            })  # fmt: skip
        return out
    mpi = g.profile == "mpi-operator"
    lead = "Launcher" if mpi else "Master"
    specs = {
        lead: {"replicas": 1, "template": {"spec": _pod_spec(coord_gpu)}},
        "Worker": {"replicas": job.workers, "template": {"spec": _pod_spec(True)}},
    }
    if mpi:
        return [{"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
                 "metadata": {"name": name, "namespace": ns},
                 "spec": {"slotsPerWorker": 1, "mpiReplicaSpecs": specs}}]  # fmt: skip
    return [{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
             "metadata": {"name": name, "namespace": ns},
             "spec": {"pytorchReplicaSpecs": specs}}]  # fmt: skip


def _pod(name: str, ns: str, labels: dict[str, str], gpu: bool) -> dict[str, Any]:
    spec = _pod_spec(gpu)
    spec["restartPolicy"] = "OnFailure"
    spec["terminationGracePeriodSeconds"] = 0
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": spec,
    }


def pods_of(job: Job) -> list[dict[str, Any]]:
    """The job's pods with the labels its controller stamps, in the order it creates them:
    the coordinator first (the MPI Operator creates the workers first: it is last there)."""
    g, name, ns = job.group, job.name, job.group.namespace
    if g.profile == "custom":
        coord = [_pod(f"{name}-coordinator-0", ns, {CUSTOM_JOB: name, CUSTOM_ROLE: "coordinator"},
                      g.gpu_coordinator)]  # fmt: skip
        workers = [
            _pod(f"{name}-worker-{i}", ns, {CUSTOM_JOB: name, CUSTOM_ROLE: "worker"}, True)
            for i in range(job.workers)
        ]
        return coord + workers
    mpi = g.profile == "mpi-operator"
    operator = "mpi-operator" if mpi else "pytorchjob-controller"
    lead = "launcher" if mpi else "master"
    base = {KF_JOB: name, KF_OPERATOR: operator}
    if mpi:  # mpi-operator v0.6 defaultLabels, plus the workers' index
        lead_labels = {**base, KF_ROLE: "launcher"}
        worker_labels = [{**base, KF_ROLE: "worker", KF_INDEX: str(i)} for i in range(job.workers)]
    else:  # training-operator v1.9: replica type and index; job-role on the master
        lead_labels = {**base, KF_REPLICA: "master", KF_INDEX: "0", KF_ROLE: "master"}
        worker_labels = [
            {**base, KF_REPLICA: "worker", KF_INDEX: str(i)} for i in range(job.workers)
        ]
    coord = [_pod(f"{name}-{lead}-0", ns, lead_labels, g.gpu_coordinator)]
    workers = [_pod(f"{name}-worker-{i}", ns, lab, True) for i, lab in enumerate(worker_labels)]
    return workers + coord if mpi else coord + workers
