"""Kubeflow Trainer v2 (trainer.kubeflow.org TrainJob): a JobSet made from a runtime.

A TrainJob holds no pod template: its runtime's JobSet does, and the TrainJob sets
spec.trainer (numNodes, resourcesPerNode) and, per replicated job, overrides of the pod
spec (podTemplateOverrides; podSpecOverrides in v2.0). Its training pods are those of
the `node` job, labelled as JobSet labels them, with Indexed-Job completion indices:
rank 0 coordinates, unless the runtime has an MPI `launcher`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from topogen.errors import InputError
from topogen.manifest import KubeObject, as_list, as_map
from topogen.model import LabelSelector, Requirement
from topogen.operators.base import Operator, Overrides, PodSet, Profile, RoleConfig, role_in
from topogen.operators.jobset import COMPLETION_INDEX, JOB_INDEX, JOBSET_NAME, REPLICATED_JOB

__all__ = ["NODE_JOB", "KubeflowTrainer"]

NODE_JOB = "node"  # the replicated job of Trainer v2 runtimes that runs the training
_SCHEDULING = ("nodeSelector", "affinity", "tolerations")


class KubeflowTrainer(Operator):
    name = "kubeflow-trainer"
    kinds = (("trainer.kubeflow.org", "TrainJob"),)
    job_label = JOBSET_NAME
    role_label = REPLICATED_JOB
    coordinator_roles = ("launcher",)
    worker_roles = (NODE_JOB,)
    overrides = Overrides(
        "podTemplateOverrides", NODE_JOB, _SCHEDULING, "podSpecOverrides", "Trainer v2.0"
    )

    def pods(self, obj: KubeObject) -> Iterator[PodSet]:
        """Rank 0 of the `node` job, then the other nodes (numNodes - 1 pods)."""
        spec = as_map(obj.body.get("spec"), "spec", obj)
        trainer = as_map(spec.get("trainer"), "spec.trainer", obj)
        nodes = trainer.get("numNodes", 1)
        if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
            raise InputError(
                f"{obj.where()}: spec.trainer.numNodes must be a positive integer", path=obj.path
            )
        pod_spec = _overridden(obj, spec)
        resources = trainer.get("resourcesPerNode")
        pod_spec["containers"] = [{"name": NODE_JOB, "resources": resources or {}}]
        template = {"metadata": {}, "spec": pod_spec}
        base = {JOBSET_NAME: obj.name, REPLICATED_JOB: NODE_JOB}
        rank0 = {**base, JOB_INDEX: "0", COMPLETION_INDEX: "0"}
        yield PodSet(f"{NODE_JOB}-0", 1, template, "spec", rank0)
        if nodes > 1:
            others = {**base, JOB_INDEX: "0", COMPLETION_INDEX: "1"}
            yield PodSet(NODE_JOB, nodes - 1, template, "spec", others)

    def profile(self, group: RoleConfig) -> Profile:
        if group.coordinator_roles is not None:
            return super().profile(group)
        # the MPI launcher, or rank 0 of the `node` job, coordinates
        job = group.group_label or self.job_label
        role = group.role_label or self.role_label
        rank0 = LabelSelector(((COMPLETION_INDEX, "0"), (role, NODE_JOB)))
        others = LabelSelector(
            ((role, NODE_JOB),), (Requirement(COMPLETION_INDEX, "NotIn", ("0",)),)
        )
        return Profile(self.name, job, role, (role_in(role, ["launcher"]), rank0), (others,))


def _overridden(obj: KubeObject, spec: Any) -> dict[str, Any]:
    """The scheduling fields the overrides for the `node` job set, the last one winning."""
    pod_spec: dict[str, Any] = {}
    overrides = spec.get("podTemplateOverrides", spec.get("podSpecOverrides"))
    for i, o in enumerate(as_list(overrides, "spec.podTemplateOverrides", obj)):
        om = as_map(o, f"spec.podTemplateOverrides[{i}]", obj)
        targets = [
            as_map(t, "targetJobs", obj).get("name")
            for t in as_list(om.get("targetJobs"), "targetJobs", obj)
        ]
        if targets and NODE_JOB not in targets:
            continue
        body = as_map(om.get("spec"), "spec", obj) if "spec" in om else om
        for key in _SCHEDULING:
            if key in body:
                pod_spec[key] = body[key]
    return pod_spec
