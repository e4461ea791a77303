"""`topogen explain`: one path's verdict and the trace behind it, port by port.

The verdict is PolicyIndex.verdict (the engine `analyze` uses); this module only
breaks it down: for each stretch of ports, what the sender's egress and the
receiver's ingress say and because of which rule.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from topogen.analysis.ports import PROTOCOLS, PortSet
from topogen.analysis.reachability import PathVerdict, PolicyIndex, SideTrace
from topogen.connectivity.endpoints import (
    HOST_NETWORK_RULE,
    LabelOverride,
    WorkloadEndpoint,
    build_endpoints,
    resolve,
    unstamped,
)
from topogen.connectivity.inputs import ConnectivityInputs, IdentityHint
from topogen.errors import InputError
from topogen.model import Isolation, PolicyRule

__all__ = [
    "Explanation",
    "PortVerdict",
    "SideStatus",
    "explain_path",
    "isolation_name",
    "parse_port",
    "rule_name",
]

OPEN, ALLOWED, DENIED, DEFAULT_DENY = "open", "allowed", "denied", "default-deny"
_PORT = re.compile(r"^(?P<port>[A-Za-z0-9-]+)(?:/(?P<proto>[A-Za-z]+))?$")
_NUMBERS = re.compile(r"^(\d{1,5})(?:-(\d{1,5}))?$")


def rule_name(rule: PolicyRule) -> str:
    """`cnp ns/name rule 0 egress[1]` (Cilium: rule = position in specs) or `netpol ns/name ingress[0]`."""
    where = f"{rule.section}[{rule.item}]"
    if rule.policy.kind == "NetworkPolicy":
        return f"{rule.policy} {where}"
    return f"{rule.policy} rule {rule.index} {where}"


def isolation_name(iso: Isolation) -> str:
    if iso.policy.kind == "NetworkPolicy":
        return str(iso.policy)
    return f"{iso.policy} rule {iso.index}"


@dataclass(frozen=True)
class SideStatus:
    """What one end says about some ports: open (not isolated), allowed, denied, default-deny."""

    state: str
    by: tuple[str, ...]  # the rules (allow or deny) or the isolating rules (default deny)

    @property
    def ok(self) -> bool:
        return self.state in (OPEN, ALLOWED)

    def describe(self) -> str:
        if self.state == OPEN:
            return "open (not isolated)"
        if self.state == DEFAULT_DENY:
            return f"default deny (isolated by {', '.join(self.by)})"
        return f"{self.state} by {', '.join(self.by)}"


@dataclass(frozen=True)
class PortVerdict:
    ports: PortSet
    egress: SideStatus
    ingress: SideStatus

    @property
    def allowed(self) -> bool:
        return self.egress.ok and self.ingress.ok


@dataclass(frozen=True)
class Explanation:
    src: WorkloadEndpoint
    dst: WorkloadEndpoint
    verdict: PathVerdict
    requested: PortSet | None  # --port, resolved
    requested_text: str
    ports: tuple[PortVerdict, ...]  # every port (or the requested ones), grouped by verdict
    notes: tuple[str, ...]

    @property
    def allowed(self) -> bool:
        """The requested ports are all allowed; without --port, anything is."""
        if self.requested is not None:
            return self.verdict.allowed.covers(self.requested)
        return not self.verdict.allowed.empty

    def denials(self) -> tuple[str, ...]:
        """Why the denied ports are denied: one line per end and reason, stable order."""
        out: list[str] = []
        for pv in self.ports:
            for who, side in (("sender egress", pv.egress), ("receiver ingress", pv.ingress)):
                line = f"{who}: {side.describe()}"
                if not side.ok and line not in out:
                    out.append(line)
        return tuple(out)


def explain_path(
    inputs: ConnectivityInputs,
    src_ref: str,
    dst_ref: str,
    port: str | None = None,
    overrides: Sequence[LabelOverride] = (),
) -> Explanation:
    endpoints, excluded = build_endpoints(inputs.workloads, inputs.namespaces, overrides)
    src = _pick(src_ref, endpoints, excluded, "--from")
    dst = _pick(dst_ref, endpoints, excluded, "--to")
    peer = dst.peer_of_itself() if src is dst else dst.endpoint
    verdict = PolicyIndex(inputs.policies, inputs.namespaces).verdict(src.endpoint, peer)
    requested = parse_port(port, dst) if port else None
    return Explanation(
        src=src,
        dst=dst,
        verdict=verdict,
        requested=requested,
        requested_text=port or "",
        ports=port_verdicts(verdict, requested),
        notes=_notes(inputs.identity_hints, (src, dst)) + _host_notes(src, dst) + verdict.notes,
    )


def _host_notes(*eps: WorkloadEndpoint) -> tuple[str, ...]:
    hosts = sorted({e.id for e in eps if e.host_network})
    if not hosts:
        return ()
    verb = "uses" if len(hosts) == 1 else "use"
    return (f"{' and '.join(hosts)} {verb} hostNetwork, listed as its node: {HOST_NETWORK_RULE}",)


def _pick(
    ref: str,
    endpoints: Sequence[WorkloadEndpoint],
    excluded: Sequence[WorkloadEndpoint],
    what: str,
) -> WorkloadEndpoint:
    return resolve(ref, (*endpoints, *excluded), what=what)


def parse_port(text: str, dst: WorkloadEndpoint) -> PortSet:
    """`80`, `80/TCP`, `8000-8080/UDP`, or a named port of the destination (`http/TCP`)."""
    m = _PORT.match(text.strip())
    proto = (m.group("proto") or "TCP").upper() if m else ""
    if m is None or proto not in PROTOCOLS:
        raise InputError(
            f"--port {text!r} is not PORT/PROTOCOL",
            hint="e.g. 8080/TCP, 8000-8100/UDP or a named port like http/TCP",
        )
    spec = m.group("port")
    nums = _NUMBERS.match(spec)
    if nums:
        lo = int(nums.group(1))
        hi = int(nums.group(2) or lo)
        if not 1 <= lo <= hi <= 65535:
            raise InputError(f"--port {text!r}: ports run from 1 to 65535, low to high")
        return PortSet.of({proto: [(lo, hi)]})
    named = {(n, p.upper()): num for n, num, p in dst.workload.template.ports if n}
    if (spec, proto) not in named:
        have = ", ".join(f"{n}/{p}" for n, p in sorted(named)) or "none"
        raise InputError(
            f"--port {text!r}: {dst.id} exposes no port named {spec}/{proto}",
            hint=f"its named ports: {have}",
        )
    number = named[(spec, proto)]
    return PortSet.of({proto: [(number, number)]})


# --- port by port ------------------------------------------------------------------


def _contains(ports: PortSet, proto: str, port: int) -> bool:
    return any(lo <= port <= hi for lo, hi in ports.as_dict().get(proto, ()))


def side_status(side: SideTrace, proto: str, port: int) -> SideStatus:
    denies = [d for d in side.denies if _contains(d.ports, proto, port)]
    if denies:
        return SideStatus(DENIED, tuple(dict.fromkeys(rule_name(d.rule) for d in denies)))
    if not side.isolated:
        return SideStatus(OPEN, ())
    allows = [a for a in side.allows if _contains(a.ports, proto, port)]
    if allows:
        return SideStatus(ALLOWED, tuple(dict.fromkeys(rule_name(a.rule) for a in allows)))
    isolators = [isolation_name(i) for i in side.isolations] or [str(p) for p in side.isolated_by]
    if side.always:
        isolators.append("policy-enforcement=always")
    return SideStatus(DEFAULT_DENY, tuple(dict.fromkeys(isolators)))


def _cuts(sets: Iterable[PortSet], proto: str) -> list[int]:
    cuts = {1, 65536}
    for s in sets:
        for lo, hi in s.as_dict().get(proto, ()):
            cuts.update((lo, hi + 1))
    return sorted(cuts)


def port_verdicts(verdict: PathVerdict, requested: PortSet | None) -> tuple[PortVerdict, ...]:
    """Every port (or the requested ones) grouped by what both ends say about it."""
    sides = (verdict.egress, verdict.ingress)
    sets = [m.ports for side in sides for m in (*side.allows, *side.denies)]
    if requested is not None:
        sets.append(requested)
    groups: dict[tuple[SideStatus, SideStatus], dict[str, list[tuple[int, int]]]] = {}
    for proto in PROTOCOLS:
        cuts = _cuts(sets, proto)
        for lo, nxt in itertools.pairwise(cuts):
            key = (side_status(sides[0], proto, lo), side_status(sides[1], proto, lo))
            groups.setdefault(key, {}).setdefault(proto, []).append((lo, nxt - 1))
    out: list[PortVerdict] = []
    for (egress, ingress), ranges in groups.items():
        ports = PortSet.of(ranges)
        if requested is not None:
            ports = ports.intersect(requested)
        if not ports.empty:
            out.append(PortVerdict(ports, egress, ingress))
    return tuple(sorted(out, key=lambda pv: _first(pv.ports)))


def _first(ports: PortSet) -> tuple[int, int]:
    proto, ivs = ports.by_protocol[0]
    return (PROTOCOLS.index(proto), ivs[0][0])


def _notes(hints: Sequence[IdentityHint], eps: Sequence[WorkloadEndpoint]) -> tuple[str, ...]:
    return tuple(
        f"{ep} sets no {label} label: topogen.yaml names it the identity label, stamped from "
        f"the node at binding; pass --label {ep}={label}=VALUE to explain a placement"
        for ep, label in unstamped(hints, eps)
    )
