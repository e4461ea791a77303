"""The seeded differential as a test: a block of scenarios, every mismatch listed."""

from __future__ import annotations

from pathlib import Path

from differential import Outcome, run_differential
from scenarios import generate

__all__ = ["check_block"]


def check_block(first: int, count: int, workdir: Path) -> Outcome:
    """Scenarios first..first+count-1 against the oracle: 100% agreement, pair by pair and
    port by port, or the test fails naming the first mismatches."""
    out = run_differential((generate(s) for s in range(first, first + count)), workdir)
    shown = "\n".join(str(m) for m in out.mismatches[:40])
    assert not out.mismatches, f"{len(out.mismatches)} mismatches:\n{shown}"
    # the block has to exercise something: pairs, ports, and rejections both ways
    assert out.scenarios == count
    assert out.pairs > 20 * count and out.port_checks > 1500 * count
    assert 0 < out.rejected < count // 5
    return out
