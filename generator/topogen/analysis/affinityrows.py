"""The zone pairs the scheduler may pick for two members that required pod affinity
links (or anti-affinity keeps apart), as bit rows: members.possible_zone_pairs over bits,
for families.Engine (which reads the node label values of the members' placements)."""

from __future__ import annotations

from collections.abc import Callable

from topogen.analysis.bits import bits

__all__ = ["Values", "linked_rows"]

# a member: its zones (bits), and the values of a node label on its nodes in a zone
Values = tuple[int, Callable[[int, str], frozenset[str]]]


def linked_rows(n: int, a: Values, b: Values, linked: list[str], anti_keys: list[str]) -> list[int]:
    """Per source zone of a (n zones), the destination zones of b the scheduler may pick:
    on every `linked` key a value in common, on every anti-affinity key none."""
    zones_a, values_a = a
    zones_b, values_b = b
    rows = [0] * n
    if not linked and not anti_keys:
        for ia in bits(zones_a):
            rows[ia] = zones_b
        return rows
    index: dict[str, dict[str, int]] = {}
    single: dict[str, dict[str, int]] = {}
    nonempty: dict[str, int] = {}
    for k in {*linked, *anti_keys}:
        by_value: dict[str, int] = {}
        one: dict[str, int] = {}
        some = 0
        for ib in bits(zones_b):
            vb = values_b(ib, k)
            for v in vb:
                by_value[v] = by_value.get(v, 0) | 1 << ib
            if len(vb) == 1:
                (v,) = vb
                one[v] = one.get(v, 0) | 1 << ib
            if vb:
                some |= 1 << ib
        index[k], single[k], nonempty[k] = by_value, one, some
    for ia in bits(zones_a):
        row = zones_b
        for k in linked:
            reach = 0
            for v in values_a(ia, k):
                reach |= index[k].get(v, 0)
            row &= reach
        for k in anti_keys:
            va = values_a(ia, k)
            if not va:
                row = 0
                continue
            row &= nonempty[k]
            if len(va) == 1:
                (v,) = va
                row &= ~single[k].get(v, 0)
        rows[ia] = row
    return rows
