"""Training-operator profiles: which pod labels name a job and its roles."""

from __future__ import annotations

from dataclasses import dataclass

from topogen.config import GroupConfig
from topogen.model import LabelSelector, Requirement

__all__ = ["KUEUE_TAS_KEYS", "Profile", "profile_for"]

KF_JOB = "training.kubeflow.org/job-name"
KF_REPLICA = "training.kubeflow.org/replica-type"
KF_ROLE = "training.kubeflow.org/job-role"
JS_NAME = "jobset.sigs.k8s.io/jobset-name"
JS_RJOB = "jobset.sigs.k8s.io/replicatedjob-name"
JS_INDEX = "jobset.sigs.k8s.io/job-index"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
VC_JOB = "volcano.sh/job-name"
VC_TASK = "volcano.sh/task-spec"
# Kueue Topology Aware Scheduling marks the pods it places (label) and the
# templates it will place (annotations); topogen never layers affinity on them.
KUEUE_TAS_KEYS = (
    "kueue.x-k8s.io/tas",
    "kueue.x-k8s.io/podset-required-topology",
    "kueue.x-k8s.io/podset-preferred-topology",
)


@dataclass(frozen=True)
class Profile:
    """How to recognise one job's pods and tell the coordinator from the workers.

    A pod plays a role when it carries the job label and matches any of that
    role's selectors (checked coordinator first). The same selectors become the
    match conditions of the generated admission policies.
    """

    name: str
    job_label: str
    role_label: str
    coordinator: tuple[LabelSelector, ...]
    worker: tuple[LabelSelector, ...]

    def coordinator_affinity(self, job: str) -> LabelSelector:
        """The selector a worker's pod affinity uses to find its job's coordinator."""
        coord = self.coordinator[-1]
        return LabelSelector(
            tuple(sorted({(self.job_label, job), *coord.match_labels})), coord.match_expressions
        )

    def role_of(self, labels: dict[str, str]) -> str | None:
        if self.job_label not in labels:
            return None
        if any(s.matches(labels) for s in self.coordinator):
            return "coordinator"
        if any(s.matches(labels) for s in self.worker):
            return "worker"
        return None


def _in(key: str, values: list[str] | tuple[str, ...]) -> Requirement:
    return Requirement(key, "In", tuple(sorted(set(values))))


def _with_case(values: list[str]) -> list[str]:
    """Kubeflow's replica-type label changed case between releases: accept both."""
    out = set(values)
    out.update(v.lower() for v in values)
    out.update(v[:1].upper() + v[1:] for v in values)
    return sorted(out)


_DEFAULTS: dict[str, tuple[str, str, list[str], list[str]]] = {
    "kubeflow-training-operator": (
        KF_JOB,
        KF_REPLICA,
        ["master", "chief", "launcher"],
        ["worker", "ps"],
    ),
    "mpi-operator": (KF_JOB, KF_ROLE, ["launcher"], ["worker"]),
    "jobset": (
        JS_NAME,
        JS_RJOB,
        ["leader", "launcher", "driver", "coordinator", "master"],
        ["worker", "workers", "node"],
    ),
    "volcano": (
        VC_JOB,
        VC_TASK,
        ["master", "launcher", "chief", "coordinator"],
        ["worker", "workers"],
    ),
    "kubeflow-trainer": (JS_NAME, JS_RJOB, ["launcher"], ["node"]),
}


def profile_for(group: GroupConfig) -> Profile:
    if group.profile == "custom":
        assert group.group_label and group.role_label  # checked by the config model
        job, role = group.group_label, group.role_label
        coord, work = list(group.coordinator_roles or ()), list(group.worker_roles or ())
    else:
        job, role, coord, work = _DEFAULTS[group.profile]
        job = group.group_label or job
        role = group.role_label or role
        coord = list(group.coordinator_roles or coord)
        work = list(group.worker_roles or work)
    if group.profile == "kubeflow-training-operator":
        coord, work = _with_case(coord), _with_case(work)
    if group.profile == "kubeflow-trainer" and group.coordinator_roles is None:
        # Trainer v2: the MPI launcher, or rank 0 of the `node` job, coordinates
        rank0 = LabelSelector(((COMPLETION_INDEX, "0"), (role, "node")))
        others = LabelSelector(((role, "node"),), (Requirement(COMPLETION_INDEX, "NotIn", ("0",)),))
        return Profile(
            group.profile,
            job,
            role,
            (LabelSelector((), (_in(role, ["launcher"]),)), rank0),
            (others,),
        )
    return Profile(
        group.profile,
        job,
        role,
        (LabelSelector((), (_in(role, coord),)),),
        (LabelSelector((), (_in(role, work),)),),
    )
