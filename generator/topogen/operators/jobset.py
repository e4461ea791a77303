"""JobSet (jobset.x-k8s.io/v1alpha2): replicated jobs, each `replicas` Jobs of `parallelism` pods.

Read from sigs.k8s.io/jobset@v0.8.0, @v0.10.1, @v0.11.0 and @v0.12.0
pkg/controllers/jobset_controller.go constructJob / labelAndAnnotateObject and
pkg/webhooks/jobset_webhook.go Default: Job <jobset>-<rjob>-<index>, Indexed completion
(pods numbered by batch.kubernetes.io/job-completion-index), pod labels jobset-name,
replicatedjob-name, job-index, job-global-index, job-key and the others below (the
group labels and jobset-uid since v0.10; the uid is not knowable), the Job
controller's job-name labels. A replicated job with dependsOn is created once its
dependencies are Ready or Complete; under startupPolicy InOrder, once the earlier ones
are Ready. JobSet marks no rank 0: workers follow the members of their own JobSet.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import Any

from topogen.digests import sha1_hex
from topogen.errors import InputError
from topogen.manifest import KubeObject, as_list, as_map
from topogen.operators.base import Inputs, Operator, PodSet, template_of

__all__ = [
    "COMPLETION_INDEX",
    "JOBSET_NAME",
    "JOB_INDEX",
    "REPLICATED_JOB",
    "JobSet",
    "jobset_pods",
]

JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB = "jobset.sigs.k8s.io/replicatedjob-name"
JOB_INDEX = "jobset.sigs.k8s.io/job-index"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"  # an Indexed Job's pod number
_P = "jobset.sigs.k8s.io/"


def _int(value: Any, what: str, obj: KubeObject, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InputError(
            f"{obj.where()}: {what} must be an integer of at least {minimum}", path=obj.path
        )
    return value


def jobset_pods(
    obj: KubeObject,
    name: str,
    spec: Mapping[str, Any],
    *,
    where: str,
    at: tuple[str | int, ...] | None,
    split: Collection[str] = (),
    late: Collection[str] = (),
    extra: Mapping[str, str] | None = None,
) -> Iterator[PodSet]:
    """The pods of JobSet `name` with `spec`, per Job; the Jobs of replicated jobs in
    `split` give pod 0 a PodSet of its own; those in `late` are created after others."""
    jobs = [
        as_map(j, f"{where}.replicatedJobs[{i}]", obj)
        for i, j in enumerate(as_list(spec.get("replicatedJobs"), f"{where}.replicatedJobs", obj))
    ]
    replicas = [
        _int(j.get("replicas", 1), f"{where}.replicatedJobs[{i}].replicas", obj)
        for i, j in enumerate(jobs)
    ]
    groups: dict[str, int] = {}
    for j, r in zip(jobs, replicas, strict=True):
        g = str(j.get("groupName") or "default")
        groups[g] = groups.get(g, 0) + r
    coordinator = as_map(spec.get("coordinator"), f"{where}.coordinator", obj)
    subdomain = str(as_map(spec.get("network"), f"{where}.network", obj).get("subdomain") or name)
    in_order = (
        as_map(spec.get("startupPolicy"), f"{where}.startupPolicy", obj).get("startupPolicyOrder")
        == "InOrder"
    )
    global_index, group_start = 0, dict.fromkeys(groups, 0)
    for i, (rj, count) in enumerate(zip(jobs, replicas, strict=True)):
        rw = f"{where}.replicatedJobs[{i}]"
        rname = str(rj.get("name") or "")
        group = str(rj.get("groupName") or "default")
        jt = as_map(rj.get("template"), f"{rw}.template", obj)
        job = as_map(jt.get("spec"), f"{rw}.template.spec", obj)
        pods = _int(job.get("parallelism", 1), f"{rw}.template.spec.parallelism", obj)
        indexed = job.get("completionMode", "Indexed") == "Indexed"
        if job.get("template") is None:
            raise InputError(
                f"{obj.where()}: {rw}.template.spec.template is missing", path=obj.path
            )
        template = template_of(job["template"])
        site = None if at is None else (*at, i, "template", "spec", "template")
        is_late = rname in late or (in_order and i > 0)
        for index in range(count):
            jname = f"{name}-{rname}-{index}"
            labels = {
                **(extra or {}),
                JOBSET_NAME: name,
                REPLICATED_JOB: rname,
                _P + "restart-attempt": "0",
                _P + "replicatedjob-replicas": str(count),
                _P + "global-replicas": str(sum(replicas)),
                JOB_INDEX: str(index),
                _P + "job-key": sha1_hex(f"{obj.namespace or 'default'}/{jname}".encode()),
                _P + "job-global-index": str(global_index),
                _P + "group-name": group,
                _P + "group-replicas": str(groups[group]),
                _P + "job-group-index": str(group_start[group] + index),
                "batch.kubernetes.io/job-name": jname,
                "job-name": jname,
            }
            if coordinator.get("replicatedJob"):
                labels[_P + "coordinator"] = (
                    f"{name}-{coordinator['replicatedJob']}-{coordinator.get('jobIndex', 0)}-"
                    f"{coordinator.get('podIndex', 0)}.{subdomain}"
                )
            annotations = {JOBSET_NAME: name, REPLICATED_JOB: rname, JOB_INDEX: str(index)}
            keys: tuple[str, ...] = ()
            if indexed:
                labels[COMPLETION_INDEX] = annotations[COMPLETION_INDEX] = "0"
                keys = (COMPLETION_INDEX,)
            tmpl = {
                **template,
                "metadata": {
                    **template["metadata"],
                    "labels": {**(template["metadata"].get("labels") or {}), **labels},
                },
            }
            replica = rname if count == 1 else f"{rname}-{index}"
            if rname in split and indexed and pods > 1:
                yield PodSet(
                    f"{replica}-0",
                    1,
                    tmpl,
                    f"{rw}.template.spec.template",
                    {},
                    site,
                    annotations,
                    (),
                    is_late,
                )
                rest = {
                    **tmpl,
                    "metadata": {
                        **tmpl["metadata"],
                        "labels": {**tmpl["metadata"]["labels"], COMPLETION_INDEX: "1"},
                    },
                }
                yield PodSet(
                    replica,
                    pods - 1,
                    rest,
                    f"{rw}.template.spec.template",
                    {},
                    site,
                    {**annotations, COMPLETION_INDEX: "1"},
                    keys,
                    is_late,
                )
            else:
                yield PodSet(
                    replica,
                    pods,
                    tmpl,
                    f"{rw}.template.spec.template",
                    {},
                    site,
                    annotations,
                    keys,
                    is_late,
                )
            global_index += 1
        group_start[group] += count


class JobSet(Operator):
    name = "jobset"
    title = "JobSet"
    kinds = (("jobset.x-k8s.io", "JobSet"),)
    job_label = JOBSET_NAME
    role_label = REPLICATED_JOB
    coordinator_roles = ("leader", "launcher", "driver", "coordinator", "master")
    worker_roles = ("worker", "workers", "node")

    def pods(self, obj: KubeObject, inputs: Inputs) -> Iterator[PodSet]:
        spec = as_map(obj.body.get("spec"), "spec", obj)
        late = {
            str(j.get("name"))
            for j in as_list(spec.get("replicatedJobs"), "spec.replicatedJobs", obj)
            if isinstance(j, dict) and j.get("dependsOn")
        }
        yield from jobset_pods(
            obj, obj.name, spec, where="spec", at=("spec", "replicatedJobs"), late=late
        )

    rules = Operator.rules_anchored_on_members
