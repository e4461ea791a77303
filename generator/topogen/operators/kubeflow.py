"""Kubeflow Training Operator v1 (kubeflow.org/v1): PyTorchJob, TFJob, XGBoostJob, PaddleJob,
JAXJob and its own MPIJob.

Read from github.com/kubeflow/training-operator@v1.8.1 and @v1.9.2 (identical here):
pkg/controller.v1/common/pod.go createNewPod stamps operator-name, job-name,
replica-type (lower case), replica-index and, on the pod the kind's IsMasterRole picks,
job-role=master; the pod is <job>-<replica type>-<index>. The defaulting webhook gives
each replica spec 1 replica and the kind's port to its default container. The MPIJob
controller (pkg/controller.v1/mpi) makes a launcher Pod <job>-launcher (replica-type
launcher, job-role master, no replica-index, the kubectl-delivery init container) and
workers <job>-worker-<i> (default 0 of them).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from topogen.errors import InputError
from topogen.manifest import KubeObject, as_map
from topogen.model import LabelSelector, Requirement
from topogen.operators.base import Inputs, Operator, PodSet, role_in, template_of
from topogen.operators.profile import Profile

__all__ = [
    "INDEX_LABEL",
    "JOB_LABEL",
    "OPERATOR_LABEL",
    "REPLICA_LABEL",
    "ROLE_LABEL",
    "KubeflowTrainingOperator",
]

JOB_LABEL = "training.kubeflow.org/job-name"
REPLICA_LABEL = "training.kubeflow.org/replica-type"
INDEX_LABEL = "training.kubeflow.org/replica-index"
ROLE_LABEL = "training.kubeflow.org/job-role"
OPERATOR_LABEL = "training.kubeflow.org/operator-name"


@dataclass(frozen=True)
class _Kind:
    field: str  # spec.<field>: the replica specs
    controller: str  # the operator-name label
    container: str  # the default container, which gets the default port
    port: tuple[str, int] | None  # (name, number)
    types: tuple[str, ...]  # the replica types, as the webhook capitalises them
    masters: tuple[str, ...]  # types whose pods are masters when the job has one
    index_zero: tuple[str, ...]  # else: index 0 of these types is the master ("*": any)


_KINDS = {
    "PyTorchJob": _Kind(
        "pytorchReplicaSpecs",
        "pytorchjob-controller",
        "pytorch",
        ("pytorchjob-port", 23456),
        ("Master", "Worker"),
        ("Master",),
        ("Worker",),
    ),
    "TFJob": _Kind(
        "tfReplicaSpecs",
        "tfjob-controller",
        "tensorflow",
        ("tfjob-port", 2222),
        ("PS", "Worker", "Chief", "Master", "Evaluator"),
        ("Chief", "Master"),
        ("Worker",),
    ),
    "XGBoostJob": _Kind(
        "xgbReplicaSpecs",
        "xgboostjob-controller",
        "xgboost",
        ("xgboostjob-port", 9999),
        ("Master", "Worker"),
        ("Master",),
        (),
    ),
    "PaddleJob": _Kind(
        "paddleReplicaSpecs",
        "paddlejob-controller",
        "paddle",
        ("master", 36543),
        ("Master", "Worker"),
        ("Master",),
        (),
    ),
    "JAXJob": _Kind(
        "jaxReplicaSpecs",
        "jaxjob-controller",
        "jax",
        ("jaxjob-port", 6666),
        ("Worker",),
        (),
        ("*",),
    ),
    "MPIJob": _Kind(
        "mpiReplicaSpecs",
        "mpijob-controller",
        "mpi",
        None,
        ("Launcher", "Worker"),
        (),
        (),
    ),
}
KUBECTL_DELIVERY = {
    "name": "kubectl-delivery",
    "image": "ghcr.io/kubeflow/training-v1/kubectl-delivery:latest",
    "resources": {
        "limits": {"cpu": "100m", "memory": "512Mi", "ephemeral-storage": "5Gi"},
        "requests": {"cpu": "100m", "memory": "512Mi", "ephemeral-storage": "5Gi"},
    },
}
_PADDLE = "paddlejob-controller"


def _cased(values: list[str]) -> list[str]:
    """Replica types are lower case in labels since v1.7 and were capitalised before."""
    out = set(values)
    out.update(v.lower() for v in values)
    out.update(v[:1].upper() + v[1:] for v in values)
    return sorted(out)


def _replica_specs(obj: KubeObject, kind: _Kind) -> dict[str, Mapping[str, Any]]:
    """spec.<field> keyed by the webhook's spelling of each type (setTypeNameToCamelCase)."""
    spec = as_map(obj.body.get("spec"), "spec", obj)
    raw = as_map(spec.get(kind.field), f"spec.{kind.field}", obj)
    if not raw:
        raise InputError(f"{obj.where()}: spec.{kind.field} is empty", path=obj.path)
    out: dict[str, Mapping[str, Any]] = {}
    for key, value in raw.items():
        name = next((t for t in kind.types if t.lower() == str(key).lower()), str(key))
        out[name] = as_map(value, f"spec.{kind.field}.{key}", obj)
    return out


