"""`topogen connectivity`: the allowed connections of every ordered pair of workloads.

Every verdict comes from analysis.reachability.PolicyIndex, the engine `analyze`
uses; connectivity.matrix asks it side by side rather than pair by pair.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from topogen.analysis.policychecks import policy_warnings
from topogen.analysis.ports import PortSet
from topogen.analysis.reachability import PolicyIndex
from topogen.connectivity.endpoints import (
    LabelOverride,
    WorkloadEndpoint,
    build_endpoints,
    unstamped,
)
from topogen.connectivity.inputs import ConnectivityInputs
from topogen.connectivity.matrix import Row, pair_rows
from topogen.model import PolicyRef

__all__ = ["ConnectivityReport", "Pair", "compute_connectivity"]

_NOTHING = PortSet()


@dataclass(frozen=True)
class Pair:
    """From a pod of `src` to a pod of `dst` (src == dst: between two pods of one workload)."""

    src: WorkloadEndpoint
    dst: WorkloadEndpoint
    allowed: PortSet
    notes: tuple[str, ...] = ()  # what Cilium enforces here beyond L3/L4

    @property
    def connected(self) -> bool:
        return not self.allowed.empty


@dataclass(frozen=True)
class ConnectivityReport:
    """Every ordered pair of `endpoints` (a workload with itself when it has more than one
    pod); only the connected pairs are held (`rows`), the others allow nothing."""

    endpoints: tuple[WorkloadEndpoint, ...]
    excluded: tuple[WorkloadEndpoint, ...]  # none: hostNetwork ones are endpoints too
    rows: tuple[Row, ...]  # per sender, in endpoint order: receivers, allowed, notes
    policies: tuple[PolicyRef, ...]
    skipped: tuple[str, ...]
    warnings: tuple[str, ...] = ()  # inert selectors, missing identities (policychecks)
    # workloads whose identity label is stamped at binding: judged here without it
    unstamped: tuple[tuple[str, str], ...] = ()
    # the engine, for the notes of pairs that allow nothing (only `pairs` asks it)
    index: PolicyIndex | None = field(default=None, compare=False, repr=False)

    @property
    def pair_count(self) -> int:
        n = len(self.endpoints)
        return n * n - sum(1 for e in self.endpoints if not e.self_pair)

    @property
    def connected_count(self) -> int:
        return sum(len(dsts) for dsts, _, _ in self.rows)

    def connected_ports(self) -> Iterator[tuple[WorkloadEndpoint, WorkloadEndpoint, PortSet]]:
        """(sender, receiver, allowed) of every connected pair, in (src, dst) order."""
        eps = self.endpoints
        for src, (dsts, allowed, _) in zip(eps, self.rows, strict=True):
            for d, ports in zip(dsts, allowed, strict=True):
                yield src, eps[d], ports

    @property
    def connected(self) -> Iterator[Pair]:
        """The connected pairs, in (src, dst) order."""
        eps = self.endpoints
        for src, (dsts, allowed, notes) in zip(eps, self.rows, strict=True):
            for d, ports, why in zip(dsts, allowed, notes, strict=True):
                yield Pair(src, eps[d], ports, why)

    @property
    def pairs(self) -> Iterator[Pair]:
        """Every ordered pair, in (src, dst) order, connected or not."""
        eps = self.endpoints
        for src, (dsts, allowed, notes) in zip(eps, self.rows, strict=True):
            found = {d: i for i, d in enumerate(dsts)}
            for d, dst in enumerate(eps):
                if dst is src and not src.self_pair:
                    continue
                i = found.get(d)
                if i is not None:
                    yield Pair(src, dst, allowed[i], notes[i])
                else:
                    yield Pair(src, dst, _NOTHING, self._notes(src, dst))

    def _notes(self, src: WorkloadEndpoint, dst: WorkloadEndpoint) -> tuple[str, ...]:
        if self.index is None:
            return ()
        peer = dst.peer_of_itself() if src is dst else dst.endpoint
        return self.index.verdict(src.endpoint, peer).notes

    @property
    def host_network(self) -> tuple[WorkloadEndpoint, ...]:
        """The endpoints listed as their node (HOST_NETWORK_RULE)."""
        return tuple(e for e in self.endpoints if e.host_network)


def compute_connectivity(
    inputs: ConnectivityInputs, overrides: Sequence[LabelOverride] = ()
) -> ConnectivityReport:
    endpoints, excluded = build_endpoints(inputs.workloads, inputs.namespaces, overrides)
    index = PolicyIndex(inputs.policies, inputs.namespaces)
    rows = _rows(index, endpoints)
    pods = [
        (ep.workload.namespace, [k for k, _ in ep.labels])
        for ep in endpoints
        if not ep.host_network
    ]
    identity_labels = {h.label for h in inputs.identity_hints}
    warnings = policy_warnings(inputs.policies, pods, identity_labels, set())
    return ConnectivityReport(
        endpoints,
        excluded,
        tuple(rows),
        inputs.policies.policies,
        inputs.skipped,
        tuple(warnings),
        tuple(unstamped(inputs.identity_hints, endpoints)),
        index,
    )


def _rows(index: PolicyIndex, endpoints: Sequence[WorkloadEndpoint]) -> list[Row]:
    """pair_rows over the pod endpoints; the pairs with a hostNetwork side (listed as
    their node, which pair_rows does not take) asked of PolicyIndex.verdict one by one."""
    pods = [i for i, e in enumerate(endpoints) if not e.host_network]
    sub = pair_rows(
        index, [endpoints[i].endpoint for i in pods], [endpoints[i].self_pair for i in pods]
    )
    rows: list[Row] = [(array("I"), [], []) for _ in endpoints]
    for k, (dsts, allowed, notes) in zip(pods, sub, strict=True):
        rows[k] = (array("I", (pods[d] for d in dsts)), allowed, notes)
    hosts = {i for i, e in enumerate(endpoints) if e.host_network}
    if not hosts:
        return rows
    for s, src in enumerate(endpoints):
        found = list(zip(rows[s][0], rows[s][1], rows[s][2], strict=True))
        for d, dst in enumerate(endpoints):
            if (s not in hosts and d not in hosts) or (s == d and not src.self_pair):
                continue
            peer = dst.peer_of_itself() if s == d else dst.endpoint
            verdict = index.verdict(src.endpoint, peer)
            if not verdict.allowed.empty:
                found.append((d, verdict.allowed, verdict.notes))
        found.sort(key=lambda f: f[0])
        rows[s] = (array("I", (f[0] for f in found)), [f[1] for f in found],
                   [f[2] for f in found])  # fmt: skip
    return rows
