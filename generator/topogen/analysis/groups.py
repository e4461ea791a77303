"""Training groups: the workloads of one job, split into coordinator and worker roles."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from topogen.config import GroupConfig
from topogen.model import KUEUE_TAS_KEYS, Role, TrainingGroup, Workload
from topogen.operators.registry import profile_for

__all__ = ["find_groups", "is_kueue_managed"]


def is_kueue_managed(workload: Workload) -> bool:
    t = workload.template
    return any(k in t.labels or k in t.annotations for k in KUEUE_TAS_KEYS)


def find_groups(group: GroupConfig, workloads: Sequence[Workload]) -> list[TrainingGroup]:
    """Every job of this config group found among the workloads, sorted by namespace/job."""
    profile = profile_for(group)
    jobs: dict[tuple[str, str], dict[str, list[Workload]]] = defaultdict(lambda: defaultdict(list))
    for w in workloads:
        if w.namespace not in group.namespaces:
            continue
        role = profile.role_of(dict(w.template.labels))
        if role is None:
            continue
        job = w.template.labels[profile.job_label]
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