def _with_port(template: dict[str, Any], kind: _Kind) -> dict[str, Any]:
    """The defaulting webhook's port on the default container (else the first one)."""
    if kind.port is None:
        return template
    containers = [dict(c) for c in template["spec"].get("containers") or [] if isinstance(c, dict)]
    if not containers:
        return template
    at = next((i for i, c in enumerate(containers) if c.get("name") == kind.container), 0)
    ports = list(containers[at].get("ports") or [])
    if not any(isinstance(p, dict) and p.get("name") == kind.port[0] for p in ports):
        ports.append({"name": kind.port[0], "containerPort": kind.port[1]})
    containers[at] = {**containers[at], "ports": ports}
    template["spec"] = {**template["spec"], "containers": containers}
    return template


class KubeflowTrainingOperator(Operator):
    name = "kubeflow-training-operator"
    title = "Kubeflow Training Operator"
    kinds = tuple(("kubeflow.org", kind) for kind in _KINDS)
    versions = {"MPIJob": ("v1",)}  # kubeflow.org/v2beta1 MPIJob is the MPI Operator's
    job_label = JOB_LABEL
    role_label = REPLICA_LABEL
    worker_roles = ("worker", "ps")

    def pods(self, obj: KubeObject, inputs: Inputs) -> Iterator[PodSet]:
        kind = _KINDS[obj.kind]
        specs = _replica_specs(obj, kind)
        if obj.kind == "MPIJob":
            yield from _mpi_pods(obj, kind, specs)
            return
        has_master = any(t in specs for t in kind.masters)
        for rtype in sorted(specs):
            rs = specs[rtype]
            where = f"spec.{kind.field}.{rtype}.template"
            at = ("spec", kind.field, _written(obj, kind, rtype), "template")
            replicas = rs.get("replicas", 1)
            if rs.get("template") is None:
                raise InputError(f"{obj.where()}: {where} is missing", path=obj.path)
            labels = {
                OPERATOR_LABEL: kind.controller,
                JOB_LABEL: obj.name,
                REPLICA_LABEL: rtype.lower(),
                INDEX_LABEL: "0",
            }
            template = _with_port(template_of(rs["template"]), kind)
            first_is_master = not has_master and (
                "*" in kind.index_zero or rtype in kind.index_zero
            )
            if rtype in kind.masters or first_is_master:
                master = {**labels, ROLE_LABEL: "master"}
                if rtype in kind.masters:  # every pod of a master type is a master
                    yield PodSet(
                        rtype, replicas, template, where, master, at, indexed=(INDEX_LABEL,)
                    )
                    continue
                yield PodSet(
                    f"{rtype}-0", min(_count(obj, replicas, where), 1), template, where, master, at
                )
                rest = {**labels, INDEX_LABEL: "1"}
                n = max(_count(obj, replicas, where) - 1, 0)
                yield PodSet(rtype, n, template, where, rest, at, indexed=(INDEX_LABEL,))
                continue
            yield PodSet(rtype, replicas, template, where, labels, at, indexed=(INDEX_LABEL,))

    def rules(self, job: str, role: str, coordinator: list[str], worker: list[str]) -> Profile:
        workers = _cased(worker)
        if coordinator:  # coordinatorRoles given: values of the role label, as written
            return Profile(
                self.name,
                job,
                role,
                (role_in(role, _cased(coordinator)),),
                (role_in(role, workers),),
            )
        # the pod IsMasterRole picks (job-role=master): the master, chief or launcher, else
        # worker 0; and, for pods written without job-role, those replica types
        masters = LabelSelector(((ROLE_LABEL, "master"),))
        leaders = role_in(role, _cased(["master", "chief", "launcher"]))
        types = Requirement(role, "In", tuple(workers))
        paddle = LabelSelector((), (Requirement(OPERATOR_LABEL, "In", (_PADDLE,)), types))
        return Profile(
            self.name,
            job,
            role,
            (masters, leaders),
            (paddle, LabelSelector((), (types,))),
            # a PaddleJob without a Master labels no master: its workers follow worker 0
            anchors=(LabelSelector(((INDEX_LABEL, "0"),), (types,)), masters),
            members=role_in(role, _cased(["master", "chief", "launcher", *worker])),
        )


