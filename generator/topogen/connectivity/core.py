"""`topogen connectivity`: the allowed connections of every ordered pair of workloads.

Every verdict comes from analysis.reachability.PolicyIndex, the engine `analyze`
uses; this module only enumerates the pairs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from topogen.analysis.policychecks import policy_warnings
from topogen.analysis.ports import PortSet
from topogen.analysis.reachability import PolicyIndex
from topogen.connectivity.endpoints import LabelOverride, WorkloadEndpoint, build_endpoints
from topogen.connectivity.inputs import ConnectivityInputs
from topogen.model import PolicyRef

__all__ = ["ConnectivityReport", "Pair", "compute_connectivity"]


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
    endpoints: tuple[WorkloadEndpoint, ...]
    excluded: tuple[WorkloadEndpoint, ...]  # hostNetwork workloads (out of scope)
    pairs: tuple[Pair, ...]  # ordered by (src, dst) in endpoint order
    policies: tuple[PolicyRef, ...]
    skipped: tuple[str, ...]
    warnings: tuple[str, ...] = ()  # inert selectors, missing identities (policychecks)

    @property
    def connected(self) -> tuple[Pair, ...]:
        return tuple(p for p in self.pairs if p.connected)


def compute_connectivity(
    inputs: ConnectivityInputs, overrides: Sequence[LabelOverride] = ()
) -> ConnectivityReport:
    endpoints, excluded = build_endpoints(inputs.workloads, inputs.namespaces, overrides)
    index = PolicyIndex(inputs.policies, inputs.namespaces)
    pairs: list[Pair] = []
    for src in endpoints:
        for dst in endpoints:
            if src is dst and not src.self_pair:
                continue
            verdict = index.verdict(src.endpoint, dst.endpoint)
            pairs.append(Pair(src, dst, verdict.allowed, verdict.notes))
    pods = [(ep.workload.namespace, [k for k, _ in ep.labels]) for ep in endpoints]
    identity_labels = {h.label for h in inputs.identity_hints}
    warnings = policy_warnings(inputs.policies, pods, identity_labels, set())
    return ConnectivityReport(
        endpoints,
        excluded,
        tuple(pairs),
        inputs.policies.policies,
        inputs.skipped,
        tuple(warnings),
    )
