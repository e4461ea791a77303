"""The fleet measure's references over time (bench/packing.py): the makespan bound, a
relaxation, never exceeds what the idealised online gang scheduler reaches."""

from __future__ import annotations

import sys

import pytest

from tooling import REPO

sys.path.insert(0, str(REPO / "bench"))
import packing
import schedbench as sb
import schedfleet as sf
import schedrun as sr


def test_whole_jobs_queue_first_come_first_served_with_backfill() -> None:
    # two 8-GPU jobs in one 8-GPU domain run one after the other; a 2-GPU job arriving
    # later backfills the other domain at once
    jobs = [(0.0, 1.0, 8, ("a",)), (0.0, 1.0, 8, ("a",)), (0.5, 1.0, 2, ("a", "b"))]
    assert packing.fifo_makespan(jobs, {"a": 8, "b": 2}) == 2.0
    assert packing.makespan_bound(jobs, {"a": 8, "b": 2}) == 2.0
    # a job no domain can hold never runs
    assert packing.fifo_makespan([(0.0, 1.0, 9, ("a",))], {"a": 8}) == float("inf")


@pytest.mark.parametrize("spec", sb.TIMED, ids=[s.name for s in sb.TIMED])
def test_the_bound_never_exceeds_the_online_gang_schedule(spec: sf.SchedSpec) -> None:
    sc = sf.generate(spec)
    assert sr.makespan_bound(sc) <= sr.fifo_makespan(sc) + 1e-9
