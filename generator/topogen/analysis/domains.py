"""Candidate domains for a job, checked as topogen's mutation would leave the job there."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from topogen.analysis.context import AnalysisContext
from topogen.analysis.members import Member, pin
from topogen.analysis.placement import PodDemand, pack
from topogen.model import PodAffinityTerm, Taint, Toleration, Topology
from topogen.sources.nodes import NO_ZONE_PREFIX

__all__ = ["DomainCheck", "candidate_domains", "check_domain", "gpu_taints"]


@dataclass(frozen=True)
class DomainCheck:
    name: str
    zones: tuple[str, ...]
    tolerations: tuple[Toleration, ...]
    identity: tuple[str, str] | None
    traffic_ok: bool
    capacity_ok: bool
    problems: tuple[str, ...]
    policies: tuple[str, ...]
    gpus_free: Fraction
    gpus_needed: Fraction
    already_eligible: int

    @property
    def ok(self) -> bool:
        return self.traffic_ok and self.capacity_ok


def candidate_domains(
    topology: Topology, colocate: str, domain_label: str | None
) -> list[tuple[str, tuple[str, ...]]]:
    """(name, zones): single zones, or zones grouped by the cluster's domain label."""
    zones = [z for z in topology.zones if not z.startswith(NO_ZONE_PREFIX)]
    if colocate == "zone" or not domain_label:
        return [(z, (z,)) for z in zones]
    by_domain: dict[str, set[str]] = {}
    for n in topology.nodes:
        if domain_label in n.labels and not n.zone.startswith(NO_ZONE_PREFIX):
            by_domain.setdefault(n.labels[domain_label], set()).add(n.zone)
    return [(d, tuple(sorted(zs))) for d, zs in sorted(by_domain.items())]


def gpu_taints(topology: Topology, zones: Sequence[str]) -> list[Taint]:
    wanted = set(zones)
    return sorted(
        {
            t
            for n in topology.nodes
            if n.zone in wanted and topology.is_gpu_node(n)
            for t in n.taints
            if t.effect in ("NoSchedule", "NoExecute")
        }
    )


def tolerations_for(taints: Sequence[Taint]) -> tuple[Toleration, ...]:
    return tuple(
        Toleration(t.key, "Equal" if t.value else "Exists", t.value, t.effect) for t in taints
    )


def check_domain(
    members: Sequence[Member], name: str, zones: tuple[str, ...], ctx: AnalysisContext
) -> DomainCheck:
    topo = ctx.topology
    tolerations = tolerations_for(gpu_taints(topo, zones))
    identity = (ctx.identity_label, zones[0]) if ctx.identity_label and len(zones) == 1 else None
    key = topo.zone_label if ctx.colocate == "zone" or not ctx.domain_label else ctx.domain_label
    coordinator = next((m for m in members if m.role == "coordinator"), None)
    affinity = None
    if coordinator is not None:
        job = coordinator.template.labels.get(ctx.profile.job_label, "")
        affinity = PodAffinityTerm(ctx.profile.coordinator_affinity(job), key)
    fixed = [
        pin(
            m,
            topo,
            zones,
            tolerations if m.role == "coordinator" else (),
            identity,
            affinity if m.role == "worker" else None,
        )
        for m in members
    ]
    problems: list[str] = []
    policies: set[str] = set()
    for m in fixed:
        if not m.placement.nodes:
            problems.append(f"{m.role} {m.name} cannot run in {name}: {m.placement.why_not()}")
    traffic_ok = True
    if not problems:
        blocked = ctx.blocked_paths(fixed)
        if blocked:
            traffic_ok = False
            for b in blocked[:3]:
                problems.append(b.describe())
            for b in blocked:
                policies.update(str(p) for p in b.policies)
    demands = [
        PodDemand(
            m.role, m.replicas, m.template.requests, frozenset(n.name for n in m.placement.nodes)
        )
        for m in fixed
    ]
    domain_nodes = [n for n in topo.nodes if n.zone in zones]
    fits, short = pack(demands, domain_nodes, topo.gpu_resources) if not problems else (False, "")
    if short:
        problems.append(f"{name}: {short}")
    gpus_needed = sum(
        (
            m.template.requests.get(g, Fraction(0)) * m.replicas
            for m in members
            for g in topo.gpu_resources
        ),
        Fraction(0),
    )
    gpus_free = sum(
        (n.allocatable.get(g, Fraction(0)) for n in domain_nodes for g in topo.gpu_resources),
        Fraction(0),
    )
    already = sum(1 for m in members if set(zones) & set(m.placement.zones))
    return DomainCheck(
        name,
        zones,
        tolerations,
        identity,
        traffic_ok,
        fits,
        tuple(problems),
        tuple(sorted(policies)),
        gpus_free,
        gpus_needed,
        already,
    )
