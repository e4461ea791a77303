"""topogen's verdicts against Cilium's, scenario by scenario, pair by pair, port by port.

topogen reads each scenario from files through `topogen connectivity`'s own
loading (a topogen.yaml with the scenario's clusters[].cilium settings), and
every verdict comes from the engine `analyze` uses (PolicyIndex): the path
`connectivity` reports, and each side of it (the sender's egress, the
receiver's ingress) as `explain` shows it. The oracle answers the same
objects with Cilium's engine. A policy Cilium rejects must be rejected by
topogen too (an InputError), and then nothing else is compared.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import oracle
from scenarios import Scenario, oracle_scenario, write_topogen_inputs

from topogen.analysis.ports import PortSet
from topogen.analysis.reachability import PolicyIndex, host_endpoint
from topogen.connectivity import ConnectivityReport, InputSpec, compute_connectivity, load_inputs
from topogen.errors import InputError

__all__ = ["Mismatch", "Outcome", "compare", "run_differential"]


@dataclass(frozen=True)
class Mismatch:
    scenario: str
    what: str  # "egress w0->w1 TCP/80: topogen A, cilium D", ...

    def __str__(self) -> str:
        return f"{self.scenario}: {self.what}"


@dataclass
class Outcome:
    scenarios: int = 0
    pairs: int = 0
    port_checks: int = 0
    rejected: int = 0  # scenarios Cilium (and topogen) rejected a policy of
    mismatches: list[Mismatch] = field(default_factory=list)


def _letters(ports: PortSet, probes: Sequence[tuple[str, int]]) -> str:
    """ "A"/"D" per probe: whether the set holds that protocol and port."""
    ranges = ports.as_dict()
    return "".join(
        "A" if any(lo <= n <= hi for lo, hi in ranges.get(proto, ())) else "D"
        for proto, n in probes
    )


def _diff(
    sc: str, what: str, mine: str, theirs: str, probes: Sequence[tuple[str, int]]
) -> list[Mismatch]:
    out = []
    for (proto, n), a, b in zip(probes, mine, theirs, strict=True):
        if a != b:
            out.append(Mismatch(sc, f"{what} {proto}/{n}: topogen {a}, cilium {b}"))
    return out


def compare(sc: Scenario, folder: Path, answer: oracle.OracleResult, out: Outcome) -> None:
    """Add the scenario's pairs and mismatches to `out`."""
    out.scenarios += 1
    probes = sc.probes()
    config = write_topogen_inputs(sc, folder)
    rejected = answer.rejected()
    try:
        inputs = load_inputs(InputSpec(config=str(config)))
    except InputError as exc:
        if rejected:
            out.rejected += 1
            return
        out.mismatches.append(Mismatch(sc.name, f"topogen rejected the input: {exc}"))
        return
    if rejected:
        names = ", ".join(f"{k[0]} {k[1]}/{k[2]}: {e}" for k, e in sorted(rejected.items()))
        out.mismatches.append(Mismatch(sc.name, f"cilium rejected {names}; topogen accepted it"))
        return
    report = compute_connectivity(inputs)
    index = PolicyIndex(inputs.policies, inputs.namespaces)
    listed = {(p.src.id, p.dst.id) for p in report.pairs}
    expected = {
        (a.id, b.id) for a in sc.workloads for b in sc.workloads if a is not b or a.replicas > 1
    }
    if listed != expected:
        out.mismatches.append(
            Mismatch(sc.name, f"connectivity lists pairs {sorted(listed ^ expected)} wrongly")
        )
    for ep in report.endpoints:
        mine = sorted(f"k8s:{k}={v}" for k, v in index.identity(ep.endpoint).labels.items())
        theirs = sorted(lbl for lbl in answer.identities[ep.id] if not lbl.startswith("gen:"))
        if mine != theirs:
            out.mismatches.append(
                Mismatch(sc.name, f"identity of {ep.id}: topogen {mine}, cilium {theirs}")
            )
    for pair in report.pairs:
        key = (pair.src.id, pair.dst.id)
        egress, ingress = answer.verdicts[key]
        path = "".join("A" if e == i == "A" else "D" for e, i in zip(egress, ingress, strict=True))
        verdict = index.verdict(pair.src.endpoint, pair.dst.endpoint)
        name = f"{key[0]}->{key[1]}"
        out.pairs += 1
        out.port_checks += len(probes)
        out.mismatches += _diff(
            sc.name, f"path {name}", _letters(pair.allowed, probes), path, probes
        )
        out.mismatches += _diff(
            sc.name, f"egress {name}", _letters(verdict.egress.allowed, probes), egress, probes
        )
        out.mismatches += _diff(
            sc.name, f"ingress {name}", _letters(verdict.ingress.allowed, probes), ingress, probes
        )
    _compare_hosts(sc, report, index, answer, probes, out)


def _compare_hosts(
    sc: Scenario,
    report: ConnectivityReport,
    index: PolicyIndex,
    answer: oracle.OracleResult,
    probes: Sequence[tuple[str, int]],
    out: Outcome,
) -> None:
    """Paths with a node's host endpoint at one end or both (the engine analyze uses for
    hostNetwork pods): host to another host, pod to host, host to pod. A host to itself
    is loopback traffic, which no Cilium program sees (topogen allows it whatever the
    engine would say), so it is not compared."""
    hosts = {f"host/{n}": host_endpoint(n, labels) for n, labels in sc.nodes.items()}
    pods = {ep.id: ep.endpoint for ep in report.endpoints}
    for a, src in {**hosts, **pods}.items():
        for b, dst in hosts.items() if a in pods else {**hosts, **pods}.items():
            if a == b:
                continue
            verdict = index.verdict(src, dst)
            egress, ingress = answer.verdicts[(a, b)]
            out.pairs += 1
            out.port_checks += len(probes)
            name = f"{a}->{b}"
            out.mismatches += _diff(
                sc.name, f"egress {name}", _letters(verdict.egress.allowed, probes), egress, probes
            )
            out.mismatches += _diff(
                sc.name,
                f"ingress {name}",
                _letters(verdict.ingress.allowed, probes),
                ingress,
                probes,
            )


def run_differential(scenarios: Iterable[Scenario], workdir: Path) -> Outcome:
    batch = list(scenarios)
    answers = oracle.run([oracle_scenario(s) for s in batch])
    out = Outcome()
    for sc, answer in zip(batch, answers, strict=True):
        compare(sc, workdir / sc.name, answer, out)
    return out
