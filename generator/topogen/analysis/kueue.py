"""Kueue in the analysis: what Kueue adds to a queued job's pods when it admits them, and
whether a job is placed by Kueue's Topology Aware Scheduling (and can be kept to the
allowed domains) or by kube-scheduler like any other (topogen.kueue has the rules)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from topogen.kueue.jobs import job_kind
from topogen.kueue.objects import KueueSetup, QueueRoute
from topogen.kueue.placement import PodSetTemplate, TasJudgement, judge_tas
from topogen.kueue.vocabulary import QUEUE_LABEL
from topogen.model import TrainingGroup, Workload

__all__ = ["KueueJob", "admitted_workloads", "kueue_job"]


@dataclass(frozen=True)
class KueueJob:
    """A job Kueue places by TAS (or may: its queue's objects are missing, or its pods
    carry Kueue's TAS marks): `judgement` when its route is known, else `unknown` says why
    topogen cannot tell."""

    route: QueueRoute | None
    judgement: TasJudgement | None = None
    unknown: str = ""


def admitted_workloads(workloads: Sequence[Workload], setup: KueueSetup) -> list[Workload]:
    """The workloads as Kueue admits their pods: a queued job's templates carry its
    flavor's nodeLabels (a nodeSelector) and tolerations (podset.Merge; a key the template
    already selects on keeps its value: Kueue then admits the job nowhere)."""
    if setup.empty:
        return list(workloads)
    out = []
    for w in workloads:
        route = setup.route(w.namespace, w.queue)
        flavor = route.flavor if route is not None else None
        if flavor is None or not (flavor.node_labels or flavor.tolerations):
            out.append(w)
            continue
        t = w.template
        tolerations = (*t.tolerations, *(x for x in flavor.tolerations if x not in t.tolerations))
        selector = {**flavor.node_labels, **t.node_selector}
        out.append(replace(w, template=replace(t, node_selector=selector, tolerations=tolerations)))
    return out


def kueue_job(job: TrainingGroup, setup: KueueSetup, zone_key: str) -> KueueJob | None:
    """None: kube-scheduler places the job (not queued, or queued to a ClusterQueue
    without TAS): an ordinary job to topogen."""
    workloads = [w for r in job.roles for w in r.workloads]
    queue = next((w.queue for w in workloads if w.queue), "")
    route = setup.route(job.namespace, queue)
    if route is None:
        if job.kueue_managed:
            return KueueJob(
                None,
                unknown="placed by Kueue Topology Aware Scheduling (its pods carry Kueue's TAS "
                f"marks), but it names no queue ({QUEUE_LABEL})",
            )
        return None
    if route.missing and (route.flavor is None or not route.tas):
        return KueueJob(
            route,
            unknown=f"queued to Kueue ({route.name}), but topogen was not given "
            f"{route.missing}: it cannot tell whether Kueue's TAS places it",
        )
    if not route.tas:
        if job.kueue_managed:  # a topology request on a flavor without one: never admitted
            return KueueJob(
                route,
                unknown=f"it asks Kueue for a topology, but its queue {route.name} has no TAS "
                f"flavor ({route.flavor.name if route.flavor else ''} names no Topology): "
                "Kueue admits it nowhere",
            )
        return None
    kinds = {(w.api_version, w.kind) for w in workloads}
    mutable = len(kinds) == 1 and job_kind(*next(iter(kinds))) is not None
    return KueueJob(route, judge_tas(route, _podsets(workloads), zone_key, mutable))


def _podsets(workloads: Sequence[Workload]) -> list[PodSetTemplate]:
    """The job's PodSets: one per pod template (topogen may split one, e.g. a master
    worker 0, into two workloads of the same template)."""
    by_site: dict[object, list[Workload]] = {}
    for w in workloads:
        by_site.setdefault(w.template_at or w.replica_name, []).append(w)
    out = []
    for ws in by_site.values():
        first = ws[0]
        name = first.replica_name.partition("-")[0] or first.kind
        out.append(PodSetTemplate(name, sum(w.replicas for w in ws), first.template.annotations))
    return sorted(out, key=lambda p: p.name)
