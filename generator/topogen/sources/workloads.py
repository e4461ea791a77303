"""Workload manifests into Workloads: one per pod template, with the labels its pods get."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from topogen.errors import InputError
from topogen.model import Namespace, Workload
from topogen.sources.objects import KubeObject, as_list, as_map, labels_of, string_map
from topogen.sources.podspec import parse_pod_spec, parse_pod_template
from topogen.sources.profiles import (
    COMPLETION_INDEX,
    JS_INDEX,
    JS_NAME,
    JS_RJOB,
    KF_JOB,
    KF_REPLICA,
    KF_ROLE,
    VC_JOB,
    VC_TASK,
)

__all__ = ["WORKLOAD_KINDS", "read_namespaces", "read_workloads"]

_Reader = Callable[[KubeObject], Iterator[Workload]]


def read_workloads(objects: Iterable[KubeObject], skipped: list[str]) -> list[Workload]:
    out: list[Workload] = []
    for obj in objects:
        reader = WORKLOAD_KINDS.get((obj.group, obj.kind))
        if reader is None:
            if obj.kind != "Namespace":
                skipped.append(f"{obj.path}: {obj.where()} ({obj.api_version}) is not a workload")
            continue
        out.extend(reader(obj))
    return out


def read_namespaces(objects: Iterable[KubeObject]) -> list[Namespace]:
    out = []
    for obj in objects:
        if obj.kind == "Namespace" and obj.api_version == "v1":
            labels = labels_of(obj)
            labels.setdefault("kubernetes.io/metadata.name", obj.name)
            out.append(Namespace(obj.name, labels))
    return out


def _namespace(obj: KubeObject) -> str:
    return obj.namespace or "default"


def _workload(
    obj: KubeObject,
    replica: str,
    replicas: Any,
    template: Any,
    what: str,
    extra: dict[str, str] | None = None,
) -> Workload:
    if replicas is None:
        replicas = 1
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 0:
        raise InputError(
            f"{obj.where()}: {what} replicas must be a non-negative integer", path=obj.path
        )
    if template is None:
        raise InputError(f"{obj.where()}: {what} has no pod template", path=obj.path)
    return Workload(
        obj.kind,
        obj.api_version,
        _namespace(obj),
        obj.name,
        replica,
        replicas,
        parse_pod_template(template, what, obj, extra),
        obj.path,
    )


def _pod(obj: KubeObject) -> Iterator[Workload]:
    meta = as_map(obj.body.get("metadata"), "metadata", obj)
    labels = labels_of(obj)
    annotations = string_map(meta.get("annotations"), "metadata.annotations", obj)
    spec = as_map(obj.body.get("spec"), "spec", obj)
    tmpl = parse_pod_spec(spec, "spec", obj, labels, annotations)
    yield Workload(obj.kind, obj.api_version, _namespace(obj), obj.name, "", 1, tmpl, obj.path)


def _controller(obj: KubeObject) -> Iterator[Workload]:
    spec = as_map(obj.body.get("spec"), "spec", obj)
    count = spec.get("replicas", 1)
    if obj.kind == "Job":
        count = spec.get("parallelism", 1)
    elif obj.kind == "DaemonSet":
        count = 1
    yield _workload(obj, "", count, spec.get("template"), "spec.template")


def _cronjob(obj: KubeObject) -> Iterator[Workload]:
    spec = as_map(obj.body.get("spec"), "spec", obj)
    job = as_map(
        as_map(spec.get("jobTemplate"), "spec.jobTemplate", obj).get("spec"),
        "spec.jobTemplate.spec",
        obj,
    )
    yield _workload(
        obj, "", job.get("parallelism", 1), job.get("template"), "spec.jobTemplate.spec.template"
    )


def _kubeflow(field: str, operator: str) -> _Reader:
    def read(obj: KubeObject) -> Iterator[Workload]:
        spec = as_map(obj.body.get("spec"), "spec", obj)
        replica_specs = as_map(spec.get(field), f"spec.{field}", obj)
        if not replica_specs:
            raise InputError(f"{obj.where()}: spec.{field} is empty", path=obj.path)
        for rtype in sorted(replica_specs):
            rs = as_map(replica_specs[rtype], f"spec.{field}.{rtype}", obj)
            extra = {
                KF_JOB: obj.name,
                KF_REPLICA: str(rtype).lower(),
                "training.kubeflow.org/operator-name": operator,
            }
            if str(rtype).lower() in ("master", "chief", "launcher"):
                extra[KF_ROLE] = "launcher" if operator == "mpi-operator" else "master"
            elif operator == "mpi-operator":
                extra[KF_ROLE] = "worker"
            yield _workload(
                obj,
                str(rtype),
                rs.get("replicas", 1),
                rs.get("template"),
                f"spec.{field}.{rtype}.template",
                extra,
            )

    return read


def _jobset(obj: KubeObject) -> Iterator[Workload]:
    spec = as_map(obj.body.get("spec"), "spec", obj)
    for i, rj in enumerate(as_list(spec.get("replicatedJobs"), "spec.replicatedJobs", obj)):
        rw = f"spec.replicatedJobs[{i}]"
        r = as_map(rj, rw, obj)
        name = str(r.get("name") or "")
        job = as_map(
            as_map(r.get("template"), f"{rw}.template", obj).get("spec"), f"{rw}.template.spec", obj
        )
        replicas = r.get("replicas", 1)
        parallelism = job.get("parallelism", 1)
        if not isinstance(replicas, int) or not isinstance(parallelism, int):
            raise InputError(
                f"{obj.where()}: {rw} replicas and parallelism must be integers", path=obj.path
            )
        extra = {JS_NAME: obj.name, JS_RJOB: name}
        yield _workload(
            obj,
            name,
            replicas * parallelism,
            job.get("template"),
            f"{rw}.template.spec.template",
            extra,
        )


def _trainjob(obj: KubeObject) -> Iterator[Workload]:
    """Kubeflow Trainer v2: the pods of its JobSet's `node` job; rank 0 coordinates."""
    spec = as_map(obj.body.get("spec"), "spec", obj)
    trainer = as_map(spec.get("trainer"), "spec.trainer", obj)
    nodes = trainer.get("numNodes", 1)
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
        raise InputError(
            f"{obj.where()}: spec.trainer.numNodes must be a positive integer", path=obj.path
        )
    pod_spec: dict[str, Any] = {}
    overrides = spec.get("podTemplateOverrides", spec.get("podSpecOverrides"))
    for i, o in enumerate(as_list(overrides, "spec.podTemplateOverrides", obj)):
        om = as_map(o, f"spec.podTemplateOverrides[{i}]", obj)
        targets = [
            as_map(t, "targetJobs", obj).get("name")
            for t in as_list(om.get("targetJobs"), "targetJobs", obj)
        ]
        if targets and "node" not in targets:
            continue
        body = as_map(om.get("spec"), "spec", obj) if "spec" in om else om
        for key in ("nodeSelector", "affinity", "tolerations"):
            if key in body:
                pod_spec[key] = body[key]
    resources = trainer.get("resourcesPerNode")
    pod_spec["containers"] = [{"name": "node", "resources": resources or {}}]
    template = {"metadata": {}, "spec": pod_spec}
    base = {JS_NAME: obj.name, JS_RJOB: "node"}
    yield _workload(
        obj, "node-0", 1, template, "spec", {**base, JS_INDEX: "0", COMPLETION_INDEX: "0"}
    )
    if nodes > 1:
        yield _workload(
            obj, "node", nodes - 1, template, "spec", {**base, JS_INDEX: "0", COMPLETION_INDEX: "1"}
        )


