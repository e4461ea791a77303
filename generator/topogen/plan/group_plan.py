"""What a group's plan says: the domain (or, spread, the domains and each known job's),
the tolerations, identity and co-location the admission policies add, or the refusal and
why. planner.py decides it; render and analyze read it."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from topogen.config import GroupConfig
from topogen.model import LabelSelector, Toleration
from topogen.operators.base import Profile

__all__ = ["GroupPlan", "JobDomain", "KueuePlan"]


@dataclass(frozen=True)
class KueuePlan:
    """The group's jobs that Kueue's TAS places, kept to the allowed domains by a mutation
    of the jobs themselves at creation (topogen.kueue.placement): on each template, the
    zones as required node affinity, a required topology at `level`, and one podset group
    name on a job of two PodSets."""

    zones: tuple[str, ...]  # the zones every such job of the group may use
    level: str  # the Topology level asked for (the zone label, or the domain label)
    zone_label: str  # the node label the zones are values of
    queues: tuple[tuple[str, str], ...]  # (namespace, LocalQueue) they are queued to
    kinds: tuple[tuple[str, str], ...]  # (apiVersion, kind) of those jobs
    group_name: str  # the podset-group-name
    jobs: tuple[str, ...]  # group/namespace/job of each


@dataclass(frozen=True)
class JobDomain:
    """Where one known job of a spread group goes, and why."""

    job: str  # namespace/name
    name: str  # the job label's value
    domain: str
    zones: tuple[str, ...]
    reason: str
    # queued: the known jobs it never shares its domain with, (namespace, job label,
    # value): required pod anti-affinity on the domain (the scheduler applies it both ways)
    excludes: tuple[tuple[str, str, str], ...] = ()
    gpus: str = ""  # the GPUs it needs, as a quantity
    queued: bool = False  # waits its turn (see excludes), not packed to run at once
    # against the last render (its placements file): new (not placed then, or no file),
    # kept (the same domain), moved (re-pinned: `repin` says why)
    change: str = "new"
    previous: str | None = None  # the domain the last render gave it
    repin: str = ""
    scale_up: tuple[str, ...] = ()  # the autoscalers' nodes it needs (GroupPlan.scale_up)
    running: str | None = None  # the one domain its pods run in (a snapshot's), if known


@dataclass(frozen=True)
class GroupPlan:
    cluster: str
    group: GroupConfig
    profile: Profile
    zone_label: str
    domain: str | None
    zones: tuple[str, ...]
    tolerations: tuple[Toleration, ...]
    identity: tuple[str, str] | None
    topology_key: str
    jobs: tuple[str, ...]
    kueue_jobs: tuple[str, ...]
    refused: str | None
    # (zone, zone, policies): what the validation policies carry; None where not computed
    # (`topogen analyze`: no render reads them)
    denied_zone_pairs: tuple[tuple[str, str, tuple[str, ...]], ...] | None
    note: str = ""  # e.g. the jobs fit one at a time but not all at once
    placement: str = "pin"  # the group's placement, as planned (spread | pin)
    # spread: static (the policy names each job's zone), placement (stamped at binding and
    # kept by Cilium) or none (the zone does not change the identity); topogen.plan.identity_source
    identity_source: str = "static"
    domains: tuple[tuple[str, tuple[str, ...]], ...] = ()  # spread: every domain it may use
    job_domains: tuple[JobDomain, ...] = ()  # spread: the known jobs' domains
    fallback: str = ""  # spread: what a job that appears after the render gets
    fallback_domains: tuple[str, ...] = ()  # spread: the domains such a job may use
    # per worker selector of the profile: what its co-location term adds to the job label
    # (empty: the profile's own); and the detached pods' selectors (KubeRay's submitters)
    anchors: tuple[LabelSelector, ...] = ()
    detached: tuple[LabelSelector, ...] = ()
    kueue: KueuePlan | None = None  # jobs Kueue's TAS places, constrained at creation
    job_gpus: tuple[tuple[str, str], ...] = ()  # (namespace/job, the GPUs it needs)
    previous_domain: str | None = None  # pin: the domain the last render gave the group
    repin: str = ""  # pin: why the group leaves previous_domain
    # per domain of the cluster's packing: (name, GPUs free for the known jobs, GPUs left
    # once the packed jobs run)
    room: tuple[tuple[str, Fraction, Fraction], ...] = ()
    # the autoscalers' nodes its (known) jobs need, where and up to what (empty: they fit
    # the existing nodes): `NodePool gpu in us-east-1b, up to 16 GPUs`
    scale_up: tuple[str, ...] = ()

    @property
    def renders(self) -> bool:
        """Anything to render: the pod policies, or the Kueue job policies."""
        return not self.refused and (self.enforceable or self.kueue is not None)

    @property
    def enforceable(self) -> bool:
        return self.domain is not None

    @property
    def spread(self) -> bool:
        return self.placement == "spread"

    @property
    def fallback_zones(self) -> tuple[str, ...]:
        """Spread: the zones a job that appears after the render may use (in zone order)."""
        named = dict(self.domains)
        mine = {z for d in self.fallback_domains for z in named.get(d, ())}
        return tuple(z for z in self.zones if z in mine)

    def describe_kueue_fix(self) -> str:
        k = self.kueue
        if k is None:
            return ""
        return (
            f"constrain the queued jobs' templates at creation: {k.zone_label} in "
            f"[{', '.join(k.zones)}] (required node affinity), podset-required-topology "
            f"{k.level}, podset-group-name {k.group_name} on jobs of two PodSets"
        )

    def describe_fix(self) -> str:
        if self.refused:
            return f"none: {self.refused}"
        if self.domain is None:
            return "none: no jobs of this group to plan for"
        grown = f"; fits after scale-up: {'; '.join(self.scale_up)}" if self.scale_up else ""
        if self.spread and len(self.domains) > 1:  # one domain: as pinned
            return self._describe_spread() + grown
        tols = ", ".join(_tol(t) for t in self.tolerations) or "none needed"
        ident = f", identity {self.identity[0]}={self.identity[1]}" if self.identity else ""
        # a domain of its own name's one zone is said once, not `zone-a (zone-a)`
        zones = "" if list(self.zones) == [self.domain] else f" ({', '.join(self.zones)})"
        return (
            f"confine to {self.domain}{zones}: coordinator tolerates "
            f"{tols}, node affinity {self.zone_label} in [{', '.join(self.zones)}]{ident}; "
            f"workers require pod affinity to {self._anchor_text()} on {self.topology_key}"
            f"{grown}"
        )

    def _anchor_text(self) -> str:
        anchors = sorted({str(a) for a in self.anchors if a != self.profile.coordinator[-1]})
        return (
            f"a pod of their own job ({' or '.join(anchors)})" if anchors else "their coordinator"
        )

    def _describe_spread(self) -> str:
        tols = ", ".join(_tol(t) for t in self.tolerations) or "none needed"
        names = ", ".join(n for n, _ in self.domains)
        per = (
            "each known job pinned to its assigned domain, identity label set to its zone"
            if self.identity_source == "static"
            else "each known job pinned to its assigned domain"
        )
        return (
            f"spread over {names}: coordinator tolerates {tols}; {per}; "
            f"{self.fallback}; workers require pod affinity to {self._anchor_text()} on "
            f"{self.topology_key}"
        )

    def job_placement(self) -> list[dict[str, object]]:
        """Per job: its domain or set, and why (analyze's plans[].jobPlacements)."""
        return [
            {
                "job": j.job,
                "domain": j.domain,
                "zones": list(j.zones),
                "reason": j.reason,
                "excludes": [f"{ns}/{name}" for ns, _, name in j.excludes],
                "change": j.change,
                "previousDomain": j.previous,
                "repin": j.repin or None,
                "scaleUp": list(j.scale_up),
                "runningDomain": j.running,
            }
            for j in self.job_domains
        ]


def _tol(t: Toleration) -> str:
    value = f"={t.value}" if t.value else ""
    return f"{t.key}{value}:{t.effect}" if t.effect else f"{t.key}{value}"
