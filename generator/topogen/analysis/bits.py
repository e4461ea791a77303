"""Bit rows: sets of zone indices as ints, and matrices over zones as lists of them."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["bits", "transpose"]

# mask -> its set bits: a fleet asks for a few hundred distinct masks half a million times
# (zone rows, matrices' rows and columns), so each is listed once; bounded, past which a
# mask is listed on every call
_LISTED: dict[int, tuple[int, ...]] = {}
_MOST_LISTED = 1 << 16


def bits(mask: int) -> tuple[int, ...]:
    """Positions of the set bits of a mask (at least 0), lowest first."""
    hit = _LISTED.get(mask)
    if hit is None:
        out = []
        rest = mask
        while rest:
            low = rest & -rest
            out.append(low.bit_length() - 1)
            rest ^= low
        hit = tuple(out)
        if len(_LISTED) < _MOST_LISTED:
            _LISTED[mask] = hit
    return hit


def transpose(rows: Sequence[int], n: int) -> list[int]:
    """Columns of a bit matrix (iterating the sparser of the matrix and its complement)."""
    full = (1 << n) - 1
    ones = sum(r.bit_count() for r in rows)
    flip = ones * 2 > n * n
    out = [0] * n
    for i, r in enumerate(rows):
        bit = 1 << i
        for j in bits((full & ~r) if flip else r):
            out[j] |= bit
    if flip:
        out = [full & ~c for c in out]
    return out
