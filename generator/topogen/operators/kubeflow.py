"""Kubeflow Training Operator (v1): PyTorchJob, TFJob, XGBoostJob, PaddleJob.

Each kind holds replica specs (spec.<kind>ReplicaSpecs.<Master|Worker|...>); the
controller labels each replica's pods with the job name, the replica type (lower case
since v1.7, capitalised before) and job-role=master on the master (or chief) pods.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from topogen.errors import InputError
from topogen.manifest import KubeObject, as_map
from topogen.operators.base import Operator, PodSet, Profile

__all__ = ["JOB_LABEL", "REPLICA_LABEL", "ROLE_LABEL", "KubeflowTrainingOperator", "replica_pods"]

JOB_LABEL = "training.kubeflow.org/job-name"
REPLICA_LABEL = "training.kubeflow.org/replica-type"
ROLE_LABEL = "training.kubeflow.org/job-role"
OPERATOR_LABEL = "training.kubeflow.org/operator-name"
LEADERS = ("master", "chief", "launcher")  # replica types whose pods lead the job

# kind -> (its replica specs field, the controller's name in the operator-name label)
_KINDS = {
    "PyTorchJob": ("pytorchReplicaSpecs", "pytorchjob-controller"),
    "TFJob": ("tfReplicaSpecs", "tfjob-controller"),
    "XGBoostJob": ("xgbReplicaSpecs", "xgboostjob-controller"),
    "PaddleJob": ("paddleReplicaSpecs", "paddlejob-controller"),
}


def replica_pods(
    obj: KubeObject, field: str, operator: str, job_role: Callable[[str], str | None]
) -> Iterator[PodSet]:
    """The pods of spec.<field>'s replica specs; job_role(replica type, lower case) is the
    job-role label their pods get, if any."""
    spec = as_map(obj.body.get("spec"), "spec", obj)
    replica_specs = as_map(spec.get(field), f"spec.{field}", obj)
    if not replica_specs:
        raise InputError(f"{obj.where()}: spec.{field} is empty", path=obj.path)
    for rtype in sorted(replica_specs):
        rs = as_map(replica_specs[rtype], f"spec.{field}.{rtype}", obj)
        replica = str(rtype)
        labels = {
            JOB_LABEL: obj.name,
            REPLICA_LABEL: replica.lower(),
            OPERATOR_LABEL: operator,
        }
        role = job_role(replica.lower())
        if role is not None:
            labels[ROLE_LABEL] = role
        yield PodSet(
            replica,
            rs.get("replicas", 1),
            rs.get("template"),
            f"spec.{field}.{rtype}.template",
            labels,
            ("spec", field, replica, "template"),
        )


def _with_case(values: list[str]) -> list[str]:
    """The replica-type label changed case between releases: accept both."""
    out = set(values)
    out.update(v.lower() for v in values)
    out.update(v[:1].upper() + v[1:] for v in values)
    return sorted(out)


class KubeflowTrainingOperator(Operator):
    name = "kubeflow-training-operator"
    kinds = tuple(("kubeflow.org", kind) for kind in _KINDS)
    job_label = JOB_LABEL
    role_label = REPLICA_LABEL
    coordinator_roles = ("master", "chief", "launcher")
    worker_roles = ("worker", "ps")

    def pods(self, obj: KubeObject) -> Iterator[PodSet]:
        field, controller = _KINDS[obj.kind]
        return replica_pods(obj, field, controller, _master)

    def rules(self, job: str, role: str, coordinator: list[str], worker: list[str]) -> Profile:
        return super().rules(job, role, _with_case(coordinator), _with_case(worker))


def _master(replica: str) -> str | None:
    return "master" if replica in LEADERS else None
