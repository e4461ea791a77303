"""JobSet (jobset.x-k8s.io): replicated Jobs, each `replicas` Jobs of `parallelism` pods.

The controller labels every pod with the JobSet's name and its replicated job's name.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogen.errors import InputError
from topogen.manifest import KubeObject, as_list, as_map
from topogen.operators.base import Operator, PodSet

__all__ = ["COMPLETION_INDEX", "JOBSET_NAME", "JOB_INDEX", "REPLICATED_JOB", "JobSet"]

JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB = "jobset.sigs.k8s.io/replicatedjob-name"
JOB_INDEX = "jobset.sigs.k8s.io/job-index"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"  # an Indexed Job's pod number


class JobSet(Operator):
    name = "jobset"
    kinds = (("jobset.x-k8s.io", "JobSet"),)
    job_label = JOBSET_NAME
    role_label = REPLICATED_JOB
    coordinator_roles = ("leader", "launcher", "driver", "coordinator", "master")
    worker_roles = ("worker", "workers", "node")

    def pods(self, obj: KubeObject) -> Iterator[PodSet]:
        spec = as_map(obj.body.get("spec"), "spec", obj)
        for i, rj in enumerate(as_list(spec.get("replicatedJobs"), "spec.replicatedJobs", obj)):
            rw = f"spec.replicatedJobs[{i}]"
            r = as_map(rj, rw, obj)
            name = str(r.get("name") or "")
            job = as_map(
                as_map(r.get("template"), f"{rw}.template", obj).get("spec"),
                f"{rw}.template.spec",
                obj,
            )
            replicas = r.get("replicas", 1)
            parallelism = job.get("parallelism", 1)
            if not isinstance(replicas, int) or not isinstance(parallelism, int):
                raise InputError(
                    f"{obj.where()}: {rw} replicas and parallelism must be integers",
                    path=obj.path,
                )
            yield PodSet(
                name,
                replicas * parallelism,
                job.get("template"),
                f"{rw}.template.spec.template",
                {JOBSET_NAME: obj.name, REPLICATED_JOB: name},
                ("spec", "replicatedJobs", i, "template", "spec", "template"),
            )
