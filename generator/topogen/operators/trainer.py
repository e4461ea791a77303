"""Kubeflow Trainer v2 (trainer.kubeflow.org TrainJob): its runtime's JobSet, merged.

A TrainJob holds no pod template: its runtime (spec.runtimeRef: a ClusterTrainingRuntime,
or a TrainingRuntime of its namespace) does. The controller merges the TrainJob into it
(operators/runtime.py) and creates the JobSet named like the TrainJob, whose pods JobSet
labels (operators/jobset.py). Rank 0 is pod 0 of the `node` job (PET_MASTER_ADDR
<trainjob>-node-0-0); an MPI runtime's `launcher` job coordinates too. Initializer jobs
run to completion before the trainer job starts: they are no member of its group.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from topogen.manifest import KubeObject, as_map
from topogen.model import LabelSelector, Requirement
from topogen.operators.base import Inputs, Operator, PodSet, RoleConfig, role_in
from topogen.operators.jobset import COMPLETION_INDEX, JOBSET_NAME, REPLICATED_JOB, jobset_pods
from topogen.operators.profile import Profile
from topogen.operators.runtime import ANCESTOR, runtime_ref, trainjob_jobset

__all__ = ["GROUP", "NODE_JOB", "KubeflowTrainer"]

GROUP = "trainer.kubeflow.org"
NODE_JOB = "node"  # the replicated job of Trainer v2 runtimes that runs the training
# what the trainer controller would use if the runtime were the default torch one: only
# when the runtime is not among the inputs (and said so)
_ASSUMED_RUNTIME: dict[str, Any] = {
    "spec": {
        "mlPolicy": {"numNodes": 1, "torch": {}},
        "template": {
            "spec": {
                "replicatedJobs": [
                    {
                        "name": NODE_JOB,
                        "template": {
                            "metadata": {"labels": {ANCESTOR: "trainer"}},
                            "spec": {"template": {"spec": {"containers": [{"name": NODE_JOB}]}}},
                        },
                    }
                ]
            }
        },
    }
}


class KubeflowTrainer(Operator):
    name = "kubeflow-trainer"
    title = "Kubeflow Trainer"
    kinds = ((GROUP, "TrainJob"),)
    job_label = JOBSET_NAME
    role_label = REPLICATED_JOB
    coordinator_roles = ("launcher",)
    worker_roles = (NODE_JOB,)

    def pods(self, obj: KubeObject, inputs: Inputs) -> Iterator[PodSet]:
        spec = as_map(obj.body.get("spec"), "spec", obj)
        kind, name = runtime_ref(spec, obj.where(), obj.path)
        namespace = (obj.namespace or "default") if kind == "TrainingRuntime" else ""
        found = inputs.find(GROUP, kind, namespace, name)
        runtime: Mapping[str, Any] = _ASSUMED_RUNTIME
        if found is None:
            where = f"{namespace}/{name}" if namespace else name
            inputs.warn(
                f"{obj.path}: {obj.where()}: its runtime {kind} {where} is not among the "
                "workloads; its pods are modelled from the TrainJob alone (numNodes pods of "
                "one node job): add the runtime for its containers, node selector and tolerations"
            )
        else:
            runtime = found.body
        made = trainjob_jobset(obj.body, runtime, obj.where(), obj.path)
        jobs = made.spec.get("replicatedJobs") or []
        members = [j["name"] for j in jobs if j["name"] not in made.initializers]
        late = {
            j["name"]
            for j in jobs
            if any(
                isinstance(d, dict) and d.get("name") in members for d in j.get("dependsOn") or []
            )
        }
        yield from jobset_pods(
            obj,
            obj.name,
            made.spec,
            where=f"{kind} {name} spec.template.spec",
            at=None,
            split={NODE_JOB},
            late=late,
            extra=made.pod_labels,
        )

    def profile(self, group: RoleConfig) -> Profile:
        if group.coordinator_roles is not None:
            return super().profile(group)
        # the MPI launcher, and rank 0 of the `node` job, coordinate; the others follow rank 0
        job = group.group_label or self.job_label
        role = group.role_label or self.role_label
        rank0 = LabelSelector(((COMPLETION_INDEX, "0"), (role, NODE_JOB)))
        others = LabelSelector(
            ((role, NODE_JOB),), (Requirement(COMPLETION_INDEX, "NotIn", ("0",)),)
        )
        return Profile(
            self.name,
            job,
            role,
            (role_in(role, ["launcher"]), rank0),
            (others,),
            members=role_in(role, ["launcher", NODE_JOB]),
        )