def _written(obj: KubeObject, kind: _Kind, rtype: str) -> str:
    """The replica type's key as the manifest spells it."""
    raw = (obj.body.get("spec") or {}).get(kind.field) or {}
    return next((str(k) for k in raw if str(k).lower() == rtype.lower()), rtype)


def _count(obj: KubeObject, replicas: Any, where: str) -> int:
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 0:
        raise InputError(
            f"{obj.where()}: {where} replicas must be a non-negative integer", path=obj.path
        )
    return replicas


def _mpi_pods(
    obj: KubeObject, kind: _Kind, specs: dict[str, Mapping[str, Any]]
) -> Iterator[PodSet]:
    """The v1 MPIJob controller: one launcher Pod, `replicas` (default 0) worker Pods."""
    base = {OPERATOR_LABEL: kind.controller, JOB_LABEL: obj.name}
    launcher = specs.get("Launcher")
    if launcher is not None:
        where = f"spec.{kind.field}.Launcher.template"
        if launcher.get("template") is None:
            raise InputError(f"{obj.where()}: {where} is missing", path=obj.path)
        t = template_of(launcher["template"])
        spec = dict(t["spec"])
        spec["initContainers"] = [*(spec.get("initContainers") or []), dict(KUBECTL_DELIVERY)]
        spec.setdefault("serviceAccountName", f"{obj.name}-launcher")
        t["spec"] = spec
        labels = {**base, REPLICA_LABEL: "launcher", ROLE_LABEL: "master"}
        yield PodSet(
            "Launcher",
            1,
            t,
            where,
            labels,
            ("spec", kind.field, _written(obj, kind, "Launcher"), "template"),
        )
    worker = specs.get("Worker")
    if worker is not None:
        where = f"spec.{kind.field}.Worker.template"
        if worker.get("template") is None:
            raise InputError(f"{obj.where()}: {where} is missing", path=obj.path)
        t = template_of(worker["template"])
        containers = [dict(c) for c in t["spec"].get("containers") or [] if isinstance(c, dict)]
        if containers and not containers[0].get("command"):
            containers[0] = {**containers[0], "command": ["sleep"], "args": ["365d"]}
            t["spec"] = {**t["spec"], "containers": containers}
        labels = {**base, REPLICA_LABEL: "worker", INDEX_LABEL: "0"}
        at = ("spec", kind.field, _written(obj, kind, "Worker"), "template")
        yield PodSet(
            "Worker", worker.get("replicas", 0), t, where, labels, at, indexed=(INDEX_LABEL,)
        )
