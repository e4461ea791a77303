"""`topogen connectivity`: the allowed connections of every ordered pair of workloads.

Every verdict comes from analysis.reachability.PolicyIndex, the engine `analyze`
uses; connectivity.matrix asks it side by side rather than pair by pair.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from topogen.analysis.policychecks import policy_warnings
from topogen.analysis.ports import PortSet
from topogen.analysis.reachability import PolicyIndex
from topogen.connectivity.endpoints import LabelOverride, WorkloadEndpoint, build_endpoints
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
    excluded: tuple[WorkloadEndpoint, ...]  # hostNetwork workloads (out of scope)
    rows: tuple[Row, ...]  # per sender, in endpoint order: receivers, allowed, notes
    policies: tuple[PolicyRef, ...]
    skipped: tuple[str, ...]
    warnings: tuple[str, ...] = ()  # inert selectors, missing identities (policychecks)
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
        return () if self.index is None else self.index.verdict(src.endpoint, dst.endpoint).notes


def compute_connectivity(
    inputs: ConnectivityInputs, overrides: Sequence[LabelOverride] = ()
) -> ConnectivityReport:
    endpoints, excluded = build_endpoints(inputs.workloads, inputs.namespaces, overrides)
    index = PolicyIndex(inputs.policies, inputs.namespaces)
    rows = pair_rows(index, [e.endpoint for e in endpoints], [e.self_pair for e in endpoints])
    pods = [(ep.workload.namespace, [k for k, _ in ep.labels]) for ep in endpoints]
    identity_labels = {h.label for h in inputs.identity_hints}
    warnings = policy_warnings(inputs.policies, pods, identity_labels, set())
    return ConnectivityReport(
        endpoints,
        excluded,
        tuple(rows),
        inputs.policies.policies,
        inputs.skipped,
        tuple(warnings),
        index,
    )
