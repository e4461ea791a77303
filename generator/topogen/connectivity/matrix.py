"""Every ordered pair's allowed ports at once, from PolicyIndex, without a loop over pairs.

A pair loop asks PolicyIndex.verdict N*N times; on 5,000 workloads that is 25 million
questions, most of them answered "nothing" or "everything". Here each side is worked
out per endpoint against all the others at once, as bitmasks over endpoint positions:

- which endpoints each distinct peer matches (PolicyIndex.peer_matches, once per peer
  and endpoint);
- per endpoint and direction, the others split into groups on which exactly the same
  (rule, first matching peer) pairs match, each group with the trace PolicyIndex gives
  that side (PolicyIndex.side_trace; egress split further by the destination's ports
  when a matched rule names a port);
- the pairs: every receiver's non-empty ingress groups, for the senders whose egress
  allows everything to everyone with no note (PolicyIndex.side_open); the other
  senders through their own egress groups, intersected with the receiver's side.

The answers, allowed ports and notes, are verdict()'s, pair for pair
(tests/connectivity/test_conn_matrix.py).
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import TypeAlias

from topogen.analysis.ports import PortSet
from topogen.analysis.reachability import PolicyIndex, SideTrace, may_match_namespace
from topogen.model import Endpoint, Peer, PolicyRule

__all__ = ["Row", "pair_rows"]

# one sender: receiver positions (ascending), what each allows, and each pair's notes
# (what Cilium enforces there beyond L3/L4: PathVerdict.notes)
Row: TypeAlias = "tuple[array[int], list[PortSet], list[tuple[str, ...]]]"
_Groups: TypeAlias = list[tuple[int, tuple[tuple[PolicyRule, Peer], ...]]]


def _bits(mask: int) -> list[int]:
    """Positions of the set bits, ascending."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


class _Table:
    def __init__(self, index: PolicyIndex, endpoints: Sequence[Endpoint]) -> None:
        if any(ep.host for ep in endpoints):
            raise ValueError("pair_rows takes pod endpoints only")
        self.index = index
        self.eps = endpoints
        self.everyone = (1 << len(endpoints)) - 1
        self._masks: dict[object, int] = {}
        self._ports: dict[tuple[tuple[str, int, str], ...], int] = {}
        self._by_ns: dict[str, list[int]] = {}
        for i, ep in enumerate(endpoints):
            self._ports[ep.ports] = self._ports.get(ep.ports, 0) | 1 << i
            self._by_ns.setdefault(ep.namespace, []).append(i)

    def peer_mask(self, peer: Peer) -> int:
        """The positions `peer` matches (for pods it never depends on the rule's subject)."""
        key = (peer.kind, peer.selector, peer.entities)
        hit = self._masks.get(key)
        if hit is None:
            hit = 0
            for ns, positions in self._by_ns.items():
                if not may_match_namespace(peer, ns):
                    continue
                for i in positions:
                    ep = self.eps[i]
                    if self.index.peer_matches(peer, ep):
                        hit |= 1 << i
            self._masks[key] = hit
        return hit

    def groups(self, subject: Endpoint, direction: str) -> _Groups:
        """The others split by the (rule, first matching peer) pairs that match them."""
        _, rules = self.index.subject_rules(subject, direction)
        groups: _Groups = [(self.everyone, ())]
        for rule in rules:
            split: _Groups = []
            for mask, matched in groups:
                rest = mask
                for p in rule.peers:
                    hits = self.peer_mask(p) & rest
                    if hits:
                        split.append((hits, (*matched, (rule, p))))
                        rest &= ~hits
                        if not rest:
                            break
                if rest:
                    split.append((rest, matched))
            groups = split
        return groups

    def ingress(self, d: int) -> list[tuple[int, SideTrace]]:
        """Receiver `d`'s side: (sender positions, trace), non-empty allowed only."""
        dst = self.eps[d]
        out = []
        for mask, matched in self.groups(dst, "ingress"):
            trace = self.index.side_trace(dst, "ingress", matched, dst)
            if not trace.allowed.empty:
                out.append((mask, trace))
        return out

    def egress(self, s: int) -> list[tuple[int, SideTrace]]:
        """Sender `s`'s side: (receiver positions, trace), non-empty allowed only."""
        src = self.eps[s]
        out = []
        for mask, matched in self.groups(src, "egress"):
            named = any(r.name for rule, _ in matched for r in rule.ports or ())
            classes = self._ports.values() if named else [mask]
            for members in classes:
                part = mask & members
                if not part:
                    continue
                dst = self.eps[(part & -part).bit_length() - 1] if named else src
                trace = self.index.side_trace(src, "egress", matched, dst)
                if not trace.allowed.empty:
                    out.append((part, trace))
        return out

    def open_senders(self) -> int:
        """Senders whose egress allows everything to everyone, with no note."""
        mask = 0
        for i, ep in enumerate(self.eps):
            if self.index.side_open(ep, "egress"):
                mask |= 1 << i
        return mask


def _notes(egress: SideTrace, ingress: SideTrace) -> tuple[str, ...]:
    """PathVerdict.notes of a path with these two sides."""
    if not egress.notes:
        return ingress.notes
    return tuple(sorted({*egress.notes, *ingress.notes}))


def pair_rows(
    index: PolicyIndex, endpoints: Sequence[Endpoint], self_pairs: Sequence[bool]
) -> list[Row]:
    """Per sender (endpoint order): the receivers it may reach, what is allowed, notes.

    A sender is paired with itself only where self_pairs says so.
    """
    table = _Table(index, endpoints)
    n = len(endpoints)
    open_mask = table.open_senders()
    ingress = [table.ingress(d) for d in range(n)]
    rows: list[Row] = [(array("I"), [], []) for _ in range(n)]
    for d, groups in enumerate(ingress):
        for mask, trace in groups:
            for s in _bits(mask & open_mask):
                if s != d or self_pairs[d]:
                    rows[s][0].append(d)
                    rows[s][1].append(trace.allowed)
                    rows[s][2].append(trace.notes)
    meets: dict[tuple[int, int], tuple[PortSet, tuple[str, ...]]] = {}
    for s in _bits(table.everyone & ~open_mask):
        found: list[tuple[int, PortSet, tuple[str, ...]]] = []
        for mask, out in table.egress(s):
            for d in _bits(mask):
                if s == d and not self_pairs[d]:
                    continue
                inn = next((t for m, t in ingress[d] if m >> s & 1), None)
                if inn is None:
                    continue
                key = (id(out), id(inn))
                both = meets.get(key)
                if both is None:
                    both = meets[key] = (out.allowed.intersect(inn.allowed), _notes(out, inn))
                if not both[0].empty:
                    found.append((d, *both))
        found.sort(key=lambda x: x[0])
        rows[s] = (array("I", (d for d, _, _ in found)), [f[1] for f in found],
                   [f[2] for f in found])  # fmt: skip
    return rows
