"""MPI Operator (kubeflow.org MPIJob, v1 and v2beta1): a launcher and workers.

Its pods carry the Kubeflow job-name and replica-type labels and job-role=launcher on
the launcher, job-role=worker on the workers.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogen.manifest import KubeObject
from topogen.operators.base import Operator, PodSet
from topogen.operators.kubeflow import JOB_LABEL, LEADERS, ROLE_LABEL, replica_pods

__all__ = ["MpiOperator"]


class MpiOperator(Operator):
    name = "mpi-operator"
    kinds = (("kubeflow.org", "MPIJob"),)
    job_label = JOB_LABEL
    role_label = ROLE_LABEL
    coordinator_roles = ("launcher",)
    worker_roles = ("worker",)

    def pods(self, obj: KubeObject) -> Iterator[PodSet]:
        return replica_pods(obj, "mpiReplicaSpecs", "mpi-operator", _job_role)


def _job_role(replica: str) -> str:
    return "launcher" if replica in LEADERS else "worker"
