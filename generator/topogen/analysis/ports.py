"""Sets of (protocol, port) as sorted disjoint intervals."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from topogen.model import PortRange

__all__ = ["PROTOCOLS", "PortSet"]

PROTOCOLS = ("TCP", "UDP", "SCTP")
_Intervals = tuple[tuple[int, int], ...]


def _normalise(intervals: Iterable[tuple[int, int]]) -> _Intervals:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(intervals):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return tuple(out)


@dataclass(frozen=True)
class PortSet:
    by_protocol: tuple[tuple[str, _Intervals], ...] = ()

    @classmethod
    def of(cls, mapping: Mapping[str, Iterable[tuple[int, int]]]) -> PortSet:
        items = []
        for proto in PROTOCOLS:
            ivs = _normalise(mapping.get(proto, ()))
            if ivs:
                items.append((proto, ivs))
        return cls(tuple(items))

    @classmethod
    def everything(cls) -> PortSet:
        if cls is PortSet:
            return _EVERYTHING
        return cls.of({p: [(1, 65535)] for p in PROTOCOLS})

    @classmethod
    def from_ranges(
        cls, ranges: Iterable[PortRange], named: Mapping[tuple[str, str], int] | None = None
    ) -> PortSet:
        """Ranges to a set; named ports resolve through `named` ((name, proto) -> port)."""
        m: dict[str, list[tuple[int, int]]] = {}
        for r in ranges:
            if r.name:
                port = (named or {}).get((r.name, r.protocol))
                if port is None:
                    continue  # a named port the destination does not expose allows nothing
                m.setdefault(r.protocol, []).append((port, port))
            else:
                m.setdefault(r.protocol, []).append((r.first, r.last))
        return cls.of(m)

    def as_dict(self) -> dict[str, _Intervals]:
        return dict(self.by_protocol)

    @property
    def empty(self) -> bool:
        return not self.by_protocol

    def union(self, other: PortSet) -> PortSet:
        a, b = self.as_dict(), other.as_dict()
        return PortSet.of({p: [*a.get(p, ()), *b.get(p, ())] for p in PROTOCOLS})

    def intersect(self, other: PortSet) -> PortSet:
        a, b = self.as_dict(), other.as_dict()
        out: dict[str, list[tuple[int, int]]] = {}
        for proto in PROTOCOLS:
            for lo1, hi1 in a.get(proto, ()):
                for lo2, hi2 in b.get(proto, ()):
                    lo, hi = max(lo1, lo2), min(hi1, hi2)
                    if lo <= hi:
                        out.setdefault(proto, []).append((lo, hi))
        return PortSet.of(out)

    def minus(self, other: PortSet) -> PortSet:
        a, b = self.as_dict(), other.as_dict()
        out: dict[str, list[tuple[int, int]]] = {}
        for proto in PROTOCOLS:
            pieces = list(a.get(proto, ()))
            for lo2, hi2 in b.get(proto, ()):
                nxt = []
                for lo1, hi1 in pieces:
                    if hi2 < lo1 or lo2 > hi1:
                        nxt.append((lo1, hi1))
                        continue
                    if lo1 < lo2:
                        nxt.append((lo1, lo2 - 1))
                    if hi2 < hi1:
                        nxt.append((hi2 + 1, hi1))
                pieces = nxt
            if pieces:
                out[proto] = pieces
        return PortSet.of(out)

    def covers(self, other: PortSet) -> bool:
        return other.minus(self).empty

    def is_everything(self) -> bool:
        return self == PortSet.everything()

    def describe(self) -> list[str]:
        """["all"] or ["TCP/80", "TCP/8000-8080", "UDP/*"]."""
        if self.is_everything():
            return ["all"]
        out = []
        for proto, ivs in self.by_protocol:
            for lo, hi in ivs:
                if lo == 1 and hi == 65535:
                    out.append(f"{proto}/*")
                elif lo == hi:
                    out.append(f"{proto}/{lo}")
                else:
                    out.append(f"{proto}/{lo}-{hi}")
        return out

    def __str__(self) -> str:
        return ", ".join(self.describe()) or "nothing"


_EVERYTHING = PortSet.of({p: [(1, 65535)] for p in PROTOCOLS})
