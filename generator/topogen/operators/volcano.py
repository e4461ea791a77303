"""Volcano (batch.volcano.sh Job): tasks, each `replicas` pods of one template.

The controller labels every pod with the job's name and its task's name.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogen.manifest import KubeObject, as_list, as_map
from topogen.operators.base import Operator, PodSet

__all__ = ["JOB_LABEL", "TASK_LABEL", "Volcano"]

JOB_LABEL = "volcano.sh/job-name"
TASK_LABEL = "volcano.sh/task-spec"


class Volcano(Operator):
    name = "volcano"
    kinds = (("batch.volcano.sh", "Job"),)
    job_label = JOB_LABEL
    role_label = TASK_LABEL
    coordinator_roles = ("master", "launcher", "chief", "coordinator")
    worker_roles = ("worker", "workers")

    def pods(self, obj: KubeObject) -> Iterator[PodSet]:
        spec = as_map(obj.body.get("spec"), "spec", obj)
        for i, t in enumerate(as_list(spec.get("tasks"), "spec.tasks", obj)):
            tm = as_map(t, f"spec.tasks[{i}]", obj)
            name = str(tm.get("name") or f"task{i}")
            yield PodSet(
                name,
                tm.get("replicas", 1),
                tm.get("template"),
                f"spec.tasks[{i}].template",
                {JOB_LABEL: obj.name, TASK_LABEL: name},
                ("spec", "tasks", i, "template"),
            )
