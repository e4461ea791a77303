"""What every config group of one cluster shares in a run, computed once: ClusterIndex.

The analysis is a pure function of the cluster's inputs; what it computes once and reuses
across groups (node classes and placements, the candidate domains, the zone-pair engine
per identity label and ports, packing results of jobs of the same shape) lives here, in
an object made per cluster and run, never in the model's frozen objects.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction

from topogen.analysis.families import Engine
from topogen.analysis.nodeindex import NodeIndex
from topogen.analysis.ports import PortSet
from topogen.analysis.provisioning import PoolRoom, Provisioning
from topogen.analysis.reachability import PolicyIndex
from topogen.kueue.objects import KueueSetup
from topogen.model import NO_ZONE_PREFIX, Namespace, Node, Taint, Toleration, Topology, Workload
from topogen.nodepools import NodePool

__all__ = [
    "ClusterIndex",
    "Domains",
    "OneZoneDomains",
    "Packs",
    "candidate_domains",
    "gpu_taints",
    "tolerations_for",
]

Candidates = Sequence[tuple[str, tuple[str, ...]]]  # (domain name, its zones)
# per domain, filled when asked: (fits, what is missing, (pool, zone) of the new nodes it
# needs), domains._JobInDomains.pack
Packs = list[tuple[bool, str, tuple[tuple[str, str], ...]] | None]


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


@dataclass(frozen=True)
class Domains:
    """What depends only on a topology's candidate domains."""

    names: tuple[str, ...]
    zones: tuple[tuple[str, ...], ...]
    tolerations: tuple[tuple[Toleration, ...], ...]  # the coordinator's, per domain
    none: tuple[tuple[Toleration, ...], ...]  # the workers' (none), per domain
    nodes: tuple[tuple[Node, ...], ...]  # the nodes an autoscaler would add among them
    gpus_free: tuple[Fraction, ...]  # the GPUs of its nodes, and what autoscalers can add
    masks: tuple[int, ...]  # the domain's zones as bits over topology.zones
    gpus_now: tuple[Fraction, ...] = ()  # the GPUs of its existing nodes
    rooms: tuple[tuple[PoolRoom, ...], ...] = ()  # what each pool can add there
    scale_up: tuple[bool, ...] = ()  # whether an autoscaler could add a node there


@dataclass(frozen=True)
class OneZoneDomains:
    """Every zone as a domain of its own, pinned there tolerating every taint (the plan's
    question is traffic, not taints)."""

    names: tuple[str, ...]  # the zones (nodes without a zone label excluded)
    zones: tuple[tuple[str, ...], ...]  # each as a one-zone domain
    anywhere: tuple[tuple[Toleration, ...], ...]  # per zone: tolerate every taint


def _by_zone(topology: Topology) -> dict[str, tuple[list[int], Counter[Fraction], set[Taint]]]:
    """Per zone: its nodes' positions, how many existing nodes have each GPU count (of
    those with GPUs), and the NoSchedule and NoExecute taints of its GPU nodes."""
    gpus = topology.gpu_resources
    out: dict[str, tuple[list[int], Counter[Fraction], set[Taint]]] = {}
    for i, n in enumerate(topology.nodes):
        hit = out.get(n.zone)
        if hit is None:
            hit = out[n.zone] = ([], Counter(), set())
        hit[0].append(i)
        if n.scale_up is None:
            has = [q for g in gpus if (q := n.allocatable.get(g))]
            if has:
                hit[1][sum(has, Fraction(0)) if len(has) > 1 else has[0]] += 1
        if n.taints and topology.is_gpu_node(n):
            hit[2].update(t for t in n.taints if t.effect in ("NoSchedule", "NoExecute"))
    return out


