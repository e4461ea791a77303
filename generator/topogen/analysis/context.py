"""What the analysis of one config group in one cluster needs, and the path check."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from topogen.analysis.cluster import ClusterIndex
from topogen.analysis.families import Engine, Family, Side
from topogen.analysis.members import Member
from topogen.analysis.paths import BlockedPath
from topogen.analysis.ports import PortSet
from topogen.analysis.reachability import PolicyIndex
from topogen.analysis.zonepaths import JobPaths
from topogen.config import GroupConfig
from topogen.model import Namespace, Topology
from topogen.operators.base import Profile
from topogen.operators.registry import profile_for

__all__ = ["AnalysisContext", "required_ports"]


def required_ports(group: GroupConfig) -> PortSet:
    """The ports the group talks on; default every TCP port (NCCL, Gloo, MPI use TCP)."""
    return PortSet.of(group.port_ranges() or {"TCP": [(1, 65535)]})


@dataclass
class AnalysisContext:
    """One config group in one cluster: the cluster's shared index, and the group's own
    ports, profile and engine (made when first needed)."""

    cluster: ClusterIndex
    group: GroupConfig
    domain_label: str | None = None
    required: PortSet = field(default_factory=PortSet)
    node_keys: set[str] = field(default_factory=set)
    _engine: Engine | None = field(default=None, init=False, repr=False, compare=False)
    _profile: Profile | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.required.empty:
            self.required = required_ports(self.group)
        self.node_keys = set(self.cluster.node_keys)

    @property
    def topology(self) -> Topology:
        return self.cluster.topology

    @property
    def index(self) -> PolicyIndex:
        return self.cluster.index

    @property
    def namespaces(self) -> Mapping[str, Namespace]:
        return self.cluster.namespaces

    @property
    def identity_label(self) -> str | None:
        return self.group.identity_label

    @property
    def colocate(self) -> str:
        return self.group.colocate

    @property
    def domain_key(self) -> str:
        """The node label a domain is a value of: the zone label, or the domain label."""
        if self.colocate == "zone" or not self.domain_label:
            return self.topology.zone_label
        return self.domain_label

    @property
    def profile(self) -> Profile:
        if self._profile is None:
            self._profile = profile_for(self.group)
        return self._profile

    @property
    def engine(self) -> Engine:
        """Zone-pair path analysis shared by every group of the cluster with these ports."""
        if self._engine is None:
            self._engine = self.cluster.engine(self.identity_label, self.required)
        return self._engine

    def family(self, m: Member) -> Family:
        """The member's network identity in every zone (Member.endpoints, interned)."""
        t = m.template
        if t.host_network:
            return self.engine.host_family(m.placement, t.ports)
        kind, _ = m.identity(self.identity_label)
        return self.engine.pod_family(
            t.labels, m.workload.namespace, t.ports, kind == "stamped", t.service_account
        )

    def side(self, m: Member, family: Family | None = None) -> Side:
        eng = self.engine
        return Side(
            m.role,
            m.replicas,
            eng.zones_mask(m.placement.zones),
            family or self.family(m),
            m.placement,
            m.workload.namespace,
            m.template.labels,
            m.template.pod_affinity,
        )

    def job_paths(self, members: Sequence[Member]) -> JobPaths:
        """Blocked and split zone pairs of these members (placed on at least one node each)."""
        return JobPaths(self.engine, [self.side(m) for m in members])

    def blocked_paths(self, members: Sequence[Member]) -> list[BlockedPath]:
        """Every path the scheduler's possible placements leave denied."""
        return list(self.job_paths(members).blocked())

    def cross_zone_pairs(self, members: Sequence[Member]) -> list[tuple[str, str, str, str]]:
        """(src role, dst role, src zone, dst zone) placements that are allowed but split."""
        return self.job_paths(members).split()

    def check_path(self, a: Member, za: str, b: Member, zb: str) -> BlockedPath | None:
        for src in a.endpoints(
            za, self.identity_label, self.index, self.namespaces, self.node_keys
        ):
            for dst in b.endpoints(
                zb, self.identity_label, self.index, self.namespaces, self.node_keys
            ):
                verdict = self.index.verdict(src, dst)
                if not verdict.permits(self.required):
                    return BlockedPath(
                        a.role,
                        b.role,
                        za,
                        zb,
                        tuple(verdict.blockers(self.required)),
                        tuple(verdict.blocking_policies(self.required)),
                    )
        return None
