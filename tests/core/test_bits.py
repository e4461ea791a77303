"""analysis/bits.py: a mask's set bits (listed once per mask, within a bound) and the
transpose of a bit matrix."""

from __future__ import annotations

import random

import pytest

from topogen.analysis import bits as bits_module
from topogen.analysis.bits import bits, transpose


def _positions(mask: int) -> tuple[int, ...]:
    return tuple(i for i in range(mask.bit_length()) if mask >> i & 1)


@pytest.mark.parametrize("mask", [0, 1, 2, 5, 1 << 59, (1 << 60) - 1, 0b1011 << 100])
def test_bits_lists_the_set_positions_lowest_first(mask: int) -> None:
    assert bits(mask) == _positions(mask)
    assert bits(mask) == _positions(mask)  # a second call: the listed tuple, same answer


def test_bits_past_the_bound_still_answers_and_keeps_no_more(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bits_module, "_LISTED", {})
    monkeypatch.setattr(bits_module, "_MOST_LISTED", 4)
    rng = random.Random(7)
    masks = [rng.getrandbits(64) for _ in range(50)]
    for m in masks:
        assert bits(m) == _positions(m)
    assert len(bits_module._LISTED) == 4
    for m in masks:  # the listed ones and the others alike
        assert bits(m) == _positions(m)


def test_transpose_is_the_columns() -> None:
    rng = random.Random(3)
    for n in (1, 3, 17, 60):
        for density in (0.1, 0.5, 0.9):  # sparse, and the complement iterated when dense
            rows = [sum(1 << j for j in range(n) if rng.random() < density) for _ in range(n)]
            cols = transpose(rows, n)
            for i in range(n):
                for j in range(n):
                    assert (rows[i] >> j & 1) == (cols[j] >> i & 1)
            assert transpose(cols, n) == rows