def _volcano(obj: KubeObject) -> Iterator[Workload]:
    spec = as_map(obj.body.get("spec"), "spec", obj)
    for i, t in enumerate(as_list(spec.get("tasks"), "spec.tasks", obj)):
        tm = as_map(t, f"spec.tasks[{i}]", obj)
        name = str(tm.get("name") or f"task{i}")
        yield _workload(
            obj,
            name,
            tm.get("replicas", 1),
            tm.get("template"),
            f"spec.tasks[{i}].template",
            {VC_JOB: obj.name, VC_TASK: name},
        )


WORKLOAD_KINDS: dict[tuple[str, str], _Reader] = {
    ("", "Pod"): _pod,
    ("apps", "Deployment"): _controller,
    ("apps", "StatefulSet"): _controller,
    ("apps", "ReplicaSet"): _controller,
    ("apps", "DaemonSet"): _controller,
    ("batch", "Job"): _controller,
    ("batch", "CronJob"): _cronjob,
    ("kubeflow.org", "PyTorchJob"): _kubeflow("pytorchReplicaSpecs", "pytorchjob-controller"),
    ("kubeflow.org", "TFJob"): _kubeflow("tfReplicaSpecs", "tfjob-controller"),
    ("kubeflow.org", "XGBoostJob"): _kubeflow("xgbReplicaSpecs", "xgboostjob-controller"),
    ("kubeflow.org", "PaddleJob"): _kubeflow("paddleReplicaSpecs", "paddlejob-controller"),
    ("kubeflow.org", "MPIJob"): _kubeflow("mpiReplicaSpecs", "mpi-operator"),
    ("trainer.kubeflow.org", "TrainJob"): _trainjob,
    ("jobset.x-k8s.io", "JobSet"): _jobset,
    ("batch.volcano.sh", "Job"): _volcano,
}
