"""Volcano (batch.volcano.sh/v1alpha1 Job): tasks, each `replicas` pods of one template.

Read from volcano.sh/volcano@v1.10.0 pkg/controllers/job/job_controller_util.go
createJobPod: pods <job>-<task>-<index>, labels volcano.sh/task-index, job-name,
task-spec, job-namespace and queue-name over the template's (a task without a name is
default<index>, the queue defaults to `default`). The Volcano scheduler gangs them.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogen.manifest import KubeObject, as_list, as_map
from topogen.operators.base import Inputs, Operator, PodSet, template_of

__all__ = ["JOB_LABEL", "TASK_LABEL", "Volcano"]

JOB_LABEL = "volcano.sh/job-name"
TASK_LABEL = "volcano.sh/task-spec"
INDEX_LABEL = "volcano.sh/task-index"


class Volcano(Operator):
    name = "volcano"
    title = "Volcano"
    kinds = (("batch.volcano.sh", "Job"),)
    job_label = JOB_LABEL
    role_label = TASK_LABEL
    # the plugins' defaults (mpi, pytorch: master/worker; tensorflow: chief/ps/worker) and
    # the MPI integration example's mpimaster / mpiworker
    coordinator_roles = ("master", "mpimaster", "launcher", "chief", "coordinator")
    worker_roles = ("worker", "workers", "mpiworker", "ps")

    def pods(self, obj: KubeObject, inputs: Inputs) -> Iterator[PodSet]:
        spec = as_map(obj.body.get("spec"), "spec", obj)
        queue = str(spec.get("queue") or "default")
        for i, t in enumerate(as_list(spec.get("tasks"), "spec.tasks", obj)):
            tm = as_map(t, f"spec.tasks[{i}]", obj)
            name = str(tm.get("name") or f"default{i}")
            labels = {
                INDEX_LABEL: "0",
                JOB_LABEL: obj.name,
                TASK_LABEL: name,
                "volcano.sh/job-namespace": obj.namespace or "default",
                "volcano.sh/queue-name": queue,
            }
            template = None if tm.get("template") is None else template_of(tm["template"])
            yield PodSet(
                name,
                tm.get("replicas", 1),
                template,
                f"spec.tasks[{i}].template",
                labels,
                ("spec", "tasks", i, "template"),
                {INDEX_LABEL: "0", TASK_LABEL: name, JOB_LABEL: obj.name},
                (INDEX_LABEL,),
            )

    rules = Operator.rules_anchored_on_members
