"""Custom: training jobs run by Kubernetes' own controllers (Pod, Deployment, StatefulSet,
ReplicaSet, DaemonSet, Job, CronJob), recognised by labels the config names: a group
label whose value names one job, a role label and its coordinator and worker values.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogen.manifest import KubeObject, as_map
from topogen.operators.base import Inputs, Operator, PodSet, role_in
from topogen.operators.profile import Profile

__all__ = ["Custom"]


class Custom(Operator):
    name = "custom"
    title = "Kubernetes' own controllers"
    kinds = (
        ("", "Pod"),
        ("apps", "Deployment"),
        ("apps", "StatefulSet"),
        ("apps", "ReplicaSet"),
        ("apps", "DaemonSet"),
        ("batch", "Job"),
        ("batch", "CronJob"),
    )
    required = ("groupLabel", "roleLabel", "coordinatorRoles", "workerRoles")
    detected = False  # every repository has these kinds: `topogen init` cannot tell

    def pods(self, obj: KubeObject, inputs: Inputs) -> Iterator[PodSet]:
        if obj.kind == "Pod":  # the object is its own template
            yield PodSet("", 1, obj.body, "", {}, ())
            return
        spec = as_map(obj.body.get("spec"), "spec", obj)
        if obj.kind == "CronJob":
            job = as_map(
                as_map(spec.get("jobTemplate"), "spec.jobTemplate", obj).get("spec"),
                "spec.jobTemplate.spec",
                obj,
            )
            at = ("spec", "jobTemplate", "spec", "template")
            what = "spec.jobTemplate.spec.template"
            yield PodSet("", job.get("parallelism", 1), job.get("template"), what, {}, at)
            return
        count = spec.get("replicas", 1)
        if obj.kind == "Job":
            count = spec.get("parallelism", 1)
        elif obj.kind == "DaemonSet":
            count = 1
        yield PodSet("", count, spec.get("template"), "spec.template", {}, ("spec", "template"))

    def rules(self, job: str, role: str, coordinator: list[str], worker: list[str]) -> Profile:
        profile = super().rules(job, role, coordinator, worker)
        members = role_in(role, [*coordinator, *worker])
        return Profile(
            profile.name, job, role, profile.coordinator, profile.worker, members=members
        )
