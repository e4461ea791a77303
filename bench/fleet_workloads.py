"""The fleet's training jobs (bench/fleet.py): every profile, one namespace per team, as
kubectl lists them (the last-applied annotation, status and managedFields added)."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from fleet_base import (
    CUSTOM_JOB,
    CUSTOM_ROLE,
    GPU,
    GPU_POOLS,
    JS_NAME,
    KF_JOB,
    KUEUE_REQUIRED,
    MODELS,
    POOLS,
    PRODUCT,
    VC_JOB,
    ZONE,
    FleetSpec,
    Team,
    add_noise,
    stamp,
)

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
    pool = team.pool if rng.random() < 0.8 else rng.choice(GPU_POOLS)
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


def make_workloads(
    rng: random.Random, spec: FleetSpec, teams: list[Team], zones: list[str]
) -> list[dict[str, Any]]:
    out = []
    for j in range(spec.jobs):
        team = teams[j % len(teams)]
        name = f"{MODELS[j % len(MODELS)]}-{team.profile.split('-')[0][:6]}-{j:04d}"
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


def add_workload_noise(rng: random.Random, body: dict[str, Any]) -> None:
    applied = json.dumps(body, sort_keys=True, separators=(",", ":"))
    body["metadata"]["annotations"] = {
        "kubectl.kubernetes.io/last-applied-configuration": applied + "\n"
    }
    body["metadata"]["generation"] = 1
    body["status"] = {
        "conditions": [
            {"lastTransitionTime": stamp(rng), "lastUpdateTime": stamp(rng),
             "message": f"{body['kind']} {body['metadata']['name']} is created.",
             "reason": "Created", "status": "True", "type": "Created"},
        ],
        "startTime": stamp(rng),
    }  # fmt: skip
    add_noise(rng, body, "kubectl-client-side-apply")
