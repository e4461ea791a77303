"""Can Kueue's Topology Aware Scheduling be kept to the allowed domains for one job, by
topogen's mutation of the job's templates at creation? What Kueue v0.17.0 did with such
templates on its real controller (tests/live/test_live_kueue.py) decides each rule:

- TAS honours a template's required node affinity only on a Topology whose lowest level
  is kubernetes.io/hostname (on [zone] alone it admitted into the zone the affinity
  excludes, and the pods stayed Pending);
- `podset-required-topology: <zone level>` keeps each PodSet in one zone; a preferred
  topology, or a required one wider than the zone, may spread it over several;
- Master and Worker are separate PodSets, placed apart (split across the allowed zones)
  unless both carry one `podset-group-name`; Kueue groups exactly two PodSets, one of
  them of one pod, judged by the other's template; it refuses a group name beside
  podset-unconstrained-topology or a slice topology.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from topogen.kueue.objects import QueueRoute
from topogen.kueue.vocabulary import (
    HOSTNAME,
    PREFERRED_TOPOLOGY,
    REQUIRED_TOPOLOGY,
    SLICE_REQUIRED_TOPOLOGY,
    SLICE_SIZE,
    UNCONSTRAINED_TOPOLOGY,
)

__all__ = ["PodSetTemplate", "TasJudgement", "judge_tas"]


@dataclass(frozen=True)
class PodSetTemplate:
    """One PodSet of the job: its template's place, its pods, its annotations."""

    name: str  # the replica type or ReplicatedJob
    count: int
    annotations: Mapping[str, str]


@dataclass(frozen=True)
class TasJudgement:
    """`reason` is empty when topogen's job mutation keeps TAS in the allowed domains;
    else why it cannot, with the fix."""

    route: QueueRoute
    level: str  # the Topology level the mutation asks for (the zone key)
    reason: str = ""
    grouped: bool = False  # the mutation gives the job's two PodSets one podset-group-name

    @property
    def constrainable(self) -> bool:
        return not self.reason


def judge_tas(
    route: QueueRoute, podsets: Sequence[PodSetTemplate], zone_key: str, mutable: bool
) -> TasJudgement:
    """`route`: a TAS route (route.tas); `mutable`: topogen's mutation reaches the kind."""
    topo = route.topology
    if topo is None:
        return TasJudgement(
            route,
            zone_key,
            f"its ResourceFlavor {route.flavor.name if route.flavor else '?'} names Topology "
            f"{route.flavor.topology if route.flavor else '?'}, which topogen was not given: "
            "add it to the inputs",
        )
    if topo.levels[-1] != HOSTNAME:
        return TasJudgement(
            route,
            zone_key,
            f"Topology {topo.name} ({', '.join(topo.levels)}) does not end in {HOSTNAME}, and "
            "TAS honours node affinity only when it does: add kubernetes.io/hostname as the "
            f"lowest level of Topology {topo.name}",
        )
    if zone_key not in topo.levels:
        return TasJudgement(
            route,
            zone_key,
            f"Topology {topo.name} has no level {zone_key}: add it above {HOSTNAME}",
        )
    if not mutable:
        return TasJudgement(route, zone_key, "topogen cannot mutate this kind's templates yet")
    zone_at = topo.levels.index(zone_key)
    for ps in podsets:
        problem = _template_problem(ps, topo.name, topo.levels, zone_at, len(podsets))
        if problem:
            return TasJudgement(route, zone_key, problem)
    if len(podsets) > 2:
        names = ", ".join(p.name for p in podsets)
        return TasJudgement(
            route,
            zone_key,
            f"its {len(podsets)} PodSets ({names}) may land in different allowed zones: Kueue "
            "keeps two PodSets together at most (podset-group-name)",
        )
    if len(podsets) == 2 and min(p.count for p in podsets) != 1:
        return TasJudgement(
            route,
            zone_key,
            "its two PodSets may land in different allowed zones: Kueue groups two PodSets "
            "only when one of them is a single pod",
        )
    return TasJudgement(route, zone_key, grouped=len(podsets) == 2)


def _template_problem(
    ps: PodSetTemplate, topology: str, levels: Sequence[str], zone_at: int, podsets: int
) -> str:
    a, what = ps.annotations, f"PodSet {ps.name}"
    if SLICE_REQUIRED_TOPOLOGY in a or SLICE_SIZE in a:
        return f"{what} asks a slice topology, which Kueue does not group with another PodSet"
    if PREFERRED_TOPOLOGY in a:
        return (
            f"{what} asks podset-preferred-topology, which lets TAS spread it over several "
            f"zones: ask podset-required-topology {levels[zone_at]} (or narrower)"
        )
    if UNCONSTRAINED_TOPOLOGY in a:
        if podsets == 1:
            return f"{what} asks podset-unconstrained-topology: TAS may spread it over zones"
        return f"{what} asks podset-unconstrained-topology, which Kueue refuses to group"
    level = a.get(REQUIRED_TOPOLOGY)
    if level is None:
        return ""
    if level not in levels:
        return (
            f"{what} asks podset-required-topology {level}, which Topology {topology} lacks: "
            "Kueue never admits it"
        )
    if levels.index(level) < zone_at:
        return (
            f"{what} asks podset-required-topology {level}, wider than {levels[zone_at]}: TAS "
            f"may spread it over zones; ask {levels[zone_at]} or narrower"
        )
    return ""
