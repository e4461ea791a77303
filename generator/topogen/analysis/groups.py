"""Training groups: the workloads of one job, split into coordinator and worker roles."""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Mapping, Sequence

from topogen.config import GroupConfig
from topogen.errors import InputError
from topogen.kueue.vocabulary import is_tas_pod
from topogen.model import Role, TrainingGroup, Workload
from topogen.operators.registry import operator, operator_for, profile_for

__all__ = [
    "ByNamespace",
    "check_profiles",
    "find_all_groups",
    "find_groups",
    "group_selector",
    "is_kueue_managed",
    "left_out",
]


def is_kueue_managed(workload: Workload) -> bool:
    """Its pods are marked for Kueue's TAS (gate, topology annotation, or the old label)."""
    t = workload.template
    return is_tas_pod(t.labels, t.annotations, t.scheduling_gates)


def group_selector(group: GroupConfig) -> str:
    """The pods a group selects, in words (for the line that says it matched none)."""
    profile = profile_for(group)
    roles = ""
    if group.profile == "custom":
        values = ", ".join([*(group.coordinator_roles or ()), *(group.worker_roles or ())])
        roles = f" with {profile.role_label} in ({values})"
    spaces = ", ".join(group.namespaces)
    return (
        f"pods labelled {profile.job_label}{roles} (profile {group.profile}) in namespace(s) "
        f"{spaces}"
    )


class ByNamespace:
    """Workloads looked up by namespace, each namespace's in their order: a group reads
    only its namespaces' (a fleet has a hundred groups over thousands of workloads)."""

    def __init__(self, workloads: Sequence[Workload]) -> None:
        self.workloads = workloads
        self._at: dict[str, list[int]] = defaultdict(list)
        for i, w in enumerate(workloads):
            self._at[w.namespace].append(i)

    def of(self, namespaces: Sequence[str]) -> list[Workload]:
        """The workloads of these namespaces, in the order of all of them."""
        runs = [self._at[ns] for ns in dict.fromkeys(namespaces) if ns in self._at]
        positions = runs[0] if len(runs) == 1 else heapq.merge(*runs)
        return [self.workloads[i] for i in positions]


def left_out(group: GroupConfig, workloads: ByNamespace) -> list[str]:
    """A custom group's pods that carry its group label but neither role's value: read as
    no member, so said (a typo in coordinatorRoles/workerRoles hides a whole role)."""
    if group.profile != "custom":
        return []
    profile = profile_for(group)
    out = []
    for w in workloads.of(group.namespaces):
        labels = w.template.labels
        if profile.job_label not in labels or profile.role_of(labels) is not None:
            continue
        value = labels.get(profile.role_label)
        role = f"{profile.role_label}={value}" if value is not None else f"no {profile.role_label}"
        out.append(
            f"group {group.name}: {w.ref} carries {profile.job_label} but {role}, neither "
            "of its coordinatorRoles nor of its workerRoles: it is no member of the group"
        )
    return out


def find_groups(group: GroupConfig, workloads: Sequence[Workload]) -> list[TrainingGroup]:
    """Every job of this config group found among the workloads, sorted by namespace/job."""
    profile = profile_for(group)
    jobs: dict[tuple[str, str], dict[str, list[Workload]]] = defaultdict(lambda: defaultdict(list))
    # a detached pod (KubeRay's submitter) finds its job among its namespace's jobs
    others: dict[str, list[Mapping[str, str]]] = defaultdict(list)
    if profile.detached_label:
        for w in workloads:
            if profile.job_label in w.template.labels:
                others[w.namespace].append(w.template.labels)
    for w in workloads:
        if w.namespace not in group.namespaces:
            continue
        labels = w.template.labels
        role = profile.role_of(labels)
        if role is None:
            continue
        job = profile.job_of(labels, others[w.namespace])
        if job is None:
            continue
        jobs[(w.namespace, job)][role].append(w)
    out = []
    for (namespace, job), roles in sorted(jobs.items()):
        built = []
        for role_name in ("coordinator", "worker"):
            members = sorted(
                roles.get(role_name, ()), key=lambda w: (w.kind, w.name, w.replica_name)
            )
            if members:
                value = members[0].template.labels.get(profile.role_label, role_name)
                built.append(Role(role_name, value, tuple(members)))
        kueue = any(is_kueue_managed(w) for ws in roles.values() for w in ws)
        out.append(TrainingGroup(group.name, job, namespace, tuple(built), kueue))
    return out


def find_all_groups(
    groups: Sequence[GroupConfig], workloads: ByNamespace
) -> list[list[TrainingGroup]]:
    """find_groups for each config group, each reading only its namespaces' workloads
    (in their order: a job's workloads are all of one namespace)."""
    return [find_groups(g, workloads.of(g.namespaces)) for g in groups]


def check_profiles(
    groups: Sequence[GroupConfig],
    workloads: ByNamespace,
    found: Sequence[Sequence[TrainingGroup]],
) -> None:
    """A group's profile must fit the operators' objects in its namespaces.

    An object read by another operator is an error when the group would take its pods
    for its own (they carry its job label) or finds no job at all (the group names the
    wrong operator), unless a group of the object's own profile covers its namespace.
    """
    covered = {(g.profile, ns) for g in groups for ns in g.namespaces}
    for group, jobs in zip(groups, found, strict=True):
        if group.profile == "custom":
            continue
        job_label = profile_for(group).job_label
        for w in workloads.of(group.namespaces):
            op = operator_for(w.api_version, w.kind)
            if op is None or op.name in ("custom", group.profile):
                continue
            if (op.name, w.namespace) in covered:
                continue
            if jobs and job_label not in w.template.labels:
                continue
            mine = operator(group.profile)
            raise InputError(
                f"{w.kind} {w.namespace}/{w.name} ({w.api_version}) is an object of the "
                f"{op.title} (profile {op.name}), but group {group.name}, which covers "
                f"namespace {w.namespace}, has profile {group.profile} (the {mine.title})",
                path=w.source,
                hint=f"give it a group of profile {op.name}",
            )
