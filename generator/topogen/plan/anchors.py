"""What a group's workers co-locate with, and which of its pods no job label names.

A worker's required pod affinity must name a pod that exists when the worker is
scheduled, or it stays Pending: the profile's anchor (the coordinator, a rank-0 worker)
where every job has one, else the job's members (the term matches the worker itself, so
the first of them may go anywhere). Detached pods (KubeRay's submitters) carry no job
label: they are matched by their own label's values and pinned like the coordinator.
"""

from __future__ import annotations

from collections.abc import Sequence

from topogen.analysis.findings import JobAnalysis
from topogen.model import LabelSelector
from topogen.operators.profile import Profile

__all__ = ["detached_selectors", "worker_anchors"]


def worker_anchors(
    profile: Profile, jobs: Sequence[JobAnalysis]
) -> tuple[tuple[LabelSelector, ...], str]:
    """What each worker selector's co-location term adds to the job labels: the profile's
    anchors, unless in some job a worker's term would name no pod that exists when it is
    scheduled (the pod itself counts); then the job's members, which every worker is."""
    anchors = tuple(a for _, a in profile.worker_anchors)
    for j in jobs:
        for m in j.members:
            if m.role != "worker":
                continue
            term = profile.anchor_selector(m.template.labels)
            if any(term.matches(n.template.labels) for n in j.members if not n.workload.late):
                continue
            members = profile.members or LabelSelector()
            note = (
                f"group {j.job.config_group}: in job {j.job.namespace}/{j.job.job} no pod "
                f"that exists when {m.name} is scheduled matches its co-location term "
                f"({term}): every worker follows the members of its own job instead"
            )
            return tuple(members for _ in profile.worker), note
    return anchors, ""


def detached_selectors(profile: Profile, jobs: Sequence[JobAnalysis]) -> tuple[LabelSelector, ...]:
    """The selector of the jobs' detached pods (KubeRay's submitters), by their names."""
    if not profile.detached_label:
        return ()
    names = {
        m.template.labels[profile.detached_label]
        for j in jobs
        for m in j.members
        if profile.job_label not in m.template.labels
        and profile.detached_label in m.template.labels
    }
    return (profile.detached_selector(sorted(names)),) if names else ()
