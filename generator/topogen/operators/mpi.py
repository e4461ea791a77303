"""MPI Operator (kubeflow.org/v2beta1 MPIJob): a launcher Job and worker Pods.

Read from github.com/kubeflow/mpi-operator@v0.6.0 pkg/controller/mpi_job_controller.go:
every pod gets operator-name=mpi-operator, job-name and job-role (launcher | worker);
workers are Pods <job>-worker-<i> with replica-index (default 0 replicas); the launcher
is the one pod of the batch Job <job>-launcher, created with the workers (AtStartup, the
default) or once they are all Ready (launcherCreationPolicy WaitForWorkersReady). No pod
carries replica-type. Workers therefore follow worker 0, which always exists with them.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogen.errors import InputError
from topogen.manifest import KubeObject, as_map
from topogen.model import LabelSelector
from topogen.operators.base import Inputs, Operator, PodSet, role_in, template_of
from topogen.operators.kubeflow import INDEX_LABEL, JOB_LABEL, OPERATOR_LABEL, ROLE_LABEL
from topogen.operators.profile import Profile

__all__ = ["MpiOperator"]

JOB_NAME = "batch.kubernetes.io/job-name"
LEGACY_JOB_NAME = "job-name"


class MpiOperator(Operator):
    name = "mpi-operator"
    title = "MPI Operator"
    kinds = (("kubeflow.org", "MPIJob"),)
    versions = {"MPIJob": ("v2beta1",)}
    job_label = JOB_LABEL
    role_label = ROLE_LABEL
    coordinator_roles = ("launcher",)
    worker_roles = ("worker",)

    def pods(self, obj: KubeObject, inputs: Inputs) -> Iterator[PodSet]:
        spec = as_map(obj.body.get("spec"), "spec", obj)
        specs = as_map(spec.get("mpiReplicaSpecs"), "spec.mpiReplicaSpecs", obj)
        if not specs:
            raise InputError(f"{obj.where()}: spec.mpiReplicaSpecs is empty", path=obj.path)
        by_type = {
            str(k).lower(): (str(k), as_map(v, f"spec.mpiReplicaSpecs.{k}", obj))
            for k, v in specs.items()
        }
        late = spec.get("launcherCreationPolicy") == "WaitForWorkersReady"
        base = {OPERATOR_LABEL: "mpi-operator", JOB_LABEL: obj.name}
        if "launcher" in by_type:
            key, rs = by_type["launcher"]
            where = f"spec.mpiReplicaSpecs.{key}.template"
            if rs.get("template") is None:
                raise InputError(f"{obj.where()}: {where} is missing", path=obj.path)
            job = f"{obj.name}-launcher"
            labels = {**base, ROLE_LABEL: "launcher", JOB_NAME: job, LEGACY_JOB_NAME: job}
            at = ("spec", "mpiReplicaSpecs", key, "template")
            yield PodSet("Launcher", 1, template_of(rs["template"]), where, labels, at, late=late)
        if "worker" in by_type:
            key, rs = by_type["worker"]
            where = f"spec.mpiReplicaSpecs.{key}.template"
            if rs.get("template") is None:
                raise InputError(f"{obj.where()}: {where} is missing", path=obj.path)
            t = template_of(rs["template"])
            containers = [dict(c) for c in t["spec"].get("containers") or [] if isinstance(c, dict)]
            if containers and not containers[0].get("command") and not containers[0].get("args"):
                containers[0] = {**containers[0], "command": ["/usr/sbin/sshd", "-De"]}
                t["spec"] = {**t["spec"], "containers": containers}
            labels = {**base, ROLE_LABEL: "worker", INDEX_LABEL: "0"}
            at = ("spec", "mpiReplicaSpecs", key, "template")
            yield PodSet(
                "Worker", rs.get("replicas", 0), t, where, labels, at, indexed=(INDEX_LABEL,)
            )

    def rules(self, job: str, role: str, coordinator: list[str], worker: list[str]) -> Profile:
        profile = super().rules(job, role, coordinator, worker)
        if role != ROLE_LABEL:
            return profile
        # worker 0: created with every worker, whatever launcherCreationPolicy says
        anchor = LabelSelector(((INDEX_LABEL, "0"),), role_in(role, worker).match_expressions)
        members = role_in(role, [*coordinator, *worker])
        return Profile(
            profile.name, job, role, profile.coordinator, profile.worker, (anchor,), members=members
        )
