"""What the analysis of one config group in one cluster needs, and the path check."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from topogen.analysis.members import Member, possible_zone_pairs
from topogen.analysis.ports import PortSet
from topogen.analysis.reachability import PolicyIndex
from topogen.config import GroupConfig
from topogen.model import Namespace, PolicyRef, Topology
from topogen.sources.profiles import Profile, profile_for

__all__ = ["AnalysisContext", "BlockedPath", "required_ports"]


def required_ports(group: GroupConfig) -> PortSet:
    """The ports the group talks on; default every TCP port (NCCL, Gloo, MPI use TCP)."""
    if not group.ports:
        return PortSet.of({"TCP": [(1, 65535)]})
    m: dict[str, list[tuple[int, int]]] = {}
    for p in group.ports:
        text = str(p)
        port, _, proto = text.partition("/")
        lo, _, hi = port.partition("-")
        m.setdefault(proto or "TCP", []).append((int(lo), int(hi or lo)))
    return PortSet.of(m)


@dataclass(frozen=True)
class BlockedPath:
    src_role: str
    dst_role: str
    src_zone: str
    dst_zone: str
    reasons: tuple[str, ...]
    policies: tuple[PolicyRef, ...]

    def describe(self) -> str:
        return (
            f"{self.src_role} ({self.src_zone}) -> {self.dst_role} ({self.dst_zone}): "
            + "; ".join(self.reasons)
        )


@dataclass
class AnalysisContext:
    topology: Topology
    index: PolicyIndex
    namespaces: Mapping[str, Namespace]
    group: GroupConfig
    domain_label: str | None = None
    required: PortSet = field(default_factory=PortSet)
    node_keys: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        if self.required.empty:
            self.required = required_ports(self.group)
        self.node_keys = self.index.node_label_keys()

    @property
    def identity_label(self) -> str | None:
        return self.group.identity_label

    @property
    def colocate(self) -> str:
        return self.group.colocate

    @property
    def profile(self) -> Profile:
        return profile_for(self.group)

    def blocked_paths(self, members: Sequence[Member]) -> list[BlockedPath]:
        """Every path the scheduler's possible placements leave denied."""
        pairs = possible_zone_pairs(members, self.topology)
        out: list[BlockedPath] = []
        for (i, j), zone_pairs in sorted(pairs.items()):
            a, b = members[i], members[j]
            for za, zb in zone_pairs:
                blocked = self.check_path(a, za, b, zb)
                if blocked is not None:
                    out.append(blocked)
        return out

    def cross_zone_pairs(self, members: Sequence[Member]) -> list[tuple[str, str, str, str]]:
        """(src role, dst role, src zone, dst zone) placements that are allowed but split."""
        pairs = possible_zone_pairs(members, self.topology)
        out = []
        for (i, j), zone_pairs in sorted(pairs.items()):
            a, b = members[i], members[j]
            for za, zb in zone_pairs:
                if za != zb and self.check_path(a, za, b, zb) is None:
                    out.append((a.role, b.role, za, zb))
        return out

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
