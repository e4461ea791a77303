"""Bit rows: sets of zone indices as ints, and matrices over zones as lists of them."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

__all__ = ["bits", "transpose"]


def bits(mask: int) -> Iterator[int]:
    """Positions of the set bits, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


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
