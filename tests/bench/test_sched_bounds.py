"""The fleet measure's references over time (bench/bounds.py): the makespan bound, a
relaxation, never exceeds what the idealised online gang scheduler reaches; the exact
minimum (a MIP) is what a search over every whole-job schedule finds."""

from __future__ import annotations

import itertools
import random
import sys
from collections.abc import Mapping, Sequence

import pytest

from tooling import REPO

sys.path.insert(0, str(REPO / "bench"))
import bounds
import schedbench as sb
import schedfleet as sf
import schedrun as sr


def test_whole_jobs_queue_first_come_first_served_with_backfill() -> None:
    # two 8-GPU jobs in one 8-GPU domain run one after the other; a 2-GPU job arriving
    # later backfills the other domain at once
    jobs = [(0.0, 1.0, 8, ("a",)), (0.0, 1.0, 8, ("a",)), (0.5, 1.0, 2, ("a", "b"))]
    assert bounds.fifo_makespan(jobs, {"a": 8, "b": 2}) == 2.0
    assert bounds.makespan_bound(jobs, {"a": 8, "b": 2}) == 2.0
    # a job no domain can hold never runs
    assert bounds.fifo_makespan([(0.0, 1.0, 9, ("a",))], {"a": 8}) == float("inf")


@pytest.mark.parametrize("spec", sb.TIMED, ids=[s.name for s in sb.TIMED])
def test_the_bound_never_exceeds_the_online_gang_schedule(spec: sf.SchedSpec) -> None:
    sc = sf.generate(spec)
    assert sr.makespan_bound(sc) <= sr.fifo_makespan(sc) + 1e-9


def _earliest(
    at: float, d: float, g: int, cap: int, placed: list[tuple[float, float, int]]
) -> float:
    """The first start at or after `at` where g more GPUs fit beside `placed` for d."""
    for t in sorted({at, *(e for _, e, _ in placed if e > at)}):
        edges = [t, *(s for s, _, _ in placed if t < s < t + d)]
        if all(g + sum(q for s, e, q in placed if s <= x < e) <= cap for x in edges):
            return t
    raise AssertionError("never fits")


def _brute_force(jobs: Sequence[bounds.TimedJob], cap: Mapping[str, int]) -> float:
    """Every order and every choice of domain, each job at its earliest start (the
    schedules so built include a minimum-makespan one: they are the active schedules)."""
    best = float("inf")
    for order in itertools.permutations(range(len(jobs))):
        for doms in itertools.product(*(jobs[j][3] for j in order)):
            placed: dict[str, list[tuple[float, float, int]]] = {d: [] for d in cap}
            end = 0.0
            for j, dom in zip(order, doms, strict=True):
                a, d, g, _ = jobs[j]
                s = _earliest(a, d, g, cap[dom], placed[dom])
                placed[dom].append((s, s + d, g))
                end = max(end, s + d)
            best = min(best, end)
    return best


@pytest.mark.parametrize("seed", range(12))
def test_the_exact_makespan_is_the_least_over_every_whole_job_schedule(seed: int) -> None:
    pytest.importorskip("highspy")
    rng = random.Random(seed)
    cap = {"a": rng.choice((4, 6, 8)), "b": rng.choice((2, 4))}
    jobs = []
    for _ in range(rng.choice((3, 4, 5))):
        g = rng.randint(1, cap["a"])
        doms = ("a", "b") if g <= cap["b"] and rng.random() < 0.7 else ("a",)
        jobs.append((round(rng.uniform(0, 3), 3), round(rng.uniform(1, 5), 3), g, doms))
    got = bounds.min_makespan(jobs, cap)
    want = _brute_force(jobs, cap)
    assert got.bound <= want + 1e-9  # a lower bound, always
    assert got.exact
    assert got.bound == pytest.approx(want, abs=2e-3)
    assert bounds.makespan_bound(jobs, cap) <= got.bound + 1e-9


def test_the_exact_makespan_beats_the_relaxation_where_it_is_loose() -> None:
    pytest.importorskip("highspy")
    # a 5-GPU and a 4-GPU job in an 8-GPU domain cannot overlap: the relaxation spreads
    # their work over all 8 GPUs (two 4-GPU jobs could fill them)
    jobs = [(0.0, 2.0, 5, ("a",)), (0.0, 2.0, 4, ("a",))]
    assert bounds.makespan_bound(jobs, {"a": 8}) == pytest.approx(2.25)
    got = bounds.min_makespan(jobs, {"a": 8})
    assert (got.exact, got.how) == (True, "MIP")
    assert got.bound == pytest.approx(4.0, abs=2e-3)