class ClusterIndex:
    """One cluster's inputs for a run, and what its groups share (module docstring)."""

    def __init__(
        self,
        topology: Topology,
        index: PolicyIndex,
        namespaces: Mapping[str, Namespace],
        workloads: Sequence[Workload] = (),
        pools: Sequence[NodePool] = (),
        kueue: KueueSetup | None = None,
    ) -> None:
        # the nodes the autoscalers can add join the existing ones (analysis/provisioning.py)
        self.provisioning = Provisioning(
            pools, topology.zone_label, topology.gpu_resources, workloads
        )
        if pools:
            added = tuple(self.provisioning.nodes())
            topology = replace(topology, nodes=(*topology.nodes, *added))
        self.topology = topology
        self.index = index
        self.namespaces = namespaces
        self.kueue = kueue or KueueSetup()  # the cluster's Kueue objects (queued jobs)
        # every analysed pod template by namespace, and whether it comes late (created once
        # others run): what a required pod affinity term can find besides its job's members
        self.pods: dict[str, list[tuple[Mapping[str, str], bool]]] = {}
        for w in workloads:
            if w.replicas > 0:
                self.pods.setdefault(w.namespace, []).append((w.template.labels, w.late))
        self.nodes = NodeIndex(topology)
        # node label keys host-facing selectors read (for grouping similar nodes)
        self.node_keys = frozenset(index.node_label_keys())
        self.zone_bits = {z: 1 << i for i, z in enumerate(topology.zones)}
        # pack() results per job shape and domain set (see domains._JobInDomains)
        self.packs: dict[tuple[object, ...], Packs] = {}
        # per domain, how many of a job's members may land there now: by the members'
        # zones and the domain set (domains._already_eligible)
        self.eligible: dict[tuple[object, ...], tuple[int, ...]] = {}
        self._identities: dict[tuple[int, str | None], tuple[tuple[str, str] | None, ...]] = {}
        self._engines: dict[tuple[str | None, PortSet], Engine] = {}
        self._candidates: dict[tuple[bool, str | None], list[tuple[str, tuple[str, ...]]]] = {}
        self._domains: dict[tuple[tuple[str, tuple[str, ...]], ...], Domains] = {}
        self._one_zone: OneZoneDomains | None = None
        self._by_zone: dict[str, tuple[list[int], Fraction, set[Taint]]] | None = None
        self._keep: list[object] = []  # objects whose id() is part of a cache key

    def engine(self, identity_label: str | None, required: PortSet) -> Engine:
        """Zone-pair path analysis for this identity label and these ports."""
        key = (identity_label, required)
        hit = self._engines.get(key)
        if hit is None:
            hit = self._engines[key] = Engine(
                self.topology,
                self.index,
                self.namespaces,
                identity_label,
                required,
                set(self.node_keys),
            )
        return hit

    def candidates(
        self, colocate: str, domain_label: str | None
    ) -> list[tuple[str, tuple[str, ...]]]:
        """candidate_domains() of this cluster."""
        key = (colocate == "zone" or not domain_label, domain_label)
        hit = self._candidates.get(key)
        if hit is None:
            hit = self._candidates[key] = candidate_domains(self.topology, colocate, domain_label)
        return list(hit)

    def domains(self, candidates: Candidates) -> Domains:
        key = tuple(candidates)
        hit = self._domains.get(key)
        if hit is None:
            hit = self._domains[key] = self._make_domains(candidates)
        return hit

    def _zone_facts(self) -> dict[str, tuple[list[int], Fraction, set[Taint]]]:
        """Per zone: its nodes' positions, their GPUs (existing nodes), the NoSchedule and
        NoExecute taints of its GPU nodes: what every set of candidate domains sums."""
        if self._by_zone is None:
            out: dict[str, tuple[list[int], Fraction, set[Taint]]] = {}
            for zone, (positions, counts, taints) in _by_zone(self.topology).items():
                # a zone's nodes repeat a few GPU counts: each multiplied once, not added per node
                now = sum((q * k for q, k in counts.items()), Fraction(0))
                out[zone] = (positions, now, taints)
            self._by_zone = out
        return self._by_zone

    def _make_domains(self, candidates: Candidates) -> Domains:
        topology = self.topology
        zones = tuple(z for _, z in candidates)
        facts = self._zone_facts()
        empty: tuple[list[int], Fraction, set[Taint]] = ([], Fraction(0), set())
        nodes = tuple(
            tuple(
                topology.nodes[i]
                for i in sorted(i for z in set(zs) for i in facts.get(z, empty)[0])
            )
            for zs in zones
        )
        bit = self.zone_bits
        now = tuple(
            sum((facts.get(z, empty)[1] for z in dict.fromkeys(zs)), Fraction(0)) for zs in zones
        )
        rooms = tuple(self.provisioning.room(zs) for zs in zones)
        taints = tuple(sorted({t for z in set(zs) for t in facts.get(z, empty)[2]}) for zs in zones)
        return Domains(
            tuple(n for n, _ in candidates),
            zones,
            tuple(tolerations_for(ts) for ts in taints),
            tuple(() for _ in zones),
            nodes,
            tuple(
                g + sum((r.gpus for r in rs), Fraction(0)) for g, rs in zip(now, rooms, strict=True)
            ),
            tuple(sum(bit[z] for z in zs) for zs in zones),
            now,
            rooms,
            tuple(any(n.scale_up is not None for n in ns) for ns in nodes),
        )

    def identities(self, doms: Domains, label: str | None) -> tuple[tuple[str, str] | None, ...]:
        """Per domain: the identity label and value a job pinned there is stamped with (a
        one-zone domain's zone), else None. The same tuples for every job: a worker's
        results pickle each once."""
        key = (id(doms), label)
        hit = self._identities.get(key)
        if hit is None:
            self.keep(doms)
            hit = self._identities[key] = tuple(
                (label, zones[0]) if label and len(zones) == 1 else None for zones in doms.zones
            )
        return hit

    def zones_mask(self, zones: Sequence[str]) -> int:
        """The zones as bits over topology.zones."""
        bit = self.zone_bits
        return sum(bit[z] for z in zones)

    @property
    def one_zone(self) -> OneZoneDomains:
        """Every zone as a domain (the same objects on every call: a cache key)."""
        if self._one_zone is None:
            names = tuple(z for z in self.topology.zones if not z.startswith(NO_ZONE_PREFIX))
            anywhere = (Toleration("", "Exists"),)
            self._one_zone = OneZoneDomains(
                names, tuple((z,) for z in names), tuple(anywhere for _ in names)
            )
        return self._one_zone

    def keep(self, *objects: object) -> None:
        """Keep objects alive whose id() is part of a cache key here."""
        self._keep.extend(objects)
